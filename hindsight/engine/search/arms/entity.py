"""The entity arm: memories linked to entities the query names (any 1-3 word n-gram matched against
canonical names, so "melanie" finds "Melanie"), ranked by the rarity of the entities they share
(a speaker named in half the bank counts for little), then similarity; an entity too common to
read link by link (ENTITY_SCAN_CAP) contributes its memories nearest the query."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable
from typing import TYPE_CHECKING

from hindsight.db.binder import Binder, Fragment
from hindsight.db.sql import Q, fill
from hindsight.engine.banks.sizes import EXACT_READ_ROWS
from hindsight.engine.search.arms.running import fetch_ids, timed
from hindsight.engine.search.fusion import ARM_LIMIT
from hindsight.language.query_terms import entity_candidates

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


# The entity arm reads the links of the named entities, rarest first, up to this many mentions; a
# commoner entity's memories come from a walk of the vector index (recall_entity_walk). At 3,000
# the entities just under it made the arm's tail (mean 2.4 ms, median 0.8, at 100k with links);
# 1,000 took ~14% off PostgreSQL's time a recall for the same R@10 and R@5 (bench/README.md,
# "Entity arm: a name in every memory").
ENTITY_SCAN_CAP = 1_000


async def entity_ids(rt: Runtime, bank_id: str, query: str, qvec, f: Fragment) -> list:
    """The entity arm of a bank that is walked: the memories of the named entities rarest first
    up to ENTITY_SCAN_CAP mentions, ranked (recall_entity); when they are fewer than ARM_LIMIT, the
    memories of the commoner ones nearest the query after them (recall_entity_walk)."""
    p = Binder(bank_id, entity_candidates(query), ARM_LIMIT, qvec, ENTITY_SCAN_CAP)
    sql = fill(Q.recall_entity, filter=f.into(p), rarity=Q.recall_entity_rarity)
    async with rt.pool.acquire() as conn:
        row = await conn.fetchrow(sql, *p.values)
    ids, common = list(row["ids"]), list(row["common"])
    if len(ids) >= ARM_LIMIT or not common:
        return ids
    p = Binder(bank_id, common, ARM_LIMIT - len(ids), qvec, ids)
    return ids + await fetch_ids(rt, fill(Q.recall_entity_walk, filter=f.into(p)), *p.values, planned=True)


def sorted_arms(rt: Runtime, bank_id: str, query: str, qvec, f: Fragment) -> tuple[Awaitable[list], Awaitable[list]]:
    """The semantic and entity arms of a bank that is sorted, from one statement
    (recall_semantic_entity_exact): the entity arm breaks its ties by the distances the sort took,
    instead of reading each linked memory again (bench/README.md, "Semantic and entity arms: one
    sort for a small bank"). The statement's time is observed as each arm's."""
    p = Binder(bank_id, qvec, ARM_LIMIT, EXACT_READ_ROWS, entity_candidates(query))
    sql = fill(Q.recall_semantic_entity_exact, filter=f.into(p), rarity=Q.recall_entity_rarity)

    async def both() -> tuple[list, list]:
        async with rt.pool.acquire() as conn:
            row = await conn.fetchrow(sql, *p.values)
        return list(row["semantic"]), list(row["entity"])

    task = asyncio.ensure_future(timed(("semantic", "entity"), both()))

    async def arm(i: int) -> list:
        return (await task)[i]

    return arm(0), arm(1)
