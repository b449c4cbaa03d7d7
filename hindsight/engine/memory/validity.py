"""The time of truth: when a memory is true, and a newer memory superseding older ones.

A memory is true from `valid_from` (unset: when it happened or when it was said, whichever came
first, else when it was stored) until `valid_to`. A newer memory supersedes older ones (a retain item naming them in
`supersedes`, or extraction when the LLM says a new fact updates a known one): each older one
gets `valid_to` (when the newer became true, never before the older began) and `superseded_by`,
and the change is recorded in its history (engine/memory/curation.py reads it). Recall leaves out what
is not true now, or was not true at `as_of`.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING

import asyncpg

from hindsight.db.binder import Fragment
from hindsight.db.sql import Q
from hindsight.engine.errors import InvalidArgument

if TYPE_CHECKING:
    from hindsight.engine.search.schemas import RecallRequest

# When a memory became true, for a row `m` whose valid_from was never set: when it happened or
# when it was said, whichever came first (a plan said today for 2030 is true from today, so a
# newer memory superseding it ends it now, not in 2030), else when it was stored.
BEGAN = "coalesce(m.valid_from, least(m.occurred_start, m.mentioned_at), m.created_at)"


def truth_conditions(req: RecallRequest, f: Fragment) -> list[str]:
    """What was true at `as_of` (it became true at or before then and had not stopped), or what
    is true now; `include_superseded` keeps memories that stopped being true."""
    if req.as_of is not None:
        when = f(req.as_of, "timestamptz")
        began = f"{BEGAN} <= {when}"
        return [began] if req.include_superseded else [began, f"(m.valid_to IS NULL OR m.valid_to > {when})"]
    return [] if req.include_superseded else ["(m.valid_to IS NULL OR m.valid_to > now())"]


async def supersede(
    conn: asyncpg.Connection,
    bank_id: str,
    older: list[uuid.UUID],
    newer: uuid.UUID,
    since: datetime,
    actor: str,
    reason: str | None = None,
) -> list[uuid.UUID]:
    """End `older` memories from `since`, replaced by `newer`, and record it in their history;
    returns those it ended (the caller holds the bank's write lock and the transaction)."""
    if not older:
        return []
    ended = await conn.fetch(Q.curation_supersede, bank_id, older, newer, since)
    if ended:
        await conn.execute(
            Q.curation_versions_superseded,
            bank_id,
            [r["id"] for r in ended],
            str(newer),
            reason,
            actor,
            [r["valid_to"] for r in ended],
        )
    return [r["id"] for r in ended]


def began(occurred: datetime | None, said: datetime | None) -> datetime | None:
    """When a new memory became true, as BEGAN reads it: when it happened or was said, the earlier."""
    known = [t for t in (occurred, said) if t is not None]
    return min(known) if known else None


async def restore_predecessors(
    conn: asyncpg.Connection, bank_id: str, successor: uuid.UUID, actor: str, reason: str
) -> list[uuid.UUID]:
    """The memories `successor` superseded are true again (it was invalidated or deleted: what it
    replaced stands), each restoration recorded in their history."""
    rows = await conn.fetch(Q.curation_predecessors_restore, bank_id, successor)
    if rows:
        ids = [r["id"] for r in rows]
        await conn.execute(Q.curation_versions_restored, bank_id, ids, str(successor), reason, actor)
    return [r["id"] for r in rows]


async def end_with_raw_units(conn: asyncpg.Connection, bank_id: str, raw_ids: list[uuid.UUID]) -> int:
    """Facts just extracted from raw units a newer memory had already superseded end with them."""
    ended = 0
    for r in await conn.fetch(Q.curation_successors_of_raw, bank_id, raw_ids):
        done = await supersede(
            conn, bank_id, [r["id"]], r["superseded_by"], r["valid_to"], "retain", "its raw unit was superseded"
        )
        ended += len(done)
    return ended


async def check_existing(conn: asyncpg.Connection, bank_id: str, ids: list[str], where: str) -> list[uuid.UUID]:
    """The memory ids a client named, each a memory of this bank (else an error naming it)."""
    wanted = [uuid.UUID(i) for i in ids]
    found = {r["id"] for r in await conn.fetch(Q.curation_existing, bank_id, wanted)}
    for i, memory_id in enumerate(wanted):
        if memory_id not in found:
            raise InvalidArgument(f"{where}[{i}]: memory {memory_id} does not exist in bank {bank_id!r}", where)
    return wanted
