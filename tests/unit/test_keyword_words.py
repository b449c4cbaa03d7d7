"""Which query words the keyword arms rank by (engine/search/recall.py): the words the bank holds,
rarest first, at most MAX_QUERY_WORDS of them, each weighed by its inverse document frequency;
and which of them seed the candidates."""

from __future__ import annotations

import math

from hindsight.engine.search.lexical import KEYWORD_SCAN_CAP, MAX_QUERY_WORDS, rarest_first, seed_words


def _rows(counts: dict[str, int], total: int) -> list[dict]:
    return [{"w": w, "n": n, "total": total} for w, n in counts.items()]


def test_the_rarest_words_the_bank_holds_and_their_weights():
    present, idf, total = rarest_first(_rows({"melanie": 300, "astrolabe": 2, "zebra": 0, "the": 900}, 1_000))
    assert present == [(2, "astrolabe"), (300, "melanie"), (900, "the")] and total == 1_000
    assert idf == [math.log(1 + (1_000 - n + 0.5) / (n + 0.5)) for n, _ in present]
    assert idf[0] > idf[1] > idf[2] > 0
    assert rarest_first(_rows({"zebra": 0}, 1_000)) == ([], [], 0)


def test_a_long_query_is_ranked_by_its_rarest_words_only():
    """A phrase of hundreds of distinct words made every candidate pay a test per word (1.9 s a
    statement for 667 words): beyond the rarest MAX_QUERY_WORDS, words are common and weigh little."""
    counts = {f"w{i:03d}": 10 + i for i in range(400)}
    present, idf, _ = rarest_first(_rows(counts, 50_000))
    assert len(present) == len(idf) == MAX_QUERY_WORDS
    assert [w for _, w in present] == [f"w{i:03d}" for i in range(MAX_QUERY_WORDS)]


def test_seeds_are_the_rarest_words_up_to_the_scan_cap():
    present = [(2, "astrolabe"), (1_500, "garden"), (KEYWORD_SCAN_CAP, "note")]
    assert seed_words(present) == ["astrolabe", "garden"]  # "note" would pass the cap
    assert seed_words([(KEYWORD_SCAN_CAP * 5, "note")]) == ["note"]  # the rarest is always one
