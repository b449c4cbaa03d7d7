"""The semantic arm: the bank's memories nearest the query's embedding, by a walk of the HNSW index
all banks share, or by sorting the bank's own rows when it is small beside the others."""

from __future__ import annotations

from typing import TYPE_CHECKING

from hindsight.db.binder import Binder, Fragment
from hindsight.db.sql import Q, fill
from hindsight.engine.banks.sizes import EXACT_READ_ROWS
from hindsight.engine.search.arms.running import fetch_ids, fetch_walks
from hindsight.engine.search.fusion import ARM_LIMIT

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


def semantic_sql(p: Binder, vector: str, f: Fragment, sort: bool) -> str:
    """The arm's query (its ids, nearest first) for the bank $1 of `p` and the query vector bound
    at `vector`: by sorting the bank's own rows (`sort`, engine/banks/sizes.py; PostgreSQL's
    planner prices the walk as if the bank filter cost nothing, so it would walk a small bank
    beside a big one) or by a walk of the HNSW index all banks share.
    Its own statement, or a part of recall_ranked's."""
    if sort:
        return fill(
            Q.recall_semantic_sort, vector=vector, limit=p(ARM_LIMIT), read=p(EXACT_READ_ROWS), filter=f.into(p)
        )
    return fill(Q.recall_semantic_walk, vector=vector, limit=p(ARM_LIMIT), filter=f.into(p))


async def semantic_ids(rt: Runtime, bank_id: str, qvec, f: Fragment, sort: bool) -> list:
    """The semantic arm on its own: the bank's memories nearest the query (semantic_sql). A walk
    runs on a fixed connection (db/pool.py, _FIXED: planned once, always a walk), unless the
    request names conditions of its own (tags, types, a filter expression, a time: the filters
    bind values): then on a shared one, planned for their values each call (running.fetch_walks;
    a selective condition can make sorting the few memories that pass it cheaper than a walk
    that reads far to find them, and complete). A sort runs on a shared connection."""
    p = Binder(bank_id)
    sql = semantic_sql(p, p(qvec), f, sort)
    if sort:
        return await fetch_ids(rt.pool, sql, *p.values)
    if f.binds:
        return (await fetch_walks(rt.pool, [(sql, p.values)]))[0]
    return await fetch_ids(rt.fixed, sql, *p.values)
