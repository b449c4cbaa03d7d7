"""Retain without an LLM: items become bounded units with embeddings, entities and times.

The CPU work (splitting, entity and time extraction, embedding) runs in worker threads so the
event loop keeps serving recalls; the database work is one transaction, so an accepted call is
committed whole or not at all. That transaction holds the bank's write lock (runtime.BankWrites),
so two concurrent retains of one document_id cannot interleave their units; everything is
embedded before it is taken, so the lock is held for database work only.
"""

from __future__ import annotations

import json
import re
import uuid
from collections import Counter
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import TYPE_CHECKING

import asyncpg
from pydantic import BaseModel

from hindsight.db.sql import Q
from hindsight.engine.banks.registry import ensure_bank
from hindsight.engine.errors import InvalidArgument, NotFound
from hindsight.engine.memory.ids import new_memory_id
from hindsight.engine.memory.schemas import RetainItem, RetainResult
from hindsight.engine.memory.sources import delete_sources, store_sources
from hindsight.engine.memory.validity import began, check_existing, supersede
from hindsight.engine.memory.vectors import memory_vectors
from hindsight.engine.notify import events
from hindsight.engine.queue import operations as ops
from hindsight.language.chinese_names import Budget
from hindsight.language.cjk import HAN_RUN
from hindsight.language.entities import canonical, extract_entities, merge_entities
from hindsight.language.time_expressions import find_time_windows
from hindsight.metrics import RETAIN_ITEMS, RETAIN_UNITS
from hindsight.text import split_units

if TYPE_CHECKING:
    from hindsight.engine.queue.operations import Job
    from hindsight.engine.runtime import Runtime


_FIRST_PERSON = re.compile(r"\b(I|I'm|I've|I'd|I'll|me|my|mine|myself|we|we're|our|us)\b")
COPY_COLUMNS = [
    "id",
    "bank_id",
    "text",
    "kind",
    "context",
    "embedding",
    "occurred_start",
    "occurred_end",
    "mentioned_at",
    "tags",
    "metadata",
    "document_id",
    "source_id",
    "position",
    "given_entities",
    "entity_names",
]


@dataclass
class Unit:
    id: uuid.UUID
    text: str
    kind: str
    item: RetainItem
    source_id: str
    position: int
    occurred: tuple[datetime, datetime] | None
    entities: list[tuple[str, str]] = field(default_factory=list)


def memory_type(text: str) -> str:
    """Without an LLM: first-person statements are the speaker's experience, the rest world facts."""
    return "experience" if _FIRST_PERSON.search(text) else "world"


def check_items(items: list[RetainItem], max_items: int, max_chars: int) -> None:
    if not items:
        raise InvalidArgument("items: at least one item is required", "items")
    if len(items) > max_items:
        raise InvalidArgument(f"items: {len(items)} items exceed the limit of {max_items} per call", "items")
    for i, it in enumerate(items):
        if len(it.content) > max_chars:
            where = "content" if len(items) == 1 else f"items[{i}].content"
            raise InvalidArgument(f"{where}: {len(it.content)} characters exceed the limit of {max_chars}", where)


def prepare_units(items: list[RetainItem], unit_max_chars: int) -> list[Unit]:
    units: list[Unit] = []
    next_pos: Counter[str] = Counter()
    budget = Budget(sum(len(it.content) for it in items))
    for it in items:
        source = f"doc:{it.document_id}" if it.document_id else f"item:{uuid.uuid4()}"
        given = it.given_entities()
        for piece in split_units(it.content, unit_max_chars):
            windows = find_time_windows(piece, it.anchor, anchored=not it.timeless)
            occurred = (windows[0].start, windows[0].end) if windows else None
            units.append(
                Unit(
                    id=new_memory_id(),
                    text=piece,
                    kind=memory_type(piece),
                    item=it,
                    source_id=source,
                    position=next_pos[source],
                    occurred=occurred,
                    entities=merge_entities(given, extract_entities(piece, budget)),
                )
            )
            next_pos[source] += 1
    return units


