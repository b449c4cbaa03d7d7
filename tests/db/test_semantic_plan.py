"""The semantic arm sorts a small bank's own rows rather than walk the vector index every bank
shares, when the bank is small beside the others: a walk filtered to one bank reads about 60 /
share entries of the index, and PostgreSQL's planner prices it as if the filter were free (a bank
of 5,000 memories beside one of 100,000: 16-42 ms walked, ~5 ms sorted; bench/README.md,
"Semantic arm: a small bank beside a big one"). Checked on a database of its own, whose sizes
the test sets."""

from __future__ import annotations

import contextlib
import json
from types import SimpleNamespace  # the arm needs only the Runtime's shared pool and sizes

import asyncpg
import pytest
from pgvector.asyncpg import register_vector

from hindsight.db.binder import Binder
from hindsight.db.pool import Pools
from hindsight.db.sql import Q, fill
from hindsight.engine.banks import sizes as sizes_module
from hindsight.engine.banks.sizes import EXACT_BANK_ROWS, EXACT_READ_ROWS, BankSizes, ranks_exactly
from hindsight.engine.search.arms.running import fetch_walks
from hindsight.engine.search.arms.semantic import semantic_ids, semantic_sql
from hindsight.engine.search.conditions import request_filters
from hindsight.engine.search.fusion import ARM_LIMIT
from hindsight.engine.search.schemas import RecallRequest

from conftest import migrated_database
from support import generic_plan, index_names, plan_nodes

DIM = 384


def test_the_rule_sorts_a_bank_small_beside_the_others_and_walks_the_rest():
    assert ranks_exactly(0, 0)  # an empty bank, or a table never analysed
    assert ranks_exactly(400, 7_000)  # a LoCoMo conversation beside nine others
    assert ranks_exactly(5_000, 137_000)  # the case measured: 16-20 ms walked, ~5 ms sorted
    assert not ranks_exactly(10_000, 137_000)  # ~6 ms walked, ~13 ms sorted
    assert not ranks_exactly(5_000, 5_000)  # alone in the index: the walk reads ~100 entries
    assert not ranks_exactly(100_000, 137_000)
    assert not ranks_exactly(EXACT_BANK_ROWS + 1, 10**12)  # the sort's cost stays bounded


async def _add(conn: asyncpg.Connection, bank: str, n: int, seed: float) -> None:
    """n memories with random vectors, written as retain would leave them (the lexeme counts
    follow from the table's triggers)."""
    await conn.execute("INSERT INTO banks (id) VALUES ($1) ON CONFLICT DO NOTHING", bank)
    await conn.execute("SELECT setseed($1)", seed)
    await conn.execute(
        "INSERT INTO memories (id, bank_id, text, kind, embedding, source_id, position)"
        " SELECT gen_random_uuid(), $1, 'memory number ' || i, 'world',"
        f" (SELECT array_agg(random() - 0.5) FROM generate_series(1, {DIM}) WHERE i > 0)::vector,"
        " 's' || i, 0 FROM generate_series(1, $2) i",
        bank,
        n,
    )


@pytest.fixture(scope="module")
def sized_db(pg_url):
    """A database with a bank of 3,000 memories and one of 12, never analysed: the count of all
    memories the rule reads comes from the statistics system then (recall_bank_sizes)."""

    async def fill(conn: asyncpg.Connection) -> None:
        await _add(conn, "big", 3_000, 0.1)
        await _add(conn, "small", 12, 0.2)

    return migrated_database(pg_url, "semantic_plan", fill)


