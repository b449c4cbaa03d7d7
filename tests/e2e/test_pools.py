"""The server's three connection pools (db/pool.py, Pools): HINDSIGHT_API_DB_POOL_MAX bounds them
together, a third of it (at least one) plans every statement for its own parameters, a fifth (at
least one) keeps one plan a statement (sorting disabled), and all open their connections with
the same settings otherwise, also once repointed."""

from __future__ import annotations

import pytest

from hindsight.db.pool import Pools


@pytest.mark.parametrize(
    ("max_size", "shared", "planned", "fixed"),
    [(10, 5, 3, 2), (40, 19, 13, 8), (4, 2, 1, 1), (2, 1, 1, 1), (1, 1, 1, 1)],
)
async def test_pool_max_is_shared_between_the_three(api, pg_url, max_size, shared, planned, fixed):
    pools = await Pools.open(pg_url, 2, max_size)
    try:
        got = (pools.shared.get_max_size(), pools.planned.get_max_size(), pools.fixed.get_max_size())
        assert got == (shared, planned, fixed)
        # The minimum, 2, in the shared and planned pools; a fixed connection opens with its first statement.
        assert (pools.shared.get_min_size(), pools.planned.get_min_size(), pools.fixed.get_min_size()) == (1, 1, 0)
    finally:
        await pools.close()


async def test_settings_of_each_pool_also_after_repoint(api, pg_url):  # api: the server made the vector type
    pools = await Pools.open(pg_url, 1, 8)
    try:
        for _ in range(2):
            kinds = (
                (pools.shared, "auto", "on"),
                (pools.planned, "force_custom_plan", "on"),
                (pools.fixed, "force_generic_plan", "off"),
            )
            for pool, plans, sorts in kinds:
                async with pool.acquire() as conn:
                    assert await conn.fetchval("SHOW plan_cache_mode") == plans
                    assert await conn.fetchval("SHOW enable_sort") == sorts
                    assert await conn.fetchval("SHOW hnsw.ef_search") == "100"
                    assert await conn.fetchval("SHOW jit") == "off"
            # What the engine does when the embedded PostgreSQL comes back (here: on the same URL).
            pools.repoint(pg_url)
            await pools.expire_connections()
    finally:
        await pools.close()


async def test_planned_connections_keep_a_small_statement_cache(api, pg_url):
    """Their statements vary with the query's words; asyncpg's default cache of 100 statements a
    connection kept variants that rarely came back (~5 KB of server memory each)."""
    pools = await Pools.open(pg_url, 1, 4)
    try:
        for pool, most in ((pools.planned, 24), (pools.shared, 100)):
            async with pool.acquire() as conn:
                for i in range(60):
                    assert await conn.fetchval(f"SELECT $1::int + {i}", 1) == 1 + i
                await conn.fetchval("SELECT 1")  # asyncpg closes the evicted ones before its next statement
                kept = await conn.fetchval("SELECT count(*) FROM pg_prepared_statements")
                assert kept <= most + 1 and kept >= min(most, 60)
    finally:
        await pools.close()