async def store_units(conn: asyncpg.Connection, bank_id: str, units: list[Unit], vectors) -> None:
    """Write units, their entities and links; the caller holds the transaction. The entities
    are written first so that each unit carries their names as stored (migration 012)."""
    now = datetime.now(UTC)
    entities = await add_entities(conn, bank_id, [(u.id, u.entities) for u in units])
    named = [(u.id, {canonical(n) for n, _ in u.entities}) for u in units]
    records = []
    for u, vec, (_, mentioned) in zip(units, vectors, named):
        it = u.item
        given = it.given_entities()
        records.append(
            (
                u.id,
                bank_id,
                u.text,
                u.kind,
                it.context,
                vec,
                u.occurred[0] if u.occurred else None,
                u.occurred[1] if u.occurred else None,
                None if it.timeless else (it.timestamp or now),
                it.tags,
                json.dumps(it.metadata, default=str),
                it.document_id,
                u.source_id,
                u.position,
                json.dumps(given) if given else None,
                sorted(entities[c][1] for c in mentioned),
            )
        )
    await conn.copy_records_to_table("memories", records=records, columns=COPY_COLUMNS)
    await _link(conn, bank_id, named, entities)


async def link_entities(conn: asyncpg.Connection, bank_id: str, mentions_of: list[tuple[uuid.UUID, list]]) -> None:
    """Link stored memories to the entities they mention, (name, kind) pairs each, adding to the
    entities' mention counts; the caller holds the transaction."""
    entities = await add_entities(conn, bank_id, mentions_of)
    await _link(conn, bank_id, [(mid, {canonical(n) for n, _ in ns}) for mid, ns in mentions_of], entities)


async def add_entities(
    conn: asyncpg.Connection, bank_id: str, mentions_of: list[tuple[uuid.UUID, list]]
) -> dict[str, tuple[int, str]]:
    """Upsert the entities these memories mention, adding to their mention counts; returns each
    one's (id, stored name) by canonical name (an existing entity keeps its first name)."""
    mentions: Counter[str] = Counter()
    names: dict[str, tuple[str, str]] = {}
    for _, entities in mentions_of:
        for name, kind in entities:
            c = canonical(name)
            mentions[c] += 1
            names.setdefault(c, (name, kind))
    if not mentions:
        return {}
    keys = sorted(mentions)  # fixed order: concurrent upserts of the same names cannot deadlock
    rows = await conn.fetch(
        Q.entity_mentions_add,
        bank_id,
        [names[k][0] for k in keys],
        keys,
        [names[k][1] for k in keys],
        [mentions[k] for k in keys],
    )
    return {r["canonical"]: (r["id"], r["name"]) for r in rows}


async def _link(conn, bank_id: str, named: list[tuple[uuid.UUID, set[str]]], entities: dict) -> None:
    """Link each memory to the entities it names (canonical names; `entities` from add_entities)."""
    ent_ids, mem_ids = [], []
    for memory_id, mentioned in named:
        for c in mentioned:
            ent_ids.append(entities[c][0])
            mem_ids.append(memory_id)
    if ent_ids:
        await conn.execute(Q.memory_entities_link, ent_ids, mem_ids, bank_id)


async def supersede_named(conn: asyncpg.Connection, bank_id: str, units: list[Unit], actor: str) -> None:
    """Each item naming memories in `supersedes` ends them; its first unit replaces them, from
    when it happened (or was said, or now). A named id that is not the bank's fails the retain."""
    first: dict[int, Unit] = {}
    for u in units:
        first.setdefault(id(u.item), u)
    for i, unit in enumerate(first.values()):
        if not unit.item.supersedes:
            continue
        where = "supersedes" if len(first) == 1 else f"items[{i}].supersedes"
        older = await check_existing(conn, bank_id, unit.item.supersedes, where)
        since = began(unit.occurred[0] if unit.occurred else None, unit.item.anchor) or datetime.now(UTC)
        await supersede(conn, bank_id, older, unit.id, since, actor)


RETAIN = "retain"  # operation kinds (engine/worker/operation_kinds.py): a retain stored later, and fact extraction
EXTRACT = "retain_extract"

# Units embedded per step of a large retain: between steps the CPU slots are free for others
# (a recall's query embedding waits for at most one step, not for a whole bulk import).
STEP_UNITS = 128

# A retain of at most SHORT_ITEMS items and SHORT_CHARS characters in all (an agent's one fact,
# a turn or two: about the model's 256-token window) is a query's worth of model work. It is split
# and embedded in one hop on the query threads (embedder.short), in turn with recalls. Through the
# CPU slots it would take two turns at a semaphore of two, each handover waiting for the event
# loop, so under many clients small retains would wait far longer than recalls (bench/README.md,
# "Small retains in the query lane").
SHORT_ITEMS = 4
SHORT_CHARS = 1_200


