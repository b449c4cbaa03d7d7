"""Queued work is claimed bank by bank in turn (migration 016, operation_claim): one bank's
backlog does not hold up another bank's work, a bank's own work keeps its order, work whose
worker died goes first, and work whose bank lost its turn is not stranded. On the real
PostgreSQL, with the statements the server runs to queue and to claim."""

from __future__ import annotations

import json
from datetime import timedelta

import asyncpg
import pytest

from hindsight.db.sql import Q
from hindsight.engine.queue.operations import enqueue_operation

from conftest import migrated_database

TYPES = ["retain"]
OTHERS = ["extract"]  # what the claiming worker does not run


async def _queue(conn, bank: str, n: int, type_: str = "retain") -> None:
    """As retain and imports do: one transaction each, so each is queued at its own time."""
    for i in range(1, n + 1):
        async with conn.transaction():
            await enqueue_operation(conn, bank, type_, {"n": i}, max_attempts=5)


async def _fill(conn) -> None:
    await conn.execute("INSERT INTO banks (id) SELECT unnest(ARRAY['a', 'b', 'c', 'd', 'e'])")
    await _queue(conn, "a", 200)  # a backlog
    await _queue(conn, "c", 3)
    await _queue(conn, "b", 1)
    # d: work retrying later, and work of a type this worker does not run
    await _queue(conn, "d", 1, "extract")
    await conn.execute("UPDATE operations SET run_after = now() + interval '1 hour' WHERE bank_id = 'd'")
    await _queue(conn, "d", 1)
    await conn.execute("UPDATE operations SET run_after = now() + interval '1 hour' WHERE bank_id = 'd'")


@pytest.fixture(scope="module")
def claim_db(pg_url):
    return migrated_database(pg_url, "claim_order", _fill)


async def _claim(conn, limit: int, worker: str = "test-worker") -> list[tuple[str, int]]:
    rows = await conn.fetch(Q.operation_claim, worker, limit, 30.0, TYPES, OTHERS)
    return sorted((r["bank_id"], json.loads(r["payload"])["n"]) for r in rows)


async def _turns(conn) -> dict[str, str]:
    return {r["bank_id"]: r["turn_at"] for r in await conn.fetch("SELECT bank_id, turn_at FROM bank_turns")}


async def test_banks_take_turns_and_each_keeps_its_order(claim_db):
    conn = await asyncpg.connect(claim_db)
    try:
        order = [(await _claim(conn, 1))[0] for _ in range(10)]
        # every bank's first before any bank's second, the bank served longest ago first
        assert order == [
            ("a", 1),
            ("c", 1),
            ("b", 1),
            ("a", 2),
            ("c", 2),
            ("a", 3),
            ("c", 3),
            ("a", 4),
            ("a", 5),
            ("a", 6),
        ], order
        # b and c have nothing queued: they left the turns; d keeps its turn for its later work
        assert set(await _turns(conn)) == {"a", "d"}
        # two at a time; d's work is not due, or not this worker's
        assert await _claim(conn, 2, worker="dead-worker") == [("a", 7), ("a", 8)]
        # that worker died holding two of a's: its work goes first, to another worker
        await conn.execute(
            "UPDATE operations SET lease_until = now() - interval '1 second'"
            " WHERE bank_id = 'a' AND (payload->>'n')::int IN (7, 8)"
        )
        async with conn.transaction():
            await enqueue_operation(conn, "b", "retain", {"n": 2}, max_attempts=5)
        # ...never back to the worker that holds it: one alive still runs it, its heartbeat held up
        # (a database that stopped committing, say)
        held_up = conn.transaction()
        await held_up.start()
        assert await _claim(conn, 2, worker="dead-worker") == [("a", 9), ("b", 2)]
        await held_up.rollback()
        assert await _claim(conn, 2) == [("a", 7), ("a", 8)]
        # b queued again: it has a turn, and is served before a's ninth
        assert await _claim(conn, 2) == [("a", 9), ("b", 2)]
        assert await conn.fetchval("SELECT count(*) FROM operations WHERE status = 'queued' AND bank_id = 'a'") == 191
    finally:
        await conn.close()


