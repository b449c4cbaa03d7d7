"""Recall's ranking and cut: fused hits and the neighbours of the best of them, best first, then
top_k, then the longest best-first prefix the token budget holds; a relevance threshold removes
rows from that ranking without reordering it."""

from __future__ import annotations

import pytest

from hindsight.text import estimate_tokens

# One conversation (a document): each turn is a unit at the next position, so a hit brings the
# turns before and after it as neighbours.
TURNS = [
    "Jon: The weather turned cold this week.",
    "Gina: I bought a new winter coat on Monday.",
    "Jon: Did you hear that the bakery on Elm Street closed?",
    "Gina: Yes, the owner Marguerite retired to Lisbon after thirty years.",
    "Jon: She made the best almond croissants in town.",
    "Gina: Her nephew might reopen it as a café next spring.",
    "Jon: I would go there every morning before work.",
    "Gina: The dance studio is recruiting for the spring showcase.",
    "Jon: I signed up for the tango workshop on Thursday evenings.",
    "Gina: My sister is visiting from Porto in March.",
]
QUERY = "Where did Marguerite from the bakery retire to?"


# Notes near the query, more than the semantic arm returns (60), so that turns unlike the
# query are found only as neighbours.
NOTES = [f"Note {i}: where bakers retire, and the bakery trade in town, part {i}." for i in range(70)]


@pytest.fixture
def chat_bank(api, bank):
    items = [
        {"content": t, "document_id": "chat-1", "timestamp": f"2023-03-{i + 1:02d}T10:00:00Z"}
        for i, t in enumerate(TURNS)
    ]
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": items + [{"content": n} for n in NOTES]})
    assert r.status_code == 200, r.text
    return bank


def recall(api, bank, **body) -> dict:
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": QUERY, **body})
    assert r.status_code == 200, r.text
    return r.json()


def prefix_within(results: list[dict], budget: int) -> list[dict]:
    kept, total = [], 0
    for m in results:
        total += estimate_tokens(m["text"])
        if total > budget:
            break
        kept.append(m)
    return kept


def test_a_turn_beside_a_hit_is_ranked_by_its_own_score_and_its_context(api, chat_bank):
    """A turn no arm found but read beside a hit (arms: neighbour) is scored like every other
    memory: its own parts plus its better neighbour's and its source's best (engine/search/fusion.py)."""
    traced = recall(api, chat_bank, max_tokens=32_000, trace=True)
    full = traced["results"]
    assert any(m["text"].startswith("Gina: Yes, the owner Marguerite") for m in full[:3])
    scores = [m["score"] for m in full]
    assert scores == sorted(scores, reverse=True)
    w = traced["trace"]["weights"]
    by_id = {t["id"]: t for t in traced["trace"]["results"]}
    neighbours = [m for m in full if m["arms"] == ["neighbour"]]
    assert neighbours, [m["arms"] for m in full]
    for nb in neighbours:
        t = by_id[nb["id"]]
        assert t["neighbour"] > 0 and t["source"] >= t["neighbour"]
        assert abs(t["base"] + w["neighbour"] * t["neighbour"] + w["source"] * t["source"] - nb["score"]) < 2e-6
    assert len({m["id"] for m in full}) == len(full)


@pytest.mark.parametrize("budget", [1, 8, 12, 25, 40, 90, 150])
def test_the_budget_keeps_the_longest_best_first_prefix(api, chat_bank, budget):
    full = recall(api, chat_bank, max_tokens=32_000)["results"]
    got = recall(api, chat_bank, max_tokens=budget)
    expected = prefix_within(full, budget)
    assert [m["id"] for m in got["results"]] == [m["id"] for m in expected]
    assert got["results"] == expected  # scores, arms and relevance as in the uncut ranking
    assert got["total_tokens"] == sum(estimate_tokens(m["text"]) for m in expected) <= budget


@pytest.mark.parametrize("top_k", [1, 2, 5])
def test_top_k_then_budget(api, chat_bank, top_k):
    full = recall(api, chat_bank, max_tokens=32_000)["results"]
    assert recall(api, chat_bank, max_tokens=32_000, top_k=top_k)["results"] == full[:top_k]
    assert recall(api, chat_bank, max_tokens=30, top_k=top_k)["results"] == prefix_within(full[:top_k], 30)


@pytest.mark.parametrize("mode", ["hybrid", "vector", "keyword"])
def test_a_threshold_removes_rows_then_the_budget_cuts(api, chat_bank, mode):
    """A relevance threshold drops the rows below it from the ranking without reordering the
    rest; top_k and the budget then apply to what is left."""
    full = recall(api, chat_bank, max_tokens=32_000, mode=mode)["results"]
    levels = sorted({m["relevance"] for m in full})
    # Above the lowest: some rows go and some stay; with one level (every keyword hit holds the
    # same share of the query's words), a floor just above it removes every row.
    floor = levels[1] if len(levels) > 1 else round(levels[0] + 0.0001, 4)
    above = [m for m in full if m["relevance"] >= floor]
    assert len(above) < len(full) and (len(above) > 0 or len(levels) == 1)
    assert recall(api, chat_bank, max_tokens=32_000, mode=mode, min_score=floor)["results"] == above
    for budget in (10, 60):
        got = recall(api, chat_bank, max_tokens=budget, mode=mode, min_score=floor)["results"]
        assert got == prefix_within(above, budget)
    assert recall(api, chat_bank, max_tokens=32_000, mode=mode, min_score=floor, top_k=2)["results"] == above[:2]
    if mode != "hybrid":
        assert all(m["arms"] != ["neighbour"] for m in full)  # neighbours come with hybrid only


def test_forgotten_neighbours_stay_out(api, chat_bank):
    """A neighbour must pass the request's filters like any hit."""
    full = recall(api, chat_bank, max_tokens=32_000)["results"]
    nb = next(m for m in full if m["arms"] == ["neighbour"])
    r = api.delete(f"/v1/banks/{chat_bank}/memories/{nb['id']}")
    assert r.status_code == 200, r.text
    after = recall(api, chat_bank, max_tokens=32_000)["results"]
    assert nb["id"] not in {m["id"] for m in after}
    filtered = recall(api, chat_bank, max_tokens=32_000, filter='text contains "Marguerite"')["results"]
    assert filtered and all("Marguerite" in m["text"] for m in filtered)