def _short(items: list[RetainItem]) -> bool:
    """Small enough for the query threads, and cheap to split there: text with Han characters is
    not, since Chinese names are found by jieba's tagger, pure Python at ~20-40 us a character
    of prose and up to ~100 on chosen text (language/chinese_names.py): 1,200 characters could hold a
    query thread for ~30 queries' worth. It takes the CPU slots as bulk work does."""
    return (
        len(items) <= SHORT_ITEMS
        and sum(len(it.content) for it in items) <= SHORT_CHARS
        and not any(HAN_RUN.search(it.content) for it in items)
    )


def _prepared(items: list[RetainItem], unit_max_chars: int, embedder) -> tuple[list[Unit], object]:
    """A small retain's units and their vectors, in one worker thread."""
    units = prepare_units(items, unit_max_chars)
    return units, memory_vectors(embedder, [u.text for u in units], spread=False)


async def retain(
    rt: Runtime,
    bank_id: str,
    items: list[RetainItem],
    on_commit=None,
    actor: str = "retain",
    operation_id: uuid.UUID | None = None,
) -> RetainResult:
    """Store `items` in one transaction. `on_commit(conn, result)` runs inside it, last: a
    background retain marks its operation done there, so a retry cannot store the items twice.
    An item's `supersedes` ends the memories it names (engine/memory/validity.py), recorded as `actor`'s.
    With an LLM the result names the fact extraction queued after it (extraction_awaited). The
    bank's webhooks hear of it (retain.completed) in the same transaction; `operation_id` is the
    background retain's, which the event names."""
    s = rt.settings
    check_items(items, s.max_batch_items, s.max_content_chars)

    async def embedded(chunk: list[Unit]):
        return await rt.cpu_slots.run(memory_vectors, rt.embedder, [u.text for u in chunk])

    # Every vector is computed before the bank's write lock is taken: the transaction holds the
    # lock (and a connection) only for the database work, so writers queued behind a bulk import
    # wait for its COPY, not for its embedding (bench/README.md, "Retain pipeline", measured the
    # overlap this gives up).
    # The bank's gates bound its share of the model: a lane for the query threads it shares with
    # recalls, its bulk gate for the CPU slots. Neither is held while the write queue is waited for:
    # a bank's writers take turns there, and lanes held by waiting writers kept its recalls waiting.
    if _short(items):
        async with rt.gates.reading(bank_id):
            units, only = await rt.embedder.short(_prepared, items, s.unit_max_chars, rt.embedder)
        steps, vectors = ([units], [only]) if units else ([], [])
    else:
        async with rt.gates.bulk(bank_id):
            units = await rt.cpu_slots.run(prepare_units, items, s.unit_max_chars)
            steps = [units[i : i + STEP_UNITS] for i in range(0, len(units), STEP_UNITS)]
            vectors = [await embedded(step) for step in steps]
    doc_ids = sorted({it.document_id for it in items if it.document_id})
    async with rt.writes.open(bank_id) as conn:
        await ensure_bank(conn, bank_id)
        if doc_ids:
            await delete_sources(conn, bank_id, doc_ids)
            await store_sources(conn, bank_id, items)
        for step, step_vectors in zip(steps, vectors):
            await store_units(conn, bank_id, step, step_vectors)
        await supersede_named(conn, bank_id, units, actor)
        op_id = None
        if rt.llm.configured("retain"):
            op_id = await ops.enqueue_operation(
                conn,
                bank_id,
                EXTRACT,
                {"raw_ids": [str(u.id) for u in units]},
                max_attempts=s.operation_max_attempts,
            )
        result = RetainResult(
            bank_id=bank_id,
            memory_ids=[str(u.id) for u in units],
            items=len(items),
            units=len(units),
            operation_id=str(op_id) if op_id else None,
            extraction="queued" if op_id else "none",
        )
        announced = await events.fire(
            rt, conn, bank_id, events.RETAIN_COMPLETED, _retained(items, units), operation_id or op_id
        )
        if on_commit is not None:
            await on_commit(conn, result)
    RETAIN_ITEMS.inc(len(items))
    RETAIN_UNITS.labels("raw").inc(len(units))
    if op_id or announced:
        rt.queue.poke()
    return result


