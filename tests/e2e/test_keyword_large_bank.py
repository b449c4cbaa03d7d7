"""The keyword arm on a bank past SMALL_BANK memories, where candidates come from the shared
full-text index: a common seed word is read as "seed AND another query word" plus a bounded
sample of its single-word memories. The ranking must be the one exhaustive IDF scoring gives."""

from __future__ import annotations

from types import SimpleNamespace  # the arm needs only the Runtime's planned pool

from hindsight.db.pool import Pools
from hindsight.engine.search.arms.keyword import keyword_ids
from hindsight.engine.search.conditions import request_filters
from hindsight.engine.search.lexical import SEED_FETCH_ALL, SMALL_BANK
from hindsight.engine.search.schemas import RecallRequest

FILLERS = 2_200  # 1,100 hold "weather": not fetched whole either
GARDEN = 1_200  # more memories than SEED_FETCH_ALL hold "garden": it is not fetched whole


async def test_keyword_ranking_on_a_large_bank(api, bank, pg_url):
    assert FILLERS > SMALL_BANK - 10 and GARDEN > SEED_FETCH_ALL
    # Stored first, the one-word notes are what a bounded sample of either common word reads;
    # the notes with both are found only through "seed AND another query word".
    items = [{"content": f"Note {i}: we sat in the garden."} for i in range(GARDEN - 100)]
    items += [{"content": f"Note {i}: the weather was mild."} for i in range(GARDEN, FILLERS)]
    items += [{"content": f"Note {i}: the weather was mild in the garden."} for i in range(GARDEN - 100, GARDEN)]
    items += [
        {"content": "The garden hose leaked near the greenhouse.", "tags": ["tools"]},
        {"content": "A new hose was bought on Saturday."},
        {"content": "The hose reel is in the shed."},
        {"content": "The greenhouse roof needs a new pane.", "tags": ["tools"]},
    ]
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": items})
    assert r.status_code == 200, r.text
    assert api.get(f"/v1/banks/{bank}").json()["memory_count"] > SMALL_BANK

    r = api.post(
        f"/v1/banks/{bank}/recall",
        json={"query": "garden hose greenhouse weather", "mode": "keyword", "top_k": 50, "max_tokens": 32_000},
    )
    assert r.status_code == 200, r.text
    got = [m["text"] for m in r.json()["results"]]
    # Rarest words weigh most: all three words, then greenhouse (in 2 memories), then hose (in 3).
    assert got[:2] == ["The garden hose leaked near the greenhouse.", "The greenhouse roof needs a new pane."], got[:4]
    assert set(got[2:4]) == {"A new hose was bought on Saturday.", "The hose reel is in the shed."}, got[:5]
    # Then only memories with both common words, which outscore the weather-only ones.
    assert len(got) == 50 and all("garden" in t and "weather" in t for t in got[4:]), got[4:8]

    # A filter every memory passes but that names a column memory_terms lacks (migration 015)
    # sends the arm to `memories`: the same ranking from either table.
    r = api.post(
        f"/v1/banks/{bank}/recall",
        json={
            "query": "garden hose greenhouse weather",
            "mode": "keyword",
            "top_k": 50,
            "max_tokens": 32_000,
            "filter": 'context = "general"',
        },
    )
    assert [m["text"] for m in r.json()["results"]] == got

    # The filters apply to every candidate query of the large-bank path.
    r = api.post(
        f"/v1/banks/{bank}/recall",
        json={
            "query": "garden hose greenhouse weather",
            "mode": "keyword",
            "tags": ["tools"],
            "tags_match": "any_strict",
        },
    )
    assert [m["text"] for m in r.json()["results"]] == [
        "The garden hose leaked near the greenhouse.",
        "The greenhouse roof needs a new pane.",
    ]
    # A common word alone still finds its memories (the bounded single-word sample).
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "garden", "mode": "keyword", "top_k": 50})
    assert len(r.json()["results"]) == 50 and all("garden" in m["text"] for m in r.json()["results"])

    # Seeds are the rarest words by the bank's counts (greenhouse, garden, weather: 2,402
    # memories; "note", in all of them, is left out). A filter that passes none of the seeds'
    # memories leaves the arm the memories holding the word left out, not nothing.
    logs = [{"content": f"Note {i}: the log was checked.", "tags": ["log"]} for i in range(3)]
    assert api.post(f"/v1/banks/{bank}/memories", json={"items": logs}).status_code == 200
    body = {"query": "greenhouse garden weather note", "mode": "keyword", "tags": ["log"], "tags_match": "any_strict"}
    r = api.post(f"/v1/banks/{bank}/recall", json=body)
    assert sorted(m["text"] for m in r.json()["results"]) == [f"Note {i}: the log was checked." for i in range(3)]

    # The arm's statement runs on the planned pool, whose connections plan every call for its own
    # words (a generic plan cannot see how common they are); the shared pool keeps the server's
    # default.
    pools = await Pools.open(pg_url, 1, 4)  # a planned pool of one connection: every run on it
    try:
        async with pools.shared.acquire() as conn:
            assert await conn.fetchval("SHOW plan_cache_mode") == "auto"
        f = request_filters(RecallRequest(query="x"))
        for _ in range(8):  # past the five custom plans after which PostgreSQL may keep a generic one
            found, _ = await keyword_ids(
                SimpleNamespace(planned=pools.planned, fixed=pools.fixed), bank, ["greenhouse", "hose"], f
            )
            assert len(found) == 4
        async with pools.planned.acquire() as conn:
            assert await conn.fetchval("SHOW plan_cache_mode") == "force_custom_plan"
            plans = await conn.fetch(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%ORDER BY score DESC%'"
                " AND statement NOT LIKE '%pg_prepared_statements%'"
            )
            assert [tuple(p) for p in plans] == [(0, 8)]
        # The word counts, an index lookup a word whatever the words, keep one plan on a fixed
        # connection (db/pool.py, _FIXED): planned once, not every call.
        async with pools.fixed.acquire() as conn:
            plans = await conn.fetch(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements WHERE statement LIKE '%AS total FROM unnest%'"
                " AND statement NOT LIKE '%pg_prepared_statements%'"
            )
            assert [tuple(p) for p in plans] == [(8, 0)]
    finally:
        await pools.close()