async def test_every_walk_of_the_vector_index_is_sorted_after(sized_db):
    """pgvector's relaxed_order walks (db/pool.py) return rows only nearly by distance, and
    PostgreSQL drops an outer `ORDER BY d` over a walk it takes to be ordered already: each
    statement that walks the index ends in a sort of its own (19 of 100 LoCoMo questions at 100k
    had the semantic arm's 60 out of order without it)."""
    pools = await Pools.open(sized_db, 1, 2)
    try:
        async with pools.shared.acquire() as conn:
            qvec = await conn.fetchval("SELECT embedding FROM memories WHERE bank_id = 'big' LIMIT 1")
            f = request_filters(RecallRequest(query="x"))
            walk = Binder("big")
            chunks = Binder("big", qvec, ["team"], "ann", ARM_LIMIT)
            statements = {
                "recall_semantic_walk": (semantic_sql(walk, walk(qvec), f, sort=False), walk),
                "chunk_semantic": (fill(Q.chunk_semantic, filter=""), chunks),
            }
            for name, (sql, p) in statements.items():
                plan = json.loads(await conn.fetchval("EXPLAIN (FORMAT JSON) " + sql, *p.values))[0]["Plan"]
                assert plan["Node Type"] == "Sort", (name, plan["Node Type"])
    finally:
        await pools.close()


async def test_the_arm_sorts_the_small_bank_and_walks_the_big_one(sized_db):
    pools = await Pools.open(sized_db, 1, 2)  # pools of one connection each: their statements show
    try:
        rt = SimpleNamespace(pool=pools.shared, planned=pools.planned, fixed=pools.fixed, sizes=BankSizes(pools.shared))
        # All memories: 3,012 once the inserting connection's statistics are flushed (as its
        # backend exits, which may trail the close); the choices below hold either way.
        small, big = await rt.sizes.get("small"), await rt.sizes.get("big")
        assert small[0] == 12 and big[0] == 3_000 and small[1] >= 12 and big[1] >= 3_000
        f = request_filters(RecallRequest(query="x"))
        async with pools.shared.acquire() as conn:
            qvec = await conn.fetchval("SELECT embedding FROM memories WHERE bank_id = 'small' LIMIT 1")
            every = [
                r[0]
                for r in await conn.fetch(
                    "SELECT id FROM memories WHERE bank_id = 'small' ORDER BY embedding <=> $1, id", qvec
                )
            ]
        assert await rt.sizes.sorts("small") and not await rt.sizes.sorts("big")
        assert await semantic_ids(rt, "small", qvec, f, True) == every  # all 12, nearest first
        big = await semantic_ids(rt, "big", qvec, f, False)
        assert len(big) == ARM_LIMIT
        prepared = {}
        for kind, pool in (("shared", pools.shared), ("fixed", pools.fixed)):
            async with pool.acquire() as conn:
                prepared[kind] = [r[0] for r in await conn.fetch("SELECT statement FROM pg_prepared_statements")]
        # The sort on a shared connection, the walk on a fixed one (db/pool.py, _FIXED).
        assert sum("FROM memories WHERE bank_id = $1 LIMIT $4" in s for s in prepared["shared"]) == 1
        assert sum("ORDER BY m.embedding <=> $2 LIMIT $3" in s for s in prepared["fixed"]) == 1
        assert not any("ORDER BY m.embedding <=> $2 LIMIT $3" in s for s in prepared["shared"])
        # A walk under a condition of the request's own stays on a shared connection, planned for
        # its values (a selective tag may make sorting the few memories that pass it cheaper).
        tagged = request_filters(RecallRequest(query="x", tags=["none-has-it"], tags_match="any_strict"))
        assert await semantic_ids(rt, "big", qvec, tagged, False) == []
        async with pools.shared.acquire() as conn:
            prepared["shared"] = [r[0] for r in await conn.fetch("SELECT statement FROM pg_prepared_statements")]
        assert sum("ORDER BY m.embedding <=> $2 LIMIT $3" in s for s in prepared["shared"]) == 1
    finally:
        await pools.close()


@contextlib.asynccontextmanager
async def _beside_many_banks(url: str):
    """Pools of one connection each on `url` and a runtime of them, with the planner's statistics
    as beside 1,000 banks (`n_distinct` of bank_id), reset after."""
    pools = await Pools.open(url, 1, 2)
    admin = await asyncpg.connect(url)
    try:
        await admin.execute("ALTER TABLE memories ALTER COLUMN bank_id SET (n_distinct = 1000)")
        await admin.execute("ANALYZE memories")
        yield (
            pools,
            SimpleNamespace(pool=pools.shared, planned=pools.planned, fixed=pools.fixed, sizes=BankSizes(pools.shared)),
        )
    finally:
        await admin.execute("ALTER TABLE memories ALTER COLUMN bank_id RESET (n_distinct)")
        await admin.execute("ANALYZE memories")
        await admin.close()
        await pools.close()