async def test_work_whose_bank_lost_its_turn_is_not_stranded(claim_db):
    """A bank found idle just as it queued more loses its turn; its work still competes, as if
    its turn came a minute after it was queued."""
    conn = await asyncpg.connect(claim_db)
    try:
        await conn.execute("UPDATE operations SET status = 'cancelled' WHERE bank_id = 'e'")
        async with conn.transaction():
            await enqueue_operation(conn, "e", "retain", {"n": 1}, max_attempts=5)
        await conn.execute("DELETE FROM bank_turns WHERE bank_id = 'e'")  # the race, forced
        claimed = [x for _ in range(3) for x in await _claim(conn, 1)]
        assert ("e", 1) not in claimed  # queued just now: a's turns come first
        await conn.execute("UPDATE operations SET created_at = now() - interval '2 minutes' WHERE bank_id = 'e'")
        assert await _claim(conn, 1) == [("e", 1)]
    finally:
        await conn.close()


async def _fill_waiting(conn) -> None:
    """70 banks whose work retries in an hour (a rate limit), then y's backlog, then x's one."""
    await conn.execute("INSERT INTO banks (id) SELECT 'w' || g FROM generate_series(1, 70) g")
    await conn.execute("INSERT INTO banks (id) VALUES ('x'), ('y')")
    for g in range(1, 71):
        await _queue(conn, f"w{g}", 1)
    await conn.execute("UPDATE operations SET run_after = now() + interval '1 hour'")
    await _queue(conn, "y", 30)
    await _queue(conn, "x", 1)


@pytest.fixture(scope="module")
def waiting_db(pg_url):
    return migrated_database(pg_url, "claim_order_waiting", _fill_waiting)


async def test_banks_with_nothing_due_do_not_hold_the_first_turns(waiting_db):
    """More banks than the claim reads turns of have work retrying later: they wait behind the
    banks with work to do, until their work is due, instead of keeping x behind y's backlog."""
    conn = await asyncpg.connect(waiting_db)
    try:
        claimed = [x for _ in range(4) for x in await _claim(conn, 1)]
        assert ("x", 1) in claimed, claimed
        turns = await _turns(conn)
        waiting = await conn.fetchval("SELECT min(run_after) FROM operations WHERE bank_id LIKE 'w%'")
        assert min(turns[f"w{g}"] for g in range(1, 71)) >= waiting - timedelta(seconds=1)
        # an hour and more later: their work is due, and their turns (when it came due) are
        # earlier than y's, served just now
        await conn.execute("UPDATE operations SET run_after = run_after - interval '2 hours' WHERE bank_id LIKE 'w%'")
        await conn.execute("UPDATE bank_turns SET turn_at = turn_at - interval '2 hours' WHERE bank_id LIKE 'w%'")
        assert {b for b, _ in await _claim(conn, 10)} <= {f"w{g}" for g in range(1, 71)}
    finally:
        await conn.close()


async def _fill_mixed(conn) -> None:
    """a and b with backlogs, then d with only work of a type the first worker does not run."""
    await conn.execute("INSERT INTO banks (id) SELECT unnest(ARRAY['a', 'b', 'd'])")
    await _queue(conn, "a", 20)
    await _queue(conn, "b", 20)
    await _queue(conn, "d", 1, "extract")


@pytest.fixture
def mixed_db(pg_url):
    return migrated_database(pg_url, "claim_order_mixed", _fill_mixed)


