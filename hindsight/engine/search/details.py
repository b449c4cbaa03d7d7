"""The rows recall ranks and the memories it returns, in two reads: first what ranking needs of the
arms' hits and of the memories beside them in their sources (narrow rows: recall_scores), then,
after the cut to the caller's limits, the kept memories in full (recall_rows)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hindsight.db.binder import Binder, Fragment
from hindsight.db.sql import Q, fill
from hindsight.engine.memory.records import COLUMNS
from hindsight.engine.search.fusion import Row
from hindsight.engine.search.lexical import rarity_score
from hindsight.engine.search.relevance import relevance_from, word_share_sql
from hindsight.engine.search.schemas import RecallRequest
from hindsight.language.time_expressions import TimeWindow

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


@dataclass(frozen=True, slots=True)
class Scored:
    """A row read for ranking, with what the cut needs: its relevance and its length."""

    row: Row
    relevance: float
    chars: int


@dataclass(frozen=True, slots=True)
class Words:
    """The query words the keyword arm weighed, and each one's rarity (idf) in the bank."""

    words: list[str]
    idf: list[float]


async def read_scores(
    rt: Runtime,
    bank_id: str,
    hits: list,
    f: Fragment,
    req: RecallRequest,
    qvec,
    words: Words | None,
    window: TimeWindow | None,
    neighbours: bool,
) -> list[Scored]:
    """The hits and (`neighbours`) the memories just before and after each, under the filters, with
    their similarity, keyword score, time-window flag, relevance and length; one round trip."""
    if not hits:
        return []
    p = Binder(bank_id, hits, qvec, neighbours, words.words if words else [])
    keyword = rarity_score(len(words.words), p(words.idf, "float8[]"), row="m") if words and words.words else "0"
    in_window = "NULL::boolean"
    if window is not None:
        start, end = p(window.start), p(window.end)
        in_window = (
            f"coalesce((m.occurred_start < {end} AND m.occurred_end > {start})"
            f" OR (m.mentioned_at >= {start} AND m.mentioned_at < {end}), false)"
        )
    sql = fill(
        Q.recall_scores,
        keyword=keyword,
        window=in_window,
        share=word_share_sql("m.tsv", p, [req.query]),
        filter=f.into(p),
    )
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(sql, *p.values)
    out = []
    for r in rows:
        similarity = _finite(r["similarity"])
        row = Row(r["id"], r["source_id"], r["position"], similarity, r["keyword"], r["in_window"], r["terms"])
        # A vector of zeros has no direction: nothing about it is relevant, as relevance_of has it.
        rel = relevance_from(req.mode, similarity, r["share"]) if math.isfinite(r["similarity"]) else 0.0
        out.append(Scored(row, rel, r["chars"]))
    return out


def _finite(x: float) -> float:
    """A similarity as ranking takes it: a stored vector of zeros (an import can hold one) has no
    direction, and its NaN would sort anywhere; it counts as no similarity."""
    return float(x) if math.isfinite(x) else 0.0


async def read_memories(rt: Runtime, bank_id: str, ids: list) -> dict:
    """The memories `ids` in full, by id (one deleted since it was ranked is absent)."""
    if not ids:
        return {}
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(fill(Q.recall_rows, columns=COLUMNS), bank_id, ids)
    return {r["id"]: r for r in rows}
