"""The semantic arm: the bank's memories nearest the query's embedding, by a walk of the HNSW index
all banks share, or by sorting the bank's own rows when it is small beside the others."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hindsight.db.binder import Binder, Fragment
from hindsight.db.sql import Q, fill
from hindsight.engine.banks.sizes import EXACT_READ_ROWS
from hindsight.engine.search.arms.running import fetch_ids
from hindsight.engine.search.fusion import ARM_LIMIT

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


async def semantic_ids(rt: Runtime, bank_id: str, qvec, f: Fragment, sort: bool) -> list:
    """The semantic arm: the bank's memories nearest the query, by a walk of the HNSW index all
    banks share, or (`sort`) by sorting the bank's own rows when it is small beside the others
    (engine/banks/sizes.py; PostgreSQL's planner prices the walk as if the bank filter cost nothing, and
    walked a bank of 5,000 memories beside one of 100,000 at 16-42 ms)."""
    if sort:
        p = Binder(bank_id, qvec, ARM_LIMIT, EXACT_READ_ROWS)
        return await fetch_ids(rt, fill(Q.recall_semantic_exact, filter=f.into(p)), *p.values)
    p = Binder(bank_id, qvec, ARM_LIMIT)
    return await fetch_ids(rt, fill(Q.recall_semantic, filter=f.into(p)), *p.values)
