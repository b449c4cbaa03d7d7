"""The keyword arm: memories holding the query's content words, ranked by the summed rarity (BM25's
idf) of the words each holds, from the bank's own word counts (lexical.py)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from hindsight.db.binder import Binder, Fragment
from hindsight.db.sql import Q, fill
from hindsight.engine.search.details import Words
from hindsight.engine.search.fusion import ARM_LIMIT
from hindsight.engine.search.lexical import SMALL_BANK, left_out, rarest_first, rarity_score, seed_candidates

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


async def keyword_ids(rt: Runtime, bank_id: str, words: list[str], f: Fragment) -> tuple[list, Words | None]:
    """The keyword arm, ranked by the summed inverse document frequency of the query words a
    memory contains (BM25's idf with binary term frequency): its hits' ids, and the words it
    weighed with their rarity (None when the bank holds none of them), so that every row ranked
    gets its keyword score the same way (details.ranked_statement).

    Document frequencies come from bank_lexemes (migration 004), one index lookup per word.
    On a large bank, candidates are the memories holding the rarest words, taken rarest first
    until their frequencies add up to KEYWORD_SCAN_CAP: the rare words carry the weight, so this
    bounds the work (a speaker's name in 30,000 memories) while barely changing what ranks on
    top; the common words still add their small weight to the candidates that have them. The
    arm's cost is about linear in the rows it reads, and it is the slowest arm at 100,000
    memories, so the cap sets the latency of the whole recall; its value trades latency against
    evidence recall (bench/README.md, "Keyword arm: seed cap and common seeds"). A small bank
    reads all its own rows anyway, so every word is a seed.

    On a large bank, a seed found in more than SEED_FETCH_ALL memories is not fetched whole:
    its memories that hold only it all score the same, so any ARM_LIMIT of them will do, and
    those that hold it with another query word come from one full-text AND (the index
    intersects the postings). This returns the same scores as fetching every seed memory while
    reading about a third as many rows (same entry)."""
    # The word counts on a fixed connection (db/pool.py, _FIXED: one plan, an index lookup a word);
    # the arm's statement on a planned one: its generic plan cannot see how common the words are,
    # and took several times as long (bench/README.md, "... a custom plan each call").
    async with rt.fixed.acquire() as conn:
        present, idf, total = rarest_first(await conn.fetch(Q.recall_word_frequencies, bank_id, words))
    if not present:
        return [], None
    score = rarity_score(len(present))
    table = keyword_rows(f)

    def statement(seeds: list[tuple[int, str]] | None) -> tuple[str, list]:
        """The arm's statement and values: candidates seeded by `seeds`, or (None) the bank's
        own rows holding any word."""
        p = Binder(bank_id, [w for _, w in present], idf, ARM_LIMIT)
        filters = f.into(p)
        if seeds is not None:
            candidates = seed_candidates(Q.recall_keyword_seed, seeds, p, filters, rows=table)
            return fill(Q.recall_keyword, own="", candidates=candidates, score=score), p.values
        own = fill(Q.recall_keyword_own, rows=table, filter=filters)
        candidates = fill(Q.recall_keyword_own_candidates, match=p(" | ".join(w for _, w in present)))
        return fill(Q.recall_keyword, own=own, candidates=candidates, score=score), p.values

    # The full-text index is shared by all banks: for a small bank next to a big one, reading
    # the big bank's postings costs more than testing the small bank's own rows
    # (bench/README.md, "Keyword arm: seed cap and common seeds").
    sql, values = statement(None if total <= SMALL_BANK else present)
    async with rt.planned.acquire() as conn:
        rows = await conn.fetch(sql, *values)
        left = left_out(present) if not rows and total > SMALL_BANK else []
        if left:
            # Seeds are chosen by the bank's counts, which include the memories the filters (or
            # what is true now: superseded and invalidated ones) leave out: a rare word held only
            # by those emptied the arm. Then the words left out are the seeds. Only then: filling
            # a short list too (as document search does) gave 6 of 308 LoCoMo questions at 100k
            # up to 43 more memories sharing only a common word, whose fused ranks reach a top 10;
            # and a second statement only when needed keeps the usual one as it was (as one
            # statement it would cost every recall; bench/README.md, "Documents: the keyword arm
            # weighs rare words").
            sql, values = statement(left)
            rows = await conn.fetch(sql, *values)
    return [r[0] for r in rows], Words([w for _, w in present], idf)


# The columns of memory_terms (migration 015), the keyword arm's narrow copy of each memory.
TERM_COLUMNS = frozenset(
    "bank_id id kind tags superseded invalidated_at valid_from valid_to occurred_start occurred_end"
    " mentioned_at created_at tsv".split()
)


_COLUMN = re.compile(r"\bm\.([a-z_]+)")


def keyword_rows(f: Fragment) -> str:
    """The table the keyword arm reads as `m`: memory_terms, whose ~0.3 KB rows cost a quarter less
    to read than the ~2 KB of memories (bench/README.md, "Keyword arm: a narrow table of its own"),
    when the request's filters name only its columns; memories when one names another (context,
    text, document_id, metadata)."""
    return "memory_terms" if set(_COLUMN.findall(f.sql)) <= TERM_COLUMNS else "memories"
