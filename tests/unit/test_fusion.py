"""Recall's pure steps: the candidates the arms found, the weights of each mode, the words the
ranking statement weighs, and the cut to relevance, top_k and the token budget. The ranking itself
is a statement, tested on PostgreSQL (tests/db/test_recall_ranking.py)."""

from __future__ import annotations

from hindsight.engine.search.budget import cut
from hindsight.engine.search.details import WORD_COUNTS, Words, padded
from hindsight.engine.search.fusion import SEMANTIC_UNREAD, Weights, candidates, weights_for


def test_candidates_are_each_hit_once_with_the_arms_that_found_it():
    ids, found_by = candidates({"semantic": ["a", "b"], "temporal": ["b"], "keyword": ["c", "a"]})
    assert ids == ["a", "b", "c"]
    assert found_by == {"a": ["semantic", "keyword"], "b": ["semantic", "temporal"], "c": ["keyword"]}


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


def test_the_semantic_part_counts_less_in_a_script_the_model_does_not_read():
    assert weights_for("hybrid", reads_query=True) == Weights()
    unread = weights_for("hybrid", reads_query=False)
    assert unread.semantic == SEMANTIC_UNREAD < Weights().semantic and unread.keyword == Weights().keyword
    assert weights_for("vector", False) == Weights(semantic=1.0, keyword=0.0, time=0.0, context=False)
    assert weights_for("keyword", True) == Weights(semantic=0.0, keyword=1.0, time=0.0, context=False)


def test_the_words_weighed_are_padded_with_words_that_weigh_nothing():
    """A few statement texts serve every query, and each row's keyword score is the same sum."""
    for n in range(1, WORD_COUNTS[-1] + 1):
        words = Words([f"w{i}" for i in range(n)], [float(i + 1) for i in range(n)])
        terms, idf = padded(words)
        assert len(terms) == len(idf) == min(c for c in WORD_COUNTS if c >= n)
        assert terms[:n] == words.words and idf[:n] == words.idf and set(idf[n:]) <= {0.0}
        assert sum(idf) == sum(words.idf) and set(terms) == set(words.words)
