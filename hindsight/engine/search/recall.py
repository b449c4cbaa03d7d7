"""Recall: the arms run at once, each one indexed query, their hits fused, read with their
neighbours, and cut to the caller's limits.

- semantic (arms/semantic.py): nearest the query's embedding;
- keyword (arms/keyword.py): the query's content words, ranked by their rarity in the bank;
- entity (arms/entity.py): memories naming entities the query names, rarest entities first;
- temporal (arms/temporal.py): memories in a time window the query names ("last May").
Then fusion (fusion.py), the hits read in full with their neighbours (details.py) and the cut
to relevance, top_k and the token budget (budget.py). `mode` narrows this to the semantic arm
(vector) or the keyword arm (keyword), without neighbours; `filter` (filters.py) and the
relevance threshold (relevance.py) apply in every mode.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from hindsight.engine.memory.records import to_memory
from hindsight.engine.search.arms.entity import entity_ids, sorted_arms
from hindsight.engine.search.arms.keyword import keyword_ids
from hindsight.engine.search.arms.running import timed
from hindsight.engine.search.arms.semantic import semantic_ids
from hindsight.engine.search.arms.temporal import temporal_ids
from hindsight.engine.search.budget import cut, rows_worth_reading
from hindsight.engine.search.conditions import request_filters
from hindsight.engine.search.details import NEIGHBOUR_PARENTS, read_details
from hindsight.engine.search.fusion import ARM_WEIGHTS, best_first, fuse
from hindsight.engine.search.schemas import RecallRequest, RecallResult
from hindsight.language.query_terms import content_words
from hindsight.language.time_expressions import find_time_windows

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


async def recall(rt: Runtime, bank_id: str, req: RecallRequest) -> RecallResult:
    base = req.query_timestamp or datetime.now(UTC)
    if base.tzinfo is None:
        base = base.replace(tzinfo=UTC)
    f = request_filters(req)

    arms: dict[str, Awaitable[list]] = {}
    hybrid = req.mode == "hybrid"
    words = content_words(req.query)
    if words and req.mode != "vector":
        # The keyword arm needs no embedding: it runs in the database while the model embeds
        # the query (the slowest arm on a large bank, so this shortens the whole call). It pays
        # because a query runs on one ONNX thread; with two they competed with PostgreSQL.
        arms["keyword"] = asyncio.ensure_future(timed("keyword", keyword_ids(rt, bank_id, words, f)))
    try:
        qvec = await rt.embedder.query(req.query)
        sort = req.mode != "keyword" and await rt.sizes.sorts(bank_id)
    except BaseException:
        for started in arms.values():  # only the keyword arm runs this early
            if isinstance(started, asyncio.Future):
                started.cancel()
                with contextlib.suppress(BaseException):  # its own error, if it had one, is not this one
                    await started
        raise
    if hybrid and sort:
        arms["semantic"], arms["entity"] = sorted_arms(rt, bank_id, req.query, qvec, f)
    else:
        if req.mode != "keyword":
            arms["semantic"] = timed("semantic", semantic_ids(rt, bank_id, qvec, f, sort))
        if hybrid:
            arms["entity"] = timed("entity", entity_ids(rt, bank_id, req.query, qvec, f))
    windows = find_time_windows(req.query, base) if hybrid else []
    if windows:
        arms["temporal"] = timed("temporal", temporal_ids(rt, bank_id, qvec, f, windows[0]))
    names = [a for a in ARM_WEIGHTS if a in arms]
    scores, found_by = fuse(dict(zip(names, await asyncio.gather(*(arms[a] for a in names)))))
    order = best_first(scores)
    order = order[: rows_worth_reading(len(order), req.max_tokens, NEIGHBOUR_PARENTS * 2)]
    rows = await read_details(rt, bank_id, order, f, scores, found_by, req, qvec)
    # Memories are made only for the rows the cut keeps: making one costs more than anything else
    # done per row.
    kept, total = cut(rows, req.max_tokens, req.top_k, req.threshold(), lambda r: r["text"])
    results = [to_memory(r, score=score, arms=found_by.get(r["id"], []), relevance=rel) for r, score, rel in kept]
    return RecallResult(bank_id=bank_id, query=req.query, results=results, total_tokens=total)
