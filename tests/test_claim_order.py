"""Queued work is claimed bank by bank in turn (migration 016, operation_claim): one bank's
backlog does not hold up another bank's work, a bank's own work keeps its order, work whose
worker died goes first, and work whose bank lost its turn is not stranded. On the real
PostgreSQL, with the statements the server runs to queue and to claim."""

from __future__ import annotations

import json

import asyncpg
import pytest

from hindsight.db.sql import Q
from hindsight.engine.operations import enqueue_operation

from conftest import migrated_database

TYPES = ["retain"]


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


async def _claim(conn, limit: int) -> list[tuple[str, int]]:
    rows = await conn.fetch(Q.operation_claim, "test-worker", limit, 30.0, TYPES)
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
        assert await _claim(conn, 2) == [("a", 7), ("a", 8)]
        # a worker died holding two of a's: its work goes first
        await conn.execute(
            "UPDATE operations SET lease_until = now() - interval '1 second'"
            " WHERE bank_id = 'a' AND (payload->>'n')::int IN (7, 8)"
        )
        async with conn.transaction():
            await enqueue_operation(conn, "b", "retain", {"n": 2}, max_attempts=5)
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
            await conn.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + Q.operation_claim, "w", 2, 30.0, TYPES)
        )
    finally:
        await conn.close()
    nodes = list(_nodes(plan["Plan"]))
    assert "operations_queued_bank" in {n.get("Index Name") for n in nodes}, nodes
    on_operations = [n for n in nodes if n.get("Relation Name") == "operations"]
    assert all(n["Node Type"] != "Seq Scan" for n in on_operations), [n["Node Type"] for n in on_operations]
    read = sum(n.get("Actual Rows", 0) * n.get("Actual Loops", 1) for n in on_operations)
    assert read < 1_000, read
