"""Recall's pure steps: fusing the arms' ranked hits, the neighbours the best hits bring, and the
cut to relevance, top_k and the token budget."""

from __future__ import annotations

import pytest

from hindsight.engine.search.budget import cut, rows_worth_reading
from hindsight.engine.search.details import NEIGHBOUR_DECAY, with_neighbours
from hindsight.engine.search.fusion import ARM_WEIGHTS, RRF_K, best_first, fuse, ranks


def test_a_memory_found_by_two_arms_outranks_one_found_by_either():
    scores, found_by = fuse({"semantic": ["a", "b"], "keyword": [("b", 3.0), ("c", 1.0)]})
    assert best_first(scores)[0] == "b"
    assert found_by["b"] == ["semantic", "keyword"]
    assert scores["a"] == pytest.approx(ARM_WEIGHTS["semantic"] / (RRF_K + 1))


def test_the_keyword_arm_weighs_most():
    scores, _ = fuse({"semantic": ["s"], "keyword": [("k", 1.0)], "entity": ["e"], "temporal": ["t"]})
    assert best_first(scores) == ["k", "s", "t", "e"]


def test_hits_with_the_same_keyword_score_share_their_mean_rank():
    assert ranks([("a", 2.0), ("b", 1.0), ("c", 1.0), ("d", 1.0)]) == [(0, "a"), (2.0, "b"), (2.0, "c"), (2.0, "d")]
    assert ranks(["x", "y"]) == [(0.0, "x"), (1.0, "y")]


def test_fusion_does_not_depend_on_the_order_the_arms_finished_in():
    arms = {"temporal": ["t", "s"], "semantic": ["s", "t"], "keyword": [("t", 1.0), ("s", 1.0)]}
    one = fuse(arms)
    other = fuse(dict(reversed(list(arms.items()))))
    assert best_first(one[0]) == best_first(other[0]) and one[1] == other[1]


def test_the_best_hits_bring_their_adjacent_units_below_them():
    rows = {
        "hit": {"source_id": "s1", "position": 5},
        "before": {"source_id": "s1", "position": 4},
        "after": {"source_id": "s1", "position": 6},
        "elsewhere": {"source_id": "s2", "position": 6},
    }
    found_by: dict = {"hit": ["semantic"]}
    scored = with_neighbours(["hit"], rows, {"hit": 1.0}, ["hit"], found_by)
    assert scored == {"hit": 1.0, "before": NEIGHBOUR_DECAY, "after": NEIGHBOUR_DECAY}
    assert found_by["before"] == ["neighbour"]


def test_a_neighbour_that_is_a_hit_itself_keeps_its_own_score():
    rows = {"a": {"source_id": "s", "position": 1}, "b": {"source_id": "s", "position": 2}}
    assert with_neighbours(["a", "b"], rows, {"a": 1.0, "b": 0.9}, ["a"], {}) == {"a": 1.0, "b": 0.9}


def test_a_hit_that_was_not_read_is_left_out():
    assert with_neighbours(["gone", "a"], {"a": {"source_id": "s", "position": 1}}, {"gone": 2, "a": 1}, [], {}) == {
        "a": 1
    }


def rows(*texts: str, relevance: float = 1.0):
    return [({"text": t}, 1.0 - i / 10, relevance) for i, t in enumerate(texts)]


def test_the_cut_stops_at_the_first_row_past_the_budget():
    kept, total = cut(rows("a" * 40, "b" * 400, "c" * 4), max_tokens=50, top_k=None, floor=0, text=lambda r: r["text"])
    assert [r[0]["text"][0] for r in kept] == ["a"]
    assert total > 0


def test_top_k_and_the_relevance_floor_apply_before_the_budget():
    low = [({"text": "low"}, 0.9, 0.1)]
    kept, _ = cut(low + rows("x", "y", "z", relevance=0.8), 1000, top_k=2, floor=0.5, text=lambda r: r["text"])
    assert [r[0]["text"] for r in kept] == ["x", "y"]


def test_the_rows_worth_reading_leave_room_for_neighbours_and_are_never_none():
    assert rows_worth_reading(1000, 4096, 16) == 4096 // 8 + 16
    assert rows_worth_reading(10, 4096, 16) == 10
    assert rows_worth_reading(0, 4096, 16) == 1
