"""Recall's pure steps: score-level fusion of each row's similarity, keyword score and time, the
context each memory gets from its neighbours and its source, the order of equal scores, and the
cut to relevance, top_k and the token budget."""

from __future__ import annotations

import pytest

from hindsight.engine.memory.ids import new_memory_id
from hindsight.engine.search.budget import cut
from hindsight.engine.search.fusion import (
    NEIGHBOUR,
    SEMANTIC_UNREAD,
    SOURCE,
    TIME,
    Row,
    Weights,
    candidates,
    rank,
    weights_for,
)

ALONE = Weights(context=False)


def row(mid, sim=0.0, kw=0.0, window=None, source=None, position=0):
    return Row(mid, source or f"item:{mid}", position, sim, kw, window)


def test_scores_not_ranks_are_fused():
    """A memory that is a close second in both arms beats one first by a hair in one and far
    behind in the other; rank fusion scored them alike."""
    ranked = rank([row("a", sim=0.50, kw=0.1), row("b", sim=0.49, kw=9.5), row("c", sim=0.10, kw=10.0)], ALONE)
    assert [r.id for r in ranked] == ["b", "a", "c"]
    b = ranked[0]
    assert b.base == pytest.approx(0.49 + Weights().keyword * 9.5 / 10.0)


def test_the_keyword_score_counts_as_a_share_of_the_best_and_nothing_without_one():
    only = rank([row("a", sim=0.2, kw=3.0)], ALONE)[0]
    assert only.base == pytest.approx(0.2 + Weights().keyword)
    none = rank([row("a", sim=0.2), row("b", sim=0.3)], ALONE)
    assert [r.base for r in none] == [pytest.approx(0.3), pytest.approx(0.2)]


def test_a_memory_in_the_time_window_gains_the_time_weight():
    ranked = rank([row("in", sim=0.3, window=True), row("out", sim=0.4, window=False)], ALONE)
    assert [r.id for r in ranked] == ["in", "out"]
    assert ranked[0].base == pytest.approx(0.3 + TIME) and ranked[0].time == 1.0
    assert rank([row("x", sim=0.3)], ALONE)[0].time is None


def test_the_turn_after_a_strong_match_rises_with_it():
    """In a conversation the answer is often the turn after the question: a memory gains its
    better neighbour's score, and every memory of a source its best one's."""
    rows = [
        row("question", sim=0.8, source="s1", position=1),
        row("answer", sim=0.3, source="s1", position=2),
        row("elsewhere", sim=0.5, source="s2", position=1),
    ]
    ranked = {r.id: r for r in rank(rows, Weights())}
    answer = ranked["answer"]
    assert answer.neighbour == pytest.approx(0.8) and answer.source == pytest.approx(0.8)
    assert answer.score == pytest.approx(0.3 + NEIGHBOUR * 0.8 + SOURCE * 0.8)
    assert ranked["elsewhere"].neighbour == 0.0 and ranked["elsewhere"].source == pytest.approx(0.5)
    assert [r.id for r in rank(rows, Weights())] == ["question", "answer", "elsewhere"]


def test_without_context_neighbours_and_sources_count_for_nothing():
    rows = [row("a", sim=0.8, source="s", position=1), row("b", sim=0.3, source="s", position=2)]
    b = next(r for r in rank(rows, ALONE) if r.id == "b")
    assert b.score == pytest.approx(0.3) and b.neighbour is None and b.source is None


def test_equal_scores_go_to_the_memory_retained_first_whatever_order_they_came_in():
    first, second, third = new_memory_id(), new_memory_id(), new_memory_id()
    rows = [row(third, sim=0.5), row(first, sim=0.5), row(second, sim=0.5)]
    assert [r.id for r in rank(rows, Weights())] == [first, second, third]
    assert [r.id for r in rank(list(reversed(rows)), Weights())] == [first, second, third]


def test_candidates_are_each_hit_once_with_the_arms_that_found_it():
    ids, found_by = candidates({"semantic": ["a", "b"], "temporal": ["b"], "keyword": ["c", "a"]})
    assert ids == ["a", "b", "c"]
    assert found_by == {"a": ["semantic", "keyword"], "b": ["semantic", "temporal"], "c": ["keyword"]}


def test_nothing_to_rank_is_nothing_ranked():
    assert rank([], Weights()) == []


def rows(*texts: str, relevance: float = 1.0):
    return [({"text": t}, 1.0 - i / 10, relevance) for i, t in enumerate(texts)]


def tokens(r) -> int:
    return max(1, (len(r["text"]) + 3) // 4)


def test_the_cut_stops_at_the_first_row_past_the_budget():
    kept, total = cut(rows("a" * 40, "b" * 400, "c" * 4), max_tokens=50, top_k=None, floor=0, tokens=tokens)
    assert [r[0]["text"][0] for r in kept] == ["a"]
    assert total == 10


def test_top_k_and_the_relevance_floor_apply_before_the_budget():
    low = [({"text": "low"}, 0.9, 0.1)]
    kept, _ = cut(low + rows("x", "y", "z", relevance=0.8), 1000, top_k=2, floor=0.5, tokens=tokens)
    assert [r[0]["text"] for r in kept] == ["x", "y"]


def test_of_equal_scores_the_memory_holding_more_words_goes_first():
    """The keyword arm's own rule: a longer turn with the same query words says more."""
    short, long = new_memory_id(), new_memory_id()
    rows = [Row(long, "a", 0, 0.0, 2.0, None, terms=9), Row(short, "b", 0, 0.0, 2.0, None, terms=3)]
    assert [r.id for r in rank(rows, Weights(semantic=0.0, keyword=1.0, time=0.0, context=False))] == [long, short]


def test_the_semantic_part_counts_less_in_a_script_the_model_does_not_read():
    assert weights_for("hybrid", reads_query=True) == Weights()
    unread = weights_for("hybrid", reads_query=False)
    assert unread.semantic == SEMANTIC_UNREAD < Weights().semantic and unread.keyword == Weights().keyword
    assert weights_for("vector", False) == Weights(semantic=1.0, keyword=0.0, time=0.0, context=False)
    assert weights_for("keyword", True) == Weights(semantic=0.0, keyword=1.0, time=0.0, context=False)
