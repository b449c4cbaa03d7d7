"""Recall: the arms find the candidates, each one indexed query; one statement scores them and the
memories beside them, ranks them and reads the memories kept.

- semantic (arms/semantic.py): nearest the query's embedding;
- keyword (arms/keyword.py): the query's content words, ranked by their rarity in the bank;
- temporal (arms/temporal.py): memories in a time window the query names ("last May").
The keyword arm runs while the query is embedded. Then every candidate, and in hybrid mode the
memories just before and after each in its source, is scored the same way and ranked by
score-level fusion with its context (fusion.py has the formula), cut to relevance, top_k and the
token budget (budget.py), and the memories kept are read in full: one statement, recall_ranked
(details.py), which also runs the semantic arm of a bank small enough to sort. `mode` narrows
this to the semantic arm (vector) or the keyword arm (keyword), each ranked by its own score
without context; `filter` (filters.py) and the relevance threshold (relevance.py) apply in every
mode. `trace` returns each result's scores (trace.py).
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from hindsight.engine.memory.records import to_memory
from hindsight.engine.search.arms.keyword import keyword_ids
from hindsight.engine.search.arms.running import timed
from hindsight.engine.search.arms.semantic import semantic_ids
from hindsight.engine.search.arms.temporal import temporal_ids
from hindsight.engine.search.budget import cut
from hindsight.engine.search.conditions import request_filters
from hindsight.engine.search.details import Limits, Ranking, Words, read_ranked
from hindsight.engine.search.fusion import candidates, weights_for
from hindsight.engine.search.schemas import RecallRequest, RecallResult
from hindsight.engine.search.trace import recall_trace
from hindsight.language.cjk import has_cjk, has_cjk_beyond_han
from hindsight.language.query_terms import content_words
from hindsight.language.time_expressions import find_time_windows
from hindsight.text import tokens_of_chars

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


async def recall(rt: Runtime, bank_id: str, req: RecallRequest) -> RecallResult:
    base = req.query_timestamp or datetime.now(UTC)
    if base.tzinfo is None:
        base = base.replace(tzinfo=UTC)
    f = request_filters(req)

    hybrid = req.mode == "hybrid"
    windows = find_time_windows(req.query, base) if hybrid else []
    window = windows[0] if windows else None
    words = content_words(req.query)
    keyword: asyncio.Future | None = None
    if words and req.mode != "vector":
        # The keyword arm needs no embedding: it runs in the database while the model embeds
        # the query (the slowest arm on a large bank, so this shortens the whole call). It pays
        # because a query runs on one ONNX thread; with two they competed with PostgreSQL.
        keyword = asyncio.ensure_future(timed("keyword", keyword_ids(rt, bank_id, words, f)))
    try:
        qvec = await rt.embedder.query(req.query)
        sort = req.mode != "keyword" and await rt.sizes.sorts(bank_id)
    except BaseException:
        if keyword is not None:  # only the keyword arm runs this early
            keyword.cancel()
            with contextlib.suppress(BaseException):  # its own error, if it had one, is not this one
                await keyword
        raise
    # The semantic arm of a bank it sorts runs inside the ranking's statement, a round trip fewer,
    # unless the time arm runs: then the two run at once, each on a connection of its own, before
    # it. A walk of the vector index runs on its own: PostgreSQL plans it for each call (its
    # generic plan cannot see how much of the index the bank holds), and planning the whole
    # ranking each call would cost more than the round trip. Inside, the statement's time is the
    # semantic arm's in /metrics.
    inside = sort and window is None
    arms: dict[str, Awaitable] = {}
    if req.mode != "keyword" and not inside:
        arms["semantic"] = timed("semantic", semantic_ids(rt, bank_id, qvec, f, sort))
    if window is not None:
        arms["temporal"] = timed("temporal", temporal_ids(rt, bank_id, qvec, f, window))
    found = dict(zip(arms, await asyncio.gather(*arms.values())))
    weighed: Words | None = None
    if keyword is not None:
        found["keyword"], weighed = await keyword
    # In a fixed order: a memory's arms are listed the same way whichever arm finished first.
    ids, found_by = candidates({arm: found[arm] for arm in ("semantic", "keyword", "temporal") if arm in found})

    weights = weights_for(req.mode, reads(rt.embedder, req.query))
    limits = Limits(req.threshold(), req.top_k, req.max_tokens)
    ranking = Ranking(bank_id, ids, f, req.mode, req.query, qvec, weighed, window, weights, limits, inside)
    read, best = await (timed("semantic", read_ranked(rt, ranking)) if inside else read_ranked(rt, ranking))
    kept, total = cut(
        ((x, x.ranked.score, x.relevance) for x in read),
        limits.max_tokens,
        limits.top_k,
        limits.floor,
        lambda x: tokens_of_chars(x.chars),
    )
    # Memories are made only for the rows the cut keeps: making one costs more than anything else
    # done per row.
    results = []
    arms_of: dict = {}
    for x, score, rel in kept:
        # "neighbour": read as the memory beside a hit, found by no arm.
        by = (["semantic"] if x.semantic else []) + found_by.get(x.ranked.id, []) or ["neighbour"]
        arms_of[x.ranked.id] = by
        results.append(to_memory(x.row, score=round(score, 6), arms=by, relevance=rel))
    trace = None
    if req.trace:
        trace = recall_trace(weights, [x.ranked for x, _, _ in kept], arms_of, best)
    return RecallResult(bank_id=bank_id, query=req.query, results=results, total_tokens=total, trace=trace)


def reads(embedder, query: str) -> bool:
    """Whether the embedding model reads `query`: any text when it reads CJK; Chinese when it reads
    it through its gloss (engine/memory/vectors.py), but not kana or hangul."""
    if embedder.reads_cjk or not has_cjk(query):
        return True
    return embedder.reads_han and not has_cjk_beyond_han(query)
