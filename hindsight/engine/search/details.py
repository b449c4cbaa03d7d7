"""Recall's ranking read from the database in one round trip (recall_ranked): the arms' hits and
the memories beside them in their sources scored, ranked by fusion (fusion.py) and cut to the
caller's limits in the statement, the memories kept read in full."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hindsight.db.binder import Binder, Fragment
from hindsight.db.sql import Q, fill
from hindsight.engine.memory.records import COLUMNS
from hindsight.engine.search.arms.semantic import semantic_sql
from hindsight.engine.search.fusion import CONTEXT_LEADS, KEYWORD_LEADS, Ranked, Weights
from hindsight.engine.search.lexical import MAX_QUERY_WORDS, rarity_score
from hindsight.engine.search.relevance import WEIGHTS, relevance_from, word_share_sql
from hindsight.language.time_expressions import TimeWindow

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


@dataclass(frozen=True, slots=True)
class Words:
    """The query words the keyword arm weighed, and each one's rarity (idf) in the bank."""

    words: list[str]
    idf: list[float]


@dataclass(frozen=True, slots=True)
class Limits:
    """What the caller keeps of a ranking (budget.cut): the relevance floor, top_k (None: any
    number) and the token budget."""

    floor: float
    top_k: int | None
    max_tokens: int


@dataclass(frozen=True, slots=True)
class Ranking:
    """What one recall ranks (recall_ranked): the ids its arms found (`hits`; with `semantic_here`,
    the semantic arm runs in the statement, sorting the bank's own rows, and its hits are not among
    them), under the request's filters, by the query (`mode`, its text, its vector, the words the
    keyword arm weighed, the time window it names) with `weights`, cut to `limits`."""

    bank_id: str
    hits: list
    filters: Fragment
    mode: str
    query: str
    vector: object
    words: Words | None
    window: TimeWindow | None
    weights: Weights
    limits: Limits
    semantic_here: bool = False


@dataclass(frozen=True, slots=True)
class Read:
    """One ranked memory as recall_ranked returns it: its row (the columns of a Memory), its
    scores, its relevance, its length in characters and whether the semantic arm found it in the
    statement (Ranking.semantic_here)."""

    row: object
    ranked: Ranked
    relevance: float
    chars: int
    semantic: bool


async def read_ranked(rt: Runtime, r: Ranking) -> tuple[list[Read], float]:
    """The hits and (weights.context) the memories just before and after each lead (of the hits
    the filters keep, the best CONTEXT_LEADS by own score and KEYWORD_LEADS by keyword score),
    under the filters,
    ranked best first: every row the cut to the limits could keep (budget.cut makes it, on each
    row's relevance as results carry it), at most one more, and the rows within 0.0001 of the
    relevance floor; and the best keyword score among all the rows ranked. One round trip."""
    if not r.hits and not r.semantic_here:
        return [], 0.0
    sql, values = ranked_statement(r)
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(sql, *values)
    out = []
    for row in rows:
        if row["id"] is None:  # nothing kept: the row that carries `best`
            continue
        raw = row["similarity"]
        # A vector of zeros has no direction (an import can hold one): its NaN similarity counts
        # as none, and nothing about it is relevant, as relevance_of has it.
        similarity = float(raw) if math.isfinite(raw) else 0.0
        rel = relevance_from(r.mode, similarity, row["share"]) if math.isfinite(raw) else 0.0
        time = None if row["in_window"] is None else float(row["in_window"])
        scores = Ranked(
            row["id"], similarity, row["keyword"], time, row["base"], row["neighbour"], row["source"], row["score"]
        )
        out.append(Read(row, scores, rel, row["chars"], row["semantic"]))
    return out, float(rows[0]["best"]) if rows else 0.0


# The statement's text depends on how many query words it weighs; padded to the next of these
# counts, a few texts serve every query, and PostgreSQL keeps a plan of each for each pooled
# connection instead of planning the statement anew whenever the count changes.
WORD_COUNTS = (4, 8, 16, MAX_QUERY_WORDS)


def padded(words: Words) -> tuple[list[str], list[float]]:
    """The words and their rarity padded to the next of WORD_COUNTS with the first word weighing
    nothing: each adds 0 to a row's keyword score, which stays the same sum."""
    size = next(n for n in WORD_COUNTS if n >= len(words.words))
    pad = size - len(words.words)
    return words.words + words.words[:1] * pad, words.idf + [0.0] * pad


# recall_ranked's semantic arm when it ran on its own: no rows.
NO_SEMANTIC = "SELECT NULL::uuid AS id WHERE false"


def ranked_statement(r: Ranking) -> tuple[str, list]:
    """recall_ranked filled for one recall, and its values."""
    w = r.weights
    sim_weight, share_weight = WEIGHTS[r.mode]
    terms, idf = padded(r.words) if r.words and r.words.words else ([], [])
    p = Binder(
        r.bank_id,
        r.hits,
        r.vector,
        w.context,
        terms,
        w.semantic,
        w.keyword,
        w.time,
        w.neighbour,
        w.source,
        sim_weight,
        share_weight,
        r.limits.floor,
        r.limits.top_k,
        r.limits.max_tokens,
        CONTEXT_LEADS,
        KEYWORD_LEADS,
    )
    keyword = rarity_score(len(terms), p(idf, "float8[]"), row="m") if terms else "0"
    # One statement text with or without a window (NULL bounds: none), so that its plan is kept.
    start = p(r.window and r.window.start, "timestamptz")
    end = p(r.window and r.window.end, "timestamptz")
    in_window = (
        f"CASE WHEN {start} IS NOT NULL THEN coalesce((m.occurred_start < {end} AND m.occurred_end > {start})"
        f" OR (m.mentioned_at >= {start} AND m.mentioned_at < {end}), false) END"
    )
    share = word_share_sql("m.tsv", p, [r.query])
    scores = fill(Q.recall_scores_columns, keyword=keyword, window=in_window, share=share)
    semantic = semantic_sql(p, "$3", r.filters, sort=True) if r.semantic_here else NO_SEMANTIC
    sql = fill(
        Q.recall_ranked,
        semantic=semantic,
        scores=scores,
        filter=r.filters.into(p),
        share=share,
        columns=COLUMNS,
        base=Q.recall_base,
    )
    return sql, p.values
