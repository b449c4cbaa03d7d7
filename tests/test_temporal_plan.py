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
from hindsight.engine import recall as recall_module
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


async def test_temporal_arm_ranks_the_window_by_distance_either_way(api, bank, pg_url, monkeypatch):
    """A narrow window is ranked exactly, a wide one (here: wider than a bound of 2) through the
    vector index; both return the window's memories only, nearest the query first, as a scan of
    every memory computes them (bench/README.md, "Temporal arm: a narrow window ranked exactly")."""
    days = [f"2023-05-{d:02d}T10:00:00Z" for d in range(1, 29)] + ["2023-08-02T10:00:00Z", "2023-09-09T10:00:00Z"]
    texts = ["hiking the ridge", "baking bread", "a tango lesson", "fixing the bike", "a long swim", "reading poems"]
    items = [{"content": f"On that day: {texts[i % len(texts)]} ({i}).", "timestamp": t} for i, t in enumerate(days)]
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": items})
    assert r.status_code == 200, r.text
    may = TimeWindow(datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC), "in May 2023")
    pools = await Pools.open(pg_url, 1, 4)
    try:
        async with pools.shared.acquire() as conn:
            qvec = await conn.fetchval(
                "SELECT embedding FROM memories WHERE bank_id = $1 AND text LIKE '%swim (4)%'", bank
            )
            scan = [
                r[0]
                for r in await conn.fetch(
                    "SELECT id FROM memories WHERE bank_id = $1 AND mentioned_at >= $2 AND mentioned_at < $3"
                    " ORDER BY embedding <=> $4, id",
                    bank,
                    may.start,
                    may.end,
                    qvec,
                )
            ]
        assert len(scan) == 28
        f = request_filters(RecallRequest(query="x"))
        rt = SimpleNamespace(planned=pools.planned)
        exact = await temporal_ids(rt, bank, qvec, f, may)
        monkeypatch.setattr(recall_module, "TEMPORAL_EXACT_ROWS", 2)
        walked = await temporal_ids(rt, bank, qvec, f, may)
        for got in (exact, walked):
            assert set(got) <= set(scan) and got[0] == scan[0]
        assert exact == scan  # every memory of the window, in the scan's order (no ties here)
        assert len(walked) >= 20  # the index walk may miss a few, never leaves the window
    finally:
        await pools.close()
