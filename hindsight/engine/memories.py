"""Browsing and deleting stored memory units (REST and CLI; agents use recall)."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from .banks import lock_writes
from .binder import Binder
from .errors import NotFound, parse_uuid
from .models import Memory, MemoryType, _clean_tags
from .tags import TagsMatch, tag_condition

# Entity names come from one primary-key lookup per link (a scalar subquery, which the planner
# cannot turn into a join). Written as a join, a bank with a few hundred entities got a hash
# join that scanned the whole entities table once per memory, most of a recall's details
# statement (bench/README.md, "Recall's PostgreSQL statements").
COLUMNS = (
    "m.id, m.text, m.kind, m.context, m.occurred_start, m.occurred_end, m.mentioned_at,"
    " m.document_id, m.metadata, m.tags, m.created_at, m.source_id, m.position, m.superseded,"
    " ARRAY(SELECT n FROM (SELECT (SELECT e.name FROM entities e WHERE e.id = me.entity_id) AS n"
    "  FROM memory_entities me WHERE me.memory_id = m.id) s ORDER BY n) AS entities"
)


def to_memory(r, **extra) -> Memory:
    # model_construct: every value comes typed from our own columns, and validating ~100 of them
    # per recall was a sixth of the server's request thread under load (py-spy, 16 clients).
    return Memory.model_construct(
        id=str(r["id"]),
        text=r["text"],
        type=r["kind"],
        context=r["context"],
        occurred_start=r["occurred_start"],
        occurred_end=r["occurred_end"],
        mentioned_at=r["mentioned_at"],
        entities=list(r["entities"]),
        document_id=r["document_id"],
        metadata=json.loads(r["metadata"]),
        tags=list(r["tags"]),
        created_at=r["created_at"],
        superseded=r["superseded"] or None,
        **extra,
    )


def parse_memory_id(memory_id: str) -> uuid.UUID:
    return parse_uuid(memory_id, "memory_id", "a memory")


class MemoryList(BaseModel):
    memories: list[Memory]
    total: int
    limit: int
    offset: int


class MemoryDeleted(BaseModel):
    deleted: bool
    memory_id: str


class MemoryQuery(BaseModel):
    """Which stored memories to list (browsing, not ranking: that is recall)."""

    model_config = ConfigDict(extra="forbid")

    limit: int = Field(50, ge=0, le=1000)
    offset: int = Field(0, ge=0)
    document_id: str | None = Field(None, max_length=256)
    type: MemoryType | None = None
    q: str | None = Field(None, max_length=500, description="Substring of the text or context (any case).")
    tags: list[str] | None = None
    tags_match: TagsMatch = "any"

    _tags = field_validator("tags", mode="before")(_clean_tags)


async def list_memories(pool, bank_id: str, query: MemoryQuery) -> MemoryList:
    p = Binder(bank_id)
    where = ["m.bank_id = $1"]
    if query.document_id is not None:
        where.append(f"m.document_id = {p(query.document_id)}")
    if query.type is not None:
        where.append(f"m.kind = {p(query.type)}")
    if query.q:
        needle = p(query.q.lower())
        where.append(f"(strpos(lower(m.text), {needle}) > 0 OR strpos(lower(m.context), {needle}) > 0)")
    tagged = tag_condition("m.tags", query.tags, query.tags_match, p)
    if tagged:
        where.append(tagged)
    cond = " AND ".join(where)
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            f"SELECT {COLUMNS} FROM memories m WHERE {cond}"
            f" ORDER BY m.created_at DESC, m.source_id, m.position LIMIT {p(query.limit)} OFFSET {p(query.offset)}",
            *p.values,
        )
        total = await conn.fetchval(f"SELECT count(*) FROM memories m WHERE {cond}", *p.values[:-2])
    return MemoryList(memories=[to_memory(r) for r in rows], total=total, limit=query.limit, offset=query.offset)


class RetainedDocument(BaseModel):
    """The text retained under a document_id, for clients that read it back."""

    id: str
    bank_id: str
    original_text: str
    content_hash: str
    tags: list[str]
    metadata: dict[str, Any]
    memory_count: int
    created_at: datetime
    updated_at: datetime


_DOCUMENT_COLUMNS = "d.*, (SELECT count(*) FROM memories m WHERE m.bank_id = d.bank_id AND m.document_id = d.id) AS n"


def _retained(r) -> RetainedDocument:
    return RetainedDocument(
        id=r["id"],
        bank_id=r["bank_id"],
        original_text=r["original_text"],
        content_hash=r["content_hash"],
        tags=list(r["tags"]),
        metadata=json.loads(r["metadata"]),
        memory_count=r["n"],
        created_at=r["created_at"],
        updated_at=r["updated_at"],
    )


async def get_retained_document(pool, bank_id: str, document_id: str) -> RetainedDocument:
    async with pool.acquire() as conn:
        r = await conn.fetchrow(
            f"SELECT {_DOCUMENT_COLUMNS} FROM memory_documents d WHERE d.bank_id = $1 AND d.id = $2",
            bank_id,
            document_id,
        )
    if r is None:
        raise NotFound(f"document {document_id!r} was not retained in bank {bank_id!r}", "document_id")
    return _retained(r)


class DocumentQuery(BaseModel):
    """Which retained documents to list: a substring of the id or text, and tags."""

    model_config = ConfigDict(extra="forbid")

    q: str | None = Field(None, max_length=500)
    tags: list[str] | None = None
    tags_match: TagsMatch = "any"
    limit: int = Field(100, ge=0, le=1000)
    offset: int = Field(0, ge=0)

    _tags = field_validator("tags", mode="before")(_clean_tags)


async def list_retained_documents(pool, bank_id: str, query: DocumentQuery) -> tuple[list[RetainedDocument], int]:
    p = Binder(bank_id)
    where = ["d.bank_id = $1"]
    if query.q:
        needle = p(query.q.lower())
        where.append(f"(strpos(lower(d.id), {needle}) > 0 OR strpos(lower(d.original_text), {needle}) > 0)")
    if tagged := tag_condition("d.tags", query.tags, query.tags_match, p):
        where.append(tagged)
    cond = " AND ".join(where)
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            f"SELECT {_DOCUMENT_COLUMNS} FROM memory_documents d WHERE {cond}"
            f" ORDER BY d.updated_at DESC, d.id LIMIT {p(query.limit)} OFFSET {p(query.offset)}",
            *p.values,
        )
        total = await conn.fetchval(f"SELECT count(*) FROM memory_documents d WHERE {cond}", *p.values[:-2])
    return [_retained(r) for r in rows], total


async def delete_retained_document(pool, bank_id: str, document_id: str) -> int:
    """A document_id's memories and text; returns how many memories went."""
    from .retain import delete_documents

    async with pool.acquire() as conn:
        async with conn.transaction():
            await lock_writes(conn, bank_id)
            had_text = await conn.fetchval(
                "SELECT true FROM memory_documents WHERE bank_id = $1 AND id = $2", bank_id, document_id
            )
            n = await delete_documents(conn, bank_id, [document_id])
    if not n and not had_text:
        raise NotFound(f"document {document_id!r} was not retained in bank {bank_id!r}", "document_id")
    return n


