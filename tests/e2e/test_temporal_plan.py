"""The temporal arm plans every call for its own window. A generic plan cannot tell a day from a
year; once PostgreSQL kept one (after five runs of the statement on a connection), a wide window
on a 100,000-memory bank was sorted whole by distance instead of walked through the HNSW index
(bench/README.md, "Keyword and temporal arms: a custom plan each call"). Plan choice shows in
pg_prepared_statements, not in results, so that is what this checks, on the one connection of a
planned pool of one (db/pool.py, Pools)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from types import SimpleNamespace  # the arm needs only the Runtime's planned pool and sizes

from hindsight.db.binder import Binder
from hindsight.db.pool import TEMPORAL_WALK_ROWS, Pools
from hindsight.db.sql import Q, fill
from hindsight.engine.banks.sizes import BankSizes
from hindsight.engine.search.arms.temporal import TEMPORAL_EXACT_CAP, temporal_ids
from hindsight.engine.search.conditions import request_filters
from hindsight.engine.search.fusion import ARM_LIMIT
from hindsight.engine.search.schemas import RecallRequest
from hindsight.language.time_expressions import TimeWindow

from support import plan_nodes

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
            assert await temporal_ids(
                SimpleNamespace(planned=pools.planned, sizes=BankSizes(pools.shared)), bank, qvec, f, may
            ) == [hike]
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


async def test_a_walk_that_stops_short_is_replaced_by_the_exact_ranking(api, bank, pg_url):
    """The time arm walks the vector index with the window as a filter, and the planned pool's
    connections stop a walk at 3,000 rows; a walk that comes back short of 60 must give way to
    an exact ranking of the whole window (a walk that came back whole is used as it is). Plans
    are forced here, since a bank this small is read whole anyway (bench/README.md, "Temporal
    arm: a short walk, then exact")."""
    days = [f"2023-05-{1 + i % 28:02d}T{8 + i % 10:02d}:00:00Z" for i in range(70)] + ["2023-08-02T10:00:00Z"]
    texts = ["hiking the ridge", "baking bread", "a tango lesson", "fixing the bike", "a long swim", "reading poems"]
    items = [{"content": f"On that day: {texts[i % len(texts)]} ({i}).", "timestamp": t} for i, t in enumerate(days)]
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": items})
    assert r.status_code == 200, r.text
    may = TimeWindow(datetime(2023, 5, 1, tzinfo=UTC), datetime(2023, 6, 1, tzinfo=UTC), "in May 2023")
    pools = await Pools.open(pg_url, 1, 4)
    try:
        async with pools.planned.acquire() as conn:
            assert await conn.fetchval("SHOW hnsw.max_scan_tuples") == str(TEMPORAL_WALK_ROWS)
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
            assert len(scan) == 70
            plain = RecallRequest(query="x")

            async def run(
                cap: int = TEMPORAL_EXACT_CAP, req: RecallRequest = plain, sort: bool = False, **settings
            ) -> tuple[list, dict]:
                p = Binder(bank, qvec, ARM_LIMIT, may.start, may.end, cap, sort)
                sql = fill(Q.recall_temporal, filter=request_filters(req).into(p))
                async with conn.transaction():
                    for k, v in settings.items():
                        await conn.execute(f"SET LOCAL {k} = {v}")
                    ids = [r[0] for r in await conn.fetch(sql, *p.values)]
                    plan = json.loads(await conn.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, *p.values))[0]
                return ids, {n.get("Index Name"): n for n in plan_nodes(plan["Plan"])}

            # Plans that walk the index; and one stopped at once (its first candidates too:
            # pgvector always reads ef_search of them).
            walk = {"enable_seqscan": "off", "enable_bitmapscan": "off", "enable_sort": "off"}
            short_walk = walk | {"hnsw.max_scan_tuples": 1, "hnsw.ef_search": 1}
            # A walk that came back whole: its 60, taken as they are (the exact ranking's reads of
            # the window's indexes never run). The index is shared by every bank of the test run,
            # so even an unbounded walk can miss a few of this bank's memories (pgvector's
            # iterative scan also stops at its memory bound): then the exact ranking is the answer.
            ids, nodes = await run(**walk, **{"hnsw.max_scan_tuples": 10_000_000, "hnsw.ef_search": 1000})
            if nodes["memories_embedding_hnsw"]["Actual Rows"] >= ARM_LIMIT:
                assert all(
                    nodes[i]["Actual Loops"] == 0
                    for i in ("memories_bank_mentioned", "memories_bank_occurred")
                    if i in nodes
                )
                assert len(ids) == ARM_LIMIT and set(ids) <= set(scan)
            else:
                assert ids == scan[:ARM_LIMIT]
            # A walk stopped early: the whole window ranked exactly instead.
            ids, nodes = await run(**short_walk)
            assert nodes["memories_embedding_hnsw"]["Actual Rows"] < ARM_LIMIT
            assert ids == scan[:ARM_LIMIT]
            # The exact ranking reads at most the cap's number of the window's memories, and
            # ranks what the walk found with them.
            ids, nodes = await run(cap=5, **short_walk)
            walked = int(nodes["memories_embedding_hnsw"]["Actual Rows"])
            assert 5 <= len(ids) <= 5 + walked and set(ids) <= set(scan)
            # The request's filters hold in the exact ranking too (they are bound once, used in both).
            odd = RecallRequest(query="x", filter='text contains "swim"')
            ids, _ = await run(req=odd, **short_walk)
            swims = {
                r[0]
                for r in await conn.fetch("SELECT id FROM memories WHERE bank_id = $1 AND text LIKE '%swim%'", bank)
            }
            assert ids == [i for i in scan if i in swims] and len(ids) == 11
            # No walk at all (the plan a bank this small gets): exact too.
            ids, nodes = await run(enable_indexscan="off")
            assert "memories_embedding_hnsw" not in nodes and ids == scan[:ARM_LIMIT]
            # A bank small beside the others (engine/banks/sizes.py): the walk is not even started,
            # whatever the planner would prefer.
            ids, nodes = await run(sort=True, **walk)
            assert "memories_embedding_hnsw" not in nodes and ids == scan[:ARM_LIMIT]
        # Through the arm itself, with the plan PostgreSQL picks: 60 of the window's memories.
        got = await temporal_ids(
            SimpleNamespace(planned=pools.planned, sizes=BankSizes(pools.shared)),
            bank,
            qvec,
            request_filters(plain),
            may,
        )
        assert len(got) == ARM_LIMIT and set(got) <= set(scan)
    finally:
        await pools.close()
