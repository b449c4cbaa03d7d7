"""Recall: the arms run at once, each one indexed query; their hits and the memories beside them
are scored and ranked, and cut to the caller's limits.

- semantic (arms/semantic.py): nearest the query's embedding;
- keyword (arms/keyword.py): the query's content words, ranked by their rarity in the bank;
- temporal (arms/temporal.py): memories in a time window the query names ("last May").
The arms find the candidates; every candidate, and in hybrid mode the memories just before and
after each in its source, is then scored the same way (details.py) and ranked by score-level
fusion with its context (fusion.py); the ranking is cut to relevance, top_k and the token budget
(budget.py) and only the memories kept are read in full. `mode` narrows this to the semantic arm
(vector) or the keyword arm (keyword), each ranked by its own score without context; `filter`
(filters.py) and the relevance threshold (relevance.py) apply in every mode. `trace` returns each
result's scores (trace.py).
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
from hindsight.engine.search.details import Words, read_memories, read_scores
from hindsight.engine.search.fusion import candidates, rank, weights_for
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
    arms: dict[str, Awaitable] = {}
    if req.mode != "keyword":
        arms["semantic"] = timed("semantic", semantic_ids(rt, bank_id, qvec, f, sort))
    windows = find_time_windows(req.query, base) if hybrid else []
    if windows:
        arms["temporal"] = timed("temporal", temporal_ids(rt, bank_id, qvec, f, windows[0]))
    found = dict(zip(arms, await asyncio.gather(*arms.values())))
    weighed: Words | None = None
    if keyword is not None:
        found["keyword"], weighed = await keyword
    # In a fixed order: a memory's arms are listed the same way whichever arm finished first.
    ids, found_by = candidates({arm: found[arm] for arm in ("semantic", "keyword", "temporal") if arm in found})

    weights = weights_for(req.mode, reads(rt.embedder, req.query))
    scored = await read_scores(
        rt, bank_id, ids, f, req, qvec, weighed, windows[0] if windows else None, neighbours=weights.context
    )
    of = {s.row.id: s for s in scored}
    ranked = rank((s.row for s in scored), weights)
    kept, total = cut(
        ((r, r.score, of[r.id].relevance) for r in ranked),
        req.max_tokens,
        req.top_k,
        req.threshold(),
        lambda r: tokens_of_chars(of[r.id].chars),
    )
    rows = await read_memories(rt, bank_id, [r.id for r, _, _ in kept])
    # Memories are made only for the rows the cut keeps: making one costs more than anything else
    # done per row.
    results = []
    for r, score, rel in kept:
        if r.id in rows:
            by = found_by.get(r.id, ["neighbour"])
            results.append(to_memory(rows[r.id], score=round(score, 6), arms=by, relevance=rel))
    trace = None
    if req.trace:
        best = max((s.row.keyword for s in scored), default=0.0)
        trace = recall_trace(weights, [r for r, _, _ in kept if r.id in rows], found_by, best)
    return RecallResult(bank_id=bank_id, query=req.query, results=results, total_tokens=total, trace=trace)


def reads(embedder, query: str) -> bool:
    """Whether the embedding model reads `query`: any text when it reads CJK; Chinese when it reads
    it through its gloss (engine/memory/vectors.py), but not kana or hangul."""
    if embedder.reads_cjk or not has_cjk(query):
        return True
    return embedder.reads_han and not has_cjk_beyond_han(query)