async def get_memory(pool, bank_id: str, memory_id: str) -> Memory:
    mid = parse_memory_id(memory_id)
    async with pool.acquire() as conn:
        r = await conn.fetchrow(f"SELECT {COLUMNS} FROM memories m WHERE m.bank_id = $1 AND m.id = $2", bank_id, mid)
    if r is None:
        raise NotFound(f"memory {memory_id} does not exist in bank {bank_id!r}", "memory_id")
    return to_memory(r)


async def get_memories(pool, bank_id: str, memory_ids: list[str]) -> list[Memory]:
    ids = [parse_memory_id(m) for m in memory_ids]
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            f"SELECT {COLUMNS} FROM memories m WHERE m.bank_id = $1 AND m.id = ANY($2::uuid[])", bank_id, ids
        )
    by_id = {r["id"]: r for r in rows}
    return [to_memory(by_id[i]) for i in ids if i in by_id]


async def delete_memory(pool, bank_id: str, memory_id: str) -> None:
    mid = parse_memory_id(memory_id)
    async with pool.acquire() as conn:
        async with conn.transaction():
            await lock_writes(conn, bank_id)
            # Facts extracted only from this unit go with it; facts shared with others stay.
            orphans = [
                r[0]
                for r in await conn.fetch(
                    "SELECT f.fact_id FROM fact_sources f WHERE f.raw_id = $1 AND NOT EXISTS"
                    " (SELECT 1 FROM fact_sources g WHERE g.fact_id = f.fact_id AND g.raw_id <> $1)",
                    mid,
                )
            ]
            await conn.execute(
                "UPDATE entities e SET mention_count = greatest(0, e.mention_count - x.n)"
                " FROM (SELECT entity_id, count(*) AS n FROM memory_entities WHERE memory_id = ANY($1::uuid[])"
                "       GROUP BY entity_id) x WHERE x.entity_id = e.id",
                [mid, *orphans],
            )
            if orphans:
                await conn.execute("DELETE FROM memories WHERE bank_id = $1 AND id = ANY($2::uuid[])", bank_id, orphans)
            done = await conn.fetchval("DELETE FROM memories WHERE bank_id = $1 AND id = $2 RETURNING id", bank_id, mid)
    if done is None:
        raise NotFound(f"memory {memory_id} does not exist in bank {bank_id!r}", "memory_id")