async def _walk_of_big(pools: Pools, f) -> tuple[list, str, Binder, dict]:
    """Eight of the big bank's vectors, the walk's statement under `f` for the first and its
    values, and the generic plan of it a shared connection would keep."""
    async with pools.shared.acquire() as conn:
        vectors = [r[0] for r in await conn.fetch("SELECT embedding FROM memories WHERE bank_id = 'big' LIMIT 8")]
        p = Binder("big")
        sql = semantic_sql(p, p(vectors[0]), f, sort=False)
        generic = await generic_plan(conn, sql, *p.values)
    return vectors, sql, p, generic


async def test_the_walk_stays_a_walk_planned_once_beside_many_banks(sized_db):
    """A generic plan estimates a bank at the average bank's share of the table: with a few hundred
    banks PostgreSQL's generic plan of the walk reads the bank by its key and sorts it, which a
    shared connection takes after five calls (at 100,000 memories: ~5 ms walked, 250-570 ms
    sorted). The fixed connections keep one generic plan, and it is the walk, with the same
    nearest memories a walk planned for the call finds."""
    async with _beside_many_banks(sized_db) as (pools, rt):
        f = request_filters(RecallRequest(query="x"))
        vectors, sql, p, generic = await _walk_of_big(pools, f)
        assert "memories_embedding_hnsw" not in index_names(generic)  # what a shared connection would keep
        async with pools.planned.acquire() as conn, conn.transaction():  # a walk planned for each call
            await conn.execute("SET LOCAL enable_sort = off")
            custom = [[r[0] for r in await conn.fetch(sql, "big", v, *p.values[2:])] for v in vectors]
        walked = [await semantic_ids(rt, "big", v, f, False) for v in vectors]
        assert walked == custom and all(len(w) == ARM_LIMIT for w in walked)
        async with pools.fixed.acquire() as conn:
            plans = await conn.fetchrow(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", sql
            )
            plan = await generic_plan(conn, sql, *p.values)
        assert (plans["generic_plans"], plans["custom_plans"]) == (len(vectors), 0)
        assert "memories_embedding_hnsw" in index_names(plan)


async def test_a_walk_under_the_requests_conditions_is_planned_for_them_beside_many_banks(sized_db):
    """With a few hundred banks a shared connection would also keep, from the sixth call, a generic
    plan of a walk under the request's own conditions (here its types) that reads the bank by its
    key and sorts it. Such a walk is planned for its values every call: in a transaction of its own
    that plans each statement so, on a shared connection (whose walks may read pgvector's whole
    allowance of rows)."""
    async with _beside_many_banks(sized_db) as (pools, rt):
        f = request_filters(RecallRequest(query="x", types=["world", "experience"]))
        assert f.binds
        vectors, sql, _, generic = await _walk_of_big(pools, f)
        assert "memories_embedding_hnsw" not in index_names(generic)  # what a shared connection would keep
        async with pools.shared.acquire() as conn:
            mine = {r[0] for r in await conn.fetch("SELECT id FROM memories WHERE bank_id = 'big'")}
        walked = [await semantic_ids(rt, "big", v, f, False) for v in vectors]
        assert all(len(w) == ARM_LIMIT and set(w) <= mine for w in walked)
        assert walked[0][0] != walked[1][0]  # each its own query's nearest
        async with pools.shared.acquire() as conn:
            plans = await conn.fetchrow(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement = $1", sql
            )
            # The setting holds for the walk's transaction only.
            assert await conn.fetchval("SHOW plan_cache_mode") == "auto"
            assert await conn.fetchval("SHOW hnsw.max_scan_tuples") == "20000"  # pgvector's own allowance
        assert (plans["generic_plans"], plans["custom_plans"]) == (0, len(vectors))
        setting = "SELECT current_setting('plan_cache_mode')"
        assert await fetch_walks(pools.shared, [(setting, []), (setting, [])]) == [["force_custom_plan"]] * 2
        assert await fetch_walks(pools.shared, []) == []


