"""Erasure: what a person asks to forget leaves every place it reached, in one transaction.

Forgetting a memory removes, under the bank's write lock:
- the memory and every fact extracted from it (a fact merged from several raw units too: its
  text came from this one), with their history (earlier texts included), entity links and the
  bank's counts of their words (`bank_lexemes`, `memory_terms`: triggers, migration 017 drops a
  word's row when no memory holds it);
- the entities no memory mentions any more, with their names (a trigger on memory_entities);
- its part of the text retained under its document_id (memory_documents: rebuilt from the units
  left, or removed with the last one);
- what it had superseded stands again, and a raw unit whose facts all went is in recall again;
- the mental models drawn from it are stale, left out of reflect until a refresh that no longer
  sees it (queued now); one whose content quoted the forgotten text loses that content now, and
  kept versions drawn from or quoting it go (reflection/mental_models.forget_in_models);
- finished retain operations keep no text in their payload.

After the commit, this process's cache of query vectors is emptied and a VACUUM of the touched
tables is asked for (db/vacuum.py), so the database's own copies (dead rows, their index entries,
the planner's sampled statistics) go within HINDSIGHT_API_ERASURE_VACUUM_DELAY seconds. What lies
beyond the server's reach (WAL, backups, replicas, exports and copies clients took) is in
docs/privacy.md.

Work that may reach many memories (a person, a purge, a retained document, a bank's retention)
runs in batches of BATCH memories, each its own transaction: the bank's write lock is held for one
batch at a time, so the bank's other writers take turns with it.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncpg

from hindsight.db.sql import Q
from hindsight.engine.errors import NotFound
from hindsight.engine.forgetting.schemas import (
    MAX_LISTED,
    Candidate,
    ClearMemories,
    ForgetEntity,
    ForgetMemory,
    ForgetMemoryResult,
    ForgetRetainedDocument,
    Forgotten,
    PurgeMemories,
)
from hindsight.engine.memory.records import parse_memory_id
from hindsight.engine.memory.retain import RETAIN
from hindsight.engine.reflection.mental_models import forget_in_models
from hindsight.language.cjk import has_cjk
from hindsight.language.entities import canonical

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

# Memories erased in one transaction: the write lock is held for one batch (a few hundred
# milliseconds), then the bank's other writers have their turn.
BATCH = 500


@dataclass
class Erased:
    """What one or more erasures removed, added up."""

    ids: list[uuid.UUID] = field(default_factory=list)
    kept_sources: set[uuid.UUID] = field(default_factory=set)
    entities_removed: int = 0
    documents: set[str] = field(default_factory=set)
    stale: set[str] = field(default_factory=set)
    withdrawn: set[str] = field(default_factory=set)

    def add(self, other: Erased) -> None:
        self.ids += other.ids
        self.kept_sources = (self.kept_sources | other.kept_sources) - set(self.ids)
        self.entities_removed += other.entities_removed
        self.documents |= other.documents
        self.stale |= other.stale
        self.withdrawn |= other.withdrawn

    def result(self, rt: Runtime, bank_id: str) -> Forgotten:
        return Forgotten(
            bank_id=bank_id,
            memories=len(self.ids),
            memory_ids=[str(i) for i in self.ids[:MAX_LISTED]],
            sources_kept=sorted(str(i) for i in self.kept_sources),
            entities_removed=self.entities_removed,
            retained_documents=sorted(self.documents),
            mental_models_stale=sorted(self.stale),
            mental_models_withdrawn=sorted(self.withdrawn),
            vacuum_within_seconds=vacuum_within(rt),
        )


def vacuum_within(rt: Runtime) -> float | None:
    return rt.settings.erasure_vacuum_delay if rt.settings.erasure_vacuum else None


async def closure(conn: asyncpg.Connection, bank_id: str, seeds: list[uuid.UUID], include_sources: bool) -> list:
    """The memories forgetting `seeds` erases (rows of id), with the raw units of seed facts when
    `include_sources`."""
    if include_sources and seeds:
        seeds = [*seeds, *(r[0] for r in await conn.fetch(Q.forget_sources_of, bank_id, seeds))]
    return [r[0] for r in await conn.fetch(Q.forget_closure, bank_id, list(dict.fromkeys(seeds)))]


async def erase(
    conn: asyncpg.Connection,
    rt: Runtime,
    bank_id: str,
    seeds: list[uuid.UUID],
    actor: str,
    include_sources: bool = False,
) -> Erased:
    """Forget `seeds` (memories of the bank) and all they reached (the module docstring), in the
    caller's transaction, which holds the bank's write lock."""
    ids = await closure(conn, bank_id, seeds, include_sources)
    if not ids:
        return Erased()
    kept = {r[0] for r in await conn.fetch(Q.forget_kept_sources, bank_id, ids)}
    rows = await conn.fetch(Q.forget_texts, bank_id, ids)
    texts = [t for r in rows for t in (r["text"], *r["earlier"]) if t]
    documents = sorted({r["document_id"] for r in rows if r["document_id"] is not None})
    words = [r[0] for r in await conn.fetch(Q.forget_lexemes, bank_id, ids)]
    entities = [r[0] for r in await conn.fetch(Q.forget_entities_linked, bank_id, ids)]
    restored = await conn.fetch(Q.forget_predecessors_restore, bank_id, ids)
    if restored:
        await conn.execute(
            Q.forget_versions_restored,
            bank_id,
            [r["id"] for r in restored],
            [r["superseded_by"] for r in restored],
            actor,
        )
    await conn.execute(Q.memory_release_entities, bank_id, ids)
    await conn.execute(Q.memory_delete_many, bank_id, ids)
    if kept:
        await conn.execute(Q.forget_raw_units_return, bank_id, sorted(kept))
    changed = set()
    if documents:
        changed |= {r[0] for r in await conn.fetch(Q.forget_source_rebuild, bank_id, documents)}
        changed |= {r[0] for r in await conn.fetch(Q.forget_sources_emptied, bank_id, documents)}
    left = await conn.fetchval(Q.forget_entities_left, bank_id, entities) if entities else 0
    vanished = {r[0] for r in await conn.fetch(Q.forget_vanished, bank_id, words)} if words else set()
    stale, withdrawn = await forget_in_models(
        conn, bank_id, {str(i) for i in ids}, texts, vanished, rt.settings.operation_max_attempts
    )
    await conn.execute(Q.forget_retain_payloads, bank_id, RETAIN)
    return Erased(
        ids=ids,
        kept_sources=kept,
        entities_removed=len(entities) - left,
        documents=changed,
        stale=set(stale),
        withdrawn=set(withdrawn),
    )


def after_erasure(rt: Runtime) -> None:
    """What follows a committed erasure in this process: the database's copies are vacuumed soon,
    and no cached query vector keeps a query that named what was forgotten."""
    rt.vacuum.request()
    rt.embedder.forget_queries()


async def in_batches(
    rt: Runtime,
    bank_id: str,
    next_batch: Callable[[asyncpg.Connection], Awaitable[list[uuid.UUID]]],
    actor: str,
    include_sources: bool = False,
) -> Erased:
    """Erase what `next_batch` finds, a batch a transaction, until it finds nothing: each batch
    is read under the write lock it is erased under, so two erasures of one bank (another
    process's retention, a person's request) never erase a memory twice."""
    total = Erased()
    while True:
        async with rt.writes.open(bank_id) as conn:
            batch = await next_batch(conn)
            if not batch:
                break
            total.add(await erase(conn, rt, bank_id, batch, actor, include_sources))
        await asyncio.sleep(0)  # the bank's other writers queue for the lock in turn
    if total.ids:
        after_erasure(rt)
    return total


def _candidates(rows, why: Callable[[asyncpg.Record], str]) -> list[Candidate]:
    return [
        Candidate(
            id=str(r["id"]),
            text=r["text"],
            type=r["kind"],
            created_at=r["created_at"],
            document_id=r["document_id"],
            why=why(r),
        )
        for r in rows
    ]


async def forget_memory(rt: Runtime, bank_id: str, req: ForgetMemory, actor: str) -> ForgetMemoryResult:
    """One memory, the facts drawn from it (and with include_sources, a fact's raw units)."""
    mid = parse_memory_id(req.memory_id)
    # A dry run reads without the write lock; a forget reads and writes under it. Either way,
    # nothing is read or written before the memory is known to be the bank's.
    async with rt.pool.acquire() if req.dry_run else rt.writes.open(bank_id) as conn:
        if not await conn.fetchval(Q.memory_exists, bank_id, mid):
            raise NotFound(f"memory {req.memory_id} does not exist in bank {bank_id!r}", "memory_id")
        if req.dry_run:
            ids = await closure(conn, bank_id, [mid], req.include_sources)
            rows = await conn.fetch(Q.forget_candidates, bank_id, ids[:MAX_LISTED])
            kept = {r[0] for r in await conn.fetch(Q.forget_kept_sources, bank_id, ids)}
            sources = {r[0] for r in await conn.fetch(Q.forget_sources_of, bank_id, [mid])}

            def why(r: asyncpg.Record) -> str:
                return "memory" if r["id"] == mid else ("source" if r["id"] in sources else "fact")

            return ForgetMemoryResult(
                bank_id=bank_id,
                memory_id=req.memory_id,
                deleted=False,
                dry_run=True,
                memories=len(ids),
                memory_ids=[str(i) for i in ids[:MAX_LISTED]],
                would_forget=_candidates(rows, why),
                sources_kept=sorted(str(i) for i in kept),
            )
        erased = await erase(conn, rt, bank_id, [mid], actor, req.include_sources)
    after_erasure(rt)
    return ForgetMemoryResult(memory_id=req.memory_id, **erased.result(rt, bank_id).model_dump())


async def forget_entity(rt: Runtime, bank_id: str, req: ForgetEntity, actor: str) -> Forgotten:
    """Every memory that names an entity ("forget everything about Bob"): linked to it, or
    holding its name as words (or anywhere, for a name in CJK script), with the facts drawn from
    them."""
    name = req.name.strip()
    cjk = has_cjk(name)
    async with rt.pool.acquire() as conn:
        entity = await conn.fetchrow(Q.forget_entity_find, bank_id, canonical(name))
    entity_id = entity["id"] if entity is not None else -1
    if req.dry_run:
        async with rt.pool.acquire() as conn:
            rows = await conn.fetch(Q.forget_entity_memories, bank_id, entity_id, name, cjk, MAX_LISTED)
            total = await conn.fetchval(Q.forget_entity_count, bank_id, entity_id, name, cjk)
        return Forgotten(
            bank_id=bank_id,
            dry_run=True,
            memories=total,
            memory_ids=[str(r["id"]) for r in rows],
            would_forget=_candidates(rows, lambda r: "linked" if r["linked"] else "named"),
            vacuum_within_seconds=vacuum_within(rt),
        )

    async def batch(conn: asyncpg.Connection) -> list[uuid.UUID]:
        return [r["id"] for r in await conn.fetch(Q.forget_entity_memories, bank_id, entity_id, name, cjk, BATCH)]

    return (await in_batches(rt, bank_id, batch, actor)).result(rt, bank_id)


async def purge_memories(rt: Runtime, bank_id: str, req: PurgeMemories, actor: str) -> Forgotten:
    """Forget, for good, memories that are no longer true (invalidated, or ended)."""
    if req.dry_run:
        async with rt.pool.acquire() as conn:
            ids = [
                r[0] for r in await conn.fetch(Q.forget_purgeable, bank_id, req.invalidated, req.superseded, MAX_LISTED)
            ]
            total = await conn.fetchval(Q.forget_purgeable_count, bank_id, req.invalidated, req.superseded)
            rows = await conn.fetch(Q.forget_candidates, bank_id, ids)
        return Forgotten(
            bank_id=bank_id,
            dry_run=True,
            memories=total,
            memory_ids=[str(i) for i in ids],
            would_forget=_candidates(rows, lambda r: "invalidated" if r["invalidated_at"] else "superseded"),
            vacuum_within_seconds=vacuum_within(rt),
        )

    async def batch(conn: asyncpg.Connection) -> list[uuid.UUID]:
        return [r[0] for r in await conn.fetch(Q.forget_purgeable, bank_id, req.invalidated, req.superseded, BATCH)]

    return (await in_batches(rt, bank_id, batch, actor)).result(rt, bank_id)


async def forget_retained_document(rt: Runtime, bank_id: str, req: ForgetRetainedDocument, actor: str) -> Forgotten:
    """Everything retained under a document_id (a conversation, a document): its units, the facts
    drawn from them, and its retained text."""
    async with rt.pool.acquire() as conn:
        had_text = bool(await conn.fetchval(Q.source_exists, bank_id, req.document_id))
        units = await conn.fetchval(Q.forget_source_count, bank_id, req.document_id)
    if not units and not had_text:
        raise NotFound(f"document {req.document_id!r} was not retained in bank {bank_id!r}", "document_id")
    if req.dry_run:
        async with rt.pool.acquire() as conn:
            ids = [r[0] for r in await conn.fetch(Q.forget_source_memories, bank_id, req.document_id, MAX_LISTED)]
            rows = await conn.fetch(Q.forget_candidates, bank_id, ids)
        return Forgotten(
            bank_id=bank_id,
            dry_run=True,
            memories=units,
            memory_ids=[str(i) for i in ids],
            would_forget=_candidates(rows, lambda r: "document"),
            retained_documents=[req.document_id] if had_text else [],
            vacuum_within_seconds=vacuum_within(rt),
        )

    async def batch(conn: asyncpg.Connection) -> list[uuid.UUID]:
        return [r[0] for r in await conn.fetch(Q.forget_source_memories, bank_id, req.document_id, BATCH)]

    erased = await in_batches(rt, bank_id, batch, actor)
    async with rt.writes.open(bank_id) as conn:  # text retained with no memory left under it
        if await conn.fetchval(Q.sources_delete_one, bank_id, req.document_id):
            erased.documents.add(req.document_id)
    if not erased.ids:
        after_erasure(rt)
    return erased.result(rt, bank_id)


async def clear_memories(rt: Runtime, bank_id: str, req: ClearMemories, actor: str) -> Forgotten:
    """Every memory of the bank (or of one type); its settings, documents and models stay.
    Hindsight's observations are none here: clearing them forgets nothing."""
    if req.type == "observation":
        return Forgotten(bank_id=bank_id, memories=0)

    async def batch(conn: asyncpg.Connection) -> list[uuid.UUID]:
        return [r[0] for r in await conn.fetch(Q.forget_all_memories, bank_id, req.type, BATCH)]

    return (await in_batches(rt, bank_id, batch, actor)).result(rt, bank_id)