class EntityRow(BaseModel):
    id: int
    name: str
    kind: str
    mention_count: int


class EntityList(BaseModel):
    entities: list[EntityRow]
    total: int
    limit: int
    offset: int


class EntityQuery(BaseModel):
    model_config = ConfigDict(extra="forbid")

    q: str | None = Field(None, max_length=200, description="Substring of the name (any case).")
    limit: int = Field(50, ge=1, le=1000)
    offset: int = Field(0, ge=0)


async def list_entities(pool, bank_id: str, query: EntityQuery) -> EntityList:
    """The bank's entities, most mentioned first (entities no memory mentions any more are left out)."""
    p = Binder(bank_id)
    cond = "bank_id = $1 AND mention_count > 0"
    if query.q:
        cond += f" AND strpos(canonical, {p(query.q.lower())}) > 0"
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            f"SELECT id, name, kind, mention_count FROM entities WHERE {cond}"
            f" ORDER BY mention_count DESC, name LIMIT {p(query.limit)} OFFSET {p(query.offset)}",
            *p.values,
        )
        total = await conn.fetchval(f"SELECT count(*) FROM entities WHERE {cond}", *p.values[:-2])
    return EntityList(
        entities=[EntityRow(**dict(r)) for r in rows], total=total, limit=query.limit, offset=query.offset
    )


class Lineage(BaseModel):
    """Where a memory came from and what came of it, when an LLM extracted facts."""

    sources: list[Memory] = Field(description="The raw units this fact was extracted from.")
    facts: list[Memory] = Field(description="The facts extracted from this raw unit.")


async def lineage(pool, bank_id: str, memory_id: str) -> Lineage:
    mid = parse_memory_id(memory_id)
    async with pool.acquire() as conn:
        if not await conn.fetchval("SELECT true FROM memories WHERE bank_id = $1 AND id = $2", bank_id, mid):
            raise NotFound(f"memory {memory_id} does not exist in bank {bank_id!r}", "memory_id")
        sources = await conn.fetch(
            f"SELECT {COLUMNS} FROM memories m JOIN fact_sources f ON f.raw_id = m.id"
            " WHERE f.fact_id = $1 AND m.bank_id = $2 ORDER BY m.source_id, m.position",
            mid,
            bank_id,
        )
        facts = await conn.fetch(
            f"SELECT {COLUMNS} FROM memories m JOIN fact_sources f ON f.fact_id = m.id"
            " WHERE f.raw_id = $1 AND m.bank_id = $2 ORDER BY m.created_at, m.id",
            mid,
            bank_id,
        )
    return Lineage(sources=[to_memory(r) for r in sources], facts=[to_memory(r) for r in facts])