async def test_a_worker_passes_over_work_it_does_not_run_and_leaves_its_turn(mixed_db):
    """A worker without an LLM passes over d's extraction and leaves d's turn where it is, so
    that a worker that runs it finds d at the front rather than behind every other bank."""
    conn = await asyncpg.connect(mixed_db)
    try:
        before = (await _turns(conn))["d"]
        assert [b for _ in range(4) for b, _n in await _claim(conn, 1)] == ["a", "b", "a", "b"]
        assert (await _turns(conn))["d"] == before
        rows = await conn.fetch(Q.operation_claim, "llm-worker", 1, 30.0, ["retain", "extract"], [])
        assert [r["bank_id"] for r in rows] == ["d"]
    finally:
        await conn.close()


async def test_an_open_transaction_does_not_hold_its_banks_turn(mixed_db):
    """A transaction that queues work and goes on (an import storing its files) leaves the bank's
    turn free until it commits: the claim still sends the bank to the back after serving it."""
    conn, other = await asyncpg.connect(mixed_db), await asyncpg.connect(mixed_db)
    try:
        open_tx = other.transaction()
        await open_tx.start()
        await enqueue_operation(other, "b", "retain", {"n": 99}, max_attempts=5)
        assert [b for _ in range(6) for b, _n in await _claim(conn, 1)] == ["a", "b", "a", "b", "a", "b"]
        await open_tx.commit()
        # once committed, b keeps the turn it had (the earlier one), in a row written anew
        version = await conn.fetchval("SELECT xmin::text FROM bank_turns WHERE bank_id = 'b'")
        async with other.transaction():
            for n in (100, 101):
                await enqueue_operation(other, "b", "retain", {"n": n}, max_attempts=5)
        assert await conn.fetchval("SELECT xmin::text FROM bank_turns WHERE bank_id = 'b'") != version
        assert [b for _ in range(2) for b, _n in await _claim(conn, 1)] == ["a", "b"]
    finally:
        await conn.close()
        await other.close()


async def _fill_big(conn) -> None:
    await conn.execute("INSERT INTO banks (id) SELECT 'bank' || g FROM generate_series(1, 2000) g")
    # 60,000 queued in 20 banks (in one statement: the trigger gives the banks their turns),
    # and 1,980 idle banks that once had work
    await conn.execute(
        "INSERT INTO operations (id, bank_id, type, created_at) SELECT gen_random_uuid(), 'bank' || (1 + g % 20),"
        " 'retain', now() - interval '1 day' + g * interval '1 second' FROM generate_series(1, 60000) g"
    )
    await conn.execute(
        "INSERT INTO operations (id, bank_id, type, status, created_at, started_at) SELECT gen_random_uuid(),"
        " 'bank' || g, 'retain', 'succeeded', now() - interval '2 days', now() - interval '2 days'"
        " FROM generate_series(21, 2000) g"
    )
    await conn.execute("ANALYZE operations")
    await conn.execute("ANALYZE bank_turns")


@pytest.fixture(scope="module")
def big_queue_db(pg_url):
    return migrated_database(pg_url, "claim_order_big", _fill_big)


def _nodes(plan: dict):
    yield plan
    for child in plan.get("Plans", []):
        yield from _nodes(child)


async def test_the_claim_reads_a_few_rows_a_bank_not_the_whole_queue(big_queue_db):
    """60,000 queued operations: the claim reads the first turns and a few candidates of each
    bank through their indexes, where sorting every due row by age read all 60,000."""
    conn = await asyncpg.connect(big_queue_db)
    try:
        (plan,) = json.loads(
            await conn.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + Q.operation_claim, "w", 2, 30.0, TYPES, OTHERS)
        )
    finally:
        await conn.close()
    nodes = list(_nodes(plan["Plan"]))
    assert "operations_queued_bank" in {n.get("Index Name") for n in nodes}, nodes
    on_operations = [n for n in nodes if n.get("Relation Name") == "operations"]
    assert all(n["Node Type"] != "Seq Scan" for n in on_operations), [n["Node Type"] for n in on_operations]
    read = sum(n.get("Actual Rows", 0) * n.get("Actual Loops", 1) for n in on_operations)
    assert read < 1_000, read