def _retained(items: list[RetainItem], units: list[Unit]) -> dict:
    """What retain.completed says of a retain (the reference's fields first)."""
    documents = sorted({it.document_id for it in items if it.document_id})
    return {
        "document_id": documents[0] if len(documents) == 1 else None,
        "tags": sorted({t for it in items for t in it.tags}),
        "memory_unit_count": len(units),
        "document_ids": documents,
        "items": len(items),
        "memory_ids": [str(u.id) for u in units][:1000],
    }


async def extraction_awaited(rt: Runtime, bank_id: str, result: RetainResult) -> RetainResult:
    """A retain's result once its fact extraction has ended (`wait=true`), or as far as it got in
    HINDSIGHT_API_RETAIN_WAIT_TIMEOUT."""
    if result.operation_id is None:
        return result
    op = await rt.queue.wait(bank_id, result.operation_id, rt.settings.retain_wait_timeout)
    result.extraction = op.status
    if op.status == "succeeded":
        result.memory_ids = op.result["memory_ids"]
        result.facts = op.result["new_facts"] + op.result["merged_facts"]
        if not result.facts:
            result.extraction = "empty"
    return result


class RetainAccepted(BaseModel):
    """A retain queued as an operation: its items are committed with the operation, stored by
    the worker; the operation's result is the RetainResult (and, with an LLM, the id of the
    fact extraction that follows)."""

    bank_id: str
    items: int
    operation_id: str


async def retain_later(rt: Runtime, bank_id: str, items: list[RetainItem], actor: str = "retain") -> RetainAccepted:
    """Accept now, store in the background: the items are durable once this returns."""
    s = rt.settings
    check_items(items, s.max_batch_items, s.max_content_chars)
    payload = {"items": [it.model_dump(mode="json", exclude_none=True) for it in items], "actor": actor}
    async with rt.pool.acquire() as conn:
        async with conn.transaction():
            await ensure_bank(conn, bank_id)
            op_id = await ops.enqueue_operation(conn, bank_id, RETAIN, payload, max_attempts=s.operation_max_attempts)
    rt.queue.poke()
    return RetainAccepted(bank_id=bank_id, items=len(items), operation_id=str(op_id))


async def reprocess_source(rt: Runtime, bank_id: str, document_id: str, actor: str = "retain") -> RetainAccepted:
    """Retain a document's text again, as it was retained (its tags, metadata, context and first
    mention time), in the background: its memories are replaced by those this retain makes (with
    an LLM, facts extracted as things are configured now). Text longer than one item may hold is
    retained as several items, cut between paragraphs."""
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.source_reprocess_input, bank_id, document_id)
    if r is None:
        raise NotFound(f"document {document_id!r} was not retained in bank {bank_id!r}", "document_id")
    base = {
        "context": r["context"] or "general",
        "timestamp": r["mentioned_at"] or "unset",
        "tags": list(r["tags"]),
        "metadata": json.loads(r["metadata"]),
        "document_id": document_id,
    }
    pieces = _paragraph_pieces(r["original_text"], rt.settings.max_content_chars)
    items = [RetainItem.model_validate({**base, "content": piece}) for piece in pieces]
    return await retain_later(rt, bank_id, items, actor)


def _paragraph_pieces(text: str, limit: int) -> list[str]:
    """`text` in pieces of at most `limit` characters, cut between paragraphs where it can be."""
    pieces: list[str] = []
    cur = ""
    for para in text.split("\n\n"):
        while len(para) > limit:
            if cur:
                pieces.append(cur)
                cur = ""
            pieces.append(para[:limit])
            para = para[limit:]
        joined = f"{cur}\n\n{para}" if cur else para
        if len(joined) > limit:
            pieces.append(cur)
            cur = para
        else:
            cur = joined
    if cur.strip():
        pieces.append(cur)
    return [p for p in pieces if p.strip()] or [text[:limit]]


async def run_retain(rt: Runtime, job: Job) -> dict:
    items = [RetainItem.model_validate(d) for d in job.payload["items"]]
    done: dict = {}

    async def finish(conn, result: RetainResult) -> None:
        done.update(result.model_dump(mode="json"))
        await ops.mark_succeeded(conn, job, done)
        await ops.drop_items(conn, job)

    await retain(
        rt, job.bank_id, items, on_commit=finish, actor=job.payload.get("actor", "retain"), operation_id=job.id
    )
    return done