async def test_the_exact_statement_never_walks_the_index(sized_db):
    """Even where PostgreSQL would rather walk (sorting disabled), and with a request's filter:
    the nearest of the bank's rows that pass it, by distance."""
    conn = await asyncpg.connect(sized_db)
    try:
        await register_vector(conn)
        qvec = await conn.fetchval("SELECT embedding FROM memories WHERE bank_id = 'big' LIMIT 1")
        req = RecallRequest(query="x", filter='text like "memory number 1%"')
        f = request_filters(req)

        async def run(read: int) -> tuple[list, dict]:
            p = Binder("big", qvec, ARM_LIMIT, read)
            sql = fill(Q.recall_semantic_sort, vector="$2", limit="$3", read="$4", filter=f.into(p))
            async with conn.transaction():
                await conn.execute("SET LOCAL enable_sort = off")
                await conn.execute("SET LOCAL enable_seqscan = off")
                plan = json.loads(await conn.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, *p.values))[0]["Plan"]
                return [r[0] for r in await conn.fetch(sql, *p.values)], plan

        got, plan = await run(EXACT_READ_ROWS)
        assert "memories_embedding_hnsw" not in index_names(plan)
        rows = await conn.fetch(
            "SELECT id, embedding <=> $1 AS d FROM memories WHERE bank_id = 'big' AND text LIKE 'memory number 1%'",
            qvec,
        )
        want = [r["id"] for r in sorted(rows, key=lambda r: r["d"])][:ARM_LIMIT]  # by hand: no index
        assert got == want and len(got) == ARM_LIMIT
        # A bank past the line since its count was read: no more than the read bound is read,
        # the filter applying to those (here 500 of the 3,000: ~60 start "memory number 1").
        got, plan = await run(500)
        read = [n for n in plan_nodes(plan) if n.get("Relation Name") == "memories"]
        assert read and all(n["Actual Rows"] * n["Actual Loops"] <= 500 for n in read)
        assert set(got) <= {r["id"] for r in rows} and 0 < len(got) <= ARM_LIMIT
    finally:
        await conn.close()


async def test_sizes_are_kept_a_few_seconds_and_for_a_bounded_number_of_banks(sized_db, monkeypatch):
    pools = await Pools.open(sized_db, 1, 2)
    conn = await asyncpg.connect(sized_db)
    try:
        sizes = BankSizes(pools.shared)
        assert (await sizes.get("fresh"))[0] == 0  # a bank with no memories (or none yet)
        await _add(conn, "fresh", 5, 0.3)
        assert (await sizes.get("fresh"))[0] == 0  # kept: no round trip a recall
        monkeypatch.setattr(sizes_module, "TTL_SECONDS", 0.0)
        assert (await sizes.get("fresh"))[0] == 5  # expired: read again
        monkeypatch.setattr(sizes_module, "TTL_SECONDS", 3600.0)
        monkeypatch.setattr(sizes_module, "MAX_BANKS", 2)
        await _add(conn, "fresh", 1, 0.4)
        await sizes.get("small")
        assert (await sizes.get("fresh"))[0] == 5  # still kept: two banks fit; "fresh" used last
        await sizes.get("big")  # a third: the least recently used ("small") is forgotten
        assert (await sizes.get("fresh"))[0] == 5  # ...not "fresh", used since
        await sizes.get("small")  # read again: now "big" is the least recently used, and goes
        await sizes.get("big")  # ...read again: "fresh" goes
        assert (await sizes.get("fresh"))[0] == 6  # read again: its sixth memory counted
        # A sort is also bounded by what it can read whole (the time arm's window).
        assert await sizes.sorts("small") and not await sizes.sorts("small", at_most=11)
    finally:
        await conn.close()
        await pools.close()
