"""The temporal arm plans every call for its own window. A generic plan cannot tell a day from a
year; once PostgreSQL kept one (after five runs of the statement on a connection), a wide window
on a 100,000-memory bank was sorted whole by distance instead of walked through the HNSW index
(bench/README.md, "Keyword and temporal arms: a custom plan each call"). Plan choice shows in
pg_prepared_statements, not in results, so that is what this checks, on the one connection of a
planned pool of one (db/pool.py, Pools)."""

from __future__ import annotations

from datetime import UTC, datetime
from types import SimpleNamespace  # the arm needs only the Runtime's planned pool

from hindsight.db.pool import Pools
from hindsight.engine.models import RecallRequest
from hindsight.engine.recall import request_filters, temporal_ids
from hindsight.engine.temporal import TimeWindow

RUNS = 8  # past the five custom plans after which PostgreSQL may switch to a generic one


async def test_temporal_arm_never_keeps_a_generic_plan(api, bank, pg_url):
    r = api.post(
        f"/v1/banks/{bank}/memories",
        json={
            "items": [
                {"content": "We hiked the ridge trail together.", "timestamp": "2023-05-14T10:00:00Z"},
                {"content": "We went bowling downtown.", "timestamp": "2023-08-02T10:00:00Z"},
            ]
        },
    )
    assert r.status_code == 200, r.text
    may = TimeWindow(datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC), "in May 2023")
    pools = await Pools.open(pg_url, 1, 4)
    try:
        async with pools.shared.acquire() as conn:
            hike, qvec = await conn.fetchrow(
                "SELECT id, embedding FROM memories WHERE bank_id = $1 AND text LIKE 'We hiked%'", bank
            )
        f = request_filters(RecallRequest(query="x"))
        for _ in range(RUNS):
            assert await temporal_ids(SimpleNamespace(planned=pools.planned), bank, qvec, f, may) == [hike]
        async with pools.planned.acquire() as conn:
            plans = await conn.fetch(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                " WHERE statement LIKE '%m.occurred_start < $5 AND m.occurred_end > $4%'"
                " AND statement NOT LIKE '%pg_prepared_statements%'"
            )
            assert [tuple(p) for p in plans] == [(0, RUNS)]
        # ...and the shared pool's connections keep the server's default.
        async with pools.shared.acquire() as conn:
            assert await conn.fetchval("SHOW plan_cache_mode") == "auto"
    finally:
        await pools.close()
