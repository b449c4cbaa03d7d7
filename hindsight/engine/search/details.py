"""The fused hits read in full, with their neighbouring units: in a conversation the answer is
often the next turn, so the best hits bring the units just before and after them (same source,
adjacent position), scored just below them."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from hindsight.db.binder import Binder, Fragment
from hindsight.db.sql import Q, fill
from hindsight.engine.memory.records import COLUMNS
from hindsight.engine.search.relevance import relevance_of, relevance_sql
from hindsight.engine.search.schemas import RecallRequest

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

# The best hits whose neighbours are read, and the share of a hit's score a neighbour gets.
NEIGHBOUR_PARENTS = 8
NEIGHBOUR_DECAY = 0.5


def with_neighbours(order: list, rows: Mapping[Any, Mapping], scores: Mapping, parents: list, found_by: dict) -> dict:
    """The hits of `order` that were read (`rows` by id, each with source_id and position), each
    with its fused score, plus the units adjacent to each of `parents` that are not hits
    themselves, scored NEIGHBOUR_DECAY of their parent's (found_by notes them as "neighbour")."""
    scored: dict = {mid: scores[mid] for mid in order if mid in rows}
    by_pos = {(r["source_id"], r["position"]): mid for mid, r in rows.items()}
    for parent in parents:
        r = rows.get(parent)
        if r is None:
            continue
        for pos in (r["position"] - 1, r["position"] + 1):
            nid = by_pos.get((r["source_id"], pos))
            if nid is not None and nid not in scored:
                scored[nid] = scores[parent] * NEIGHBOUR_DECAY
                found_by.setdefault(nid, []).append("neighbour")
    return scored


async def read_details(
    rt: Runtime, bank_id: str, order: list, f: Fragment, scores: Mapping, found_by: dict, req: RecallRequest, qvec
) -> list[tuple]:
    """One round trip: the fused hits, their relevance, plus the neighbours of the best of them
    (in hybrid mode); returns (row, score, relevance) best first.

    The hits and their neighbours are united by id and each row is read once: a UNION of whole
    rows sorted them on every column, embedding included (bench/README.md, "Recall's PostgreSQL
    statements")."""
    if not order:
        return []
    parents = order[:NEIGHBOUR_PARENTS] if req.mode == "hybrid" else []
    p = Binder(bank_id, order, parents)
    sql = fill(
        Q.recall_details,
        filter=f.into(p),
        columns=COLUMNS,
        relevance=relevance_sql(req.mode, "m.embedding", "m.tsv", p, [qvec], [req.query]),
    )
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(sql, *p.values)
    by_id = {r["id"]: r for r in rows}
    scored = with_neighbours(order, by_id, scores, parents, found_by)
    return [
        (by_id[mid], round(scored[mid], 6), relevance_of(by_id[mid]["relevance"]))
        for mid in sorted(scored, key=scored.__getitem__, reverse=True)
    ]
