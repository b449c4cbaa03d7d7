"""Ranking by rare words, shared by recall's keyword arm and document search: which of a query's
words a bank holds, rarest first, with their inverse document frequencies, and the candidate
statements seeded by the rarest of them so that a common word never makes a scan of the bank."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from hindsight.db.binder import Binder
from hindsight.db.sql import fill
from hindsight.engine.search.fusion import ARM_LIMIT

if TYPE_CHECKING:
    pass


KEYWORD_SCAN_CAP = 3_000


# Lower would save a little per keyword arm, but each seed past it is a full-text AND that decodes
# every other query word's postings, far dearer for a long query (bench/README.md, "Keyword arm:
# fetch fewer seeds whole (measured, not kept)").
SEED_FETCH_ALL = 1_000


# The rarest words of a query the keyword arms rank by: a word beyond them is common and weighs
# little, and each word is one more test of every candidate (a 2,000-character phrase of 667
# distinct words took ~1.9 s a statement, growing with the square of the words).
MAX_QUERY_WORDS = 32


SMALL_BANK = 2_000


def rarest_first(stats: list) -> tuple[list[tuple[int, str]], list[float], int]:
    """From a word-frequencies statement's rows (w, n, total): the words the bank holds as
    (count, word), rarest first (at most MAX_QUERY_WORDS), each one's inverse document frequency
    (BM25's idf), and the number of rows counted in all."""
    present = sorted((r["n"], r["w"]) for r in stats if r["n"] > 0)
    if not present:
        return [], [], 0
    total = max(stats[0]["total"] or 0, present[-1][0])
    present = present[:MAX_QUERY_WORDS]
    return present, [math.log(1 + (total - n + 0.5) / (n + 0.5)) for n, _ in present], total


def rarity_score(words: int, weights: str = "$3::float8[]", row: str = "c") -> str:
    """A candidate `row`'s score: the summed idf (`weights`, a float8[] placeholder) of the words
    (q.tq, the statement's parsed words) its tsv holds."""
    return " + ".join(f"({row}.tsv @@ q.tq[{i}])::int * ({weights})[{i}]" for i in range(1, words + 1))


def seed_candidates(seed: str, present: list[tuple[int, str]], p: Binder, filters: str, **parts: str) -> str:
    """The candidates `c` (id, tsv) as the union of one statement fragment (`seed`, with /*match*/,
    /*filter*/ and /*limit*/ slots, and any others in `parts`) a seed query (seed_matches)."""
    seeds = [
        fill(seed, match=p(match), filter=filters, limit=p(limit), **parts)
        for match, limit in zip(*seed_matches(present))
    ]
    return "(" + " UNION ".join(seeds) + ") c"


def seed_words(present: list[tuple[int, str]]) -> list[str]:
    """The seeds: the rarest words (present is sorted by count) up to KEYWORD_SCAN_CAP rows, at
    least one."""
    seeds: list[str] = []
    scanned = 0
    for count, w in present:
        if seeds and scanned + count > KEYWORD_SCAN_CAP:
            break
        seeds.append(w)
        scanned += count
    return seeds


def left_out(present: list[tuple[int, str]]) -> list[tuple[int, str]]:
    """The words (count, word) the seeds leave out, rarest first: seeded in turn when the seeds'
    rows are too few for the caller (their seeds are chosen by counts of rows it may not see)."""
    seeds = set(seed_words(present))
    return [(n, w) for n, w in present if w not in seeds]


def seed_matches(present: list[tuple[int, str]]) -> tuple[list[str], list[int]]:
    """Full-text queries (and row limits) whose union holds every memory that can rank in the
    keyword arm's top ARM_LIMIT, up to ties, among those holding a seed (seed_words). Words are
    content words (letters and digits, or CJK characters; present in the bank), so they need no
    quoting inside a tsquery."""
    seeds = seed_words(present)
    counts = {w: c for c, w in present}
    small = [s for s in seeds if counts[s] <= SEED_FETCH_ALL]
    matches, limits = ([" | ".join(small)], [KEYWORD_SCAN_CAP]) if small else ([], [])
    for s in seeds:
        if s in small:
            continue
        others = [w for _, w in present if w != s]
        if others:
            matches.append(f"{s} & ({' | '.join(others)})")
            limits.append(KEYWORD_SCAN_CAP)
        matches.append(s)
        limits.append(ARM_LIMIT)
    return matches, limits
