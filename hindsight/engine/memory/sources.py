"""Retained documents: the memories a client retained under one `document_id`, and the text it
retained there, kept for clients that read it back (Hindsight's `GET .../documents/{id}`).

Not the knowledge base's documents (engine/knowledge/documents.py: imported files, chunked and searched
apart from memories) and not the files an import reads (hindsight/files/). Retaining a
document_id again replaces what it held, in the retain's own transaction."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime
from typing import TYPE_CHECKING, Any

import asyncpg
from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.db.binder import Binder
from hindsight.db.sql import Q, fill
from hindsight.engine.errors import NotFound, parse_uuid
from hindsight.engine.memory.records import COLUMNS, to_memory
from hindsight.engine.memory.schemas import Memory, RetainItem
from hindsight.engine.rules.fields import Offset, clean_tags
from hindsight.engine.rules.tags import TagsMatch, tag_condition
from hindsight.engine.rules.text import Strict

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


async def delete_sources(conn: asyncpg.Connection, bank_id: str, document_ids: list[str]) -> int:
    """Remove the memories retained under these document_ids (and their share of entity mention
    counts) and their text: retaining a document_id again replaces what it held."""
    await conn.execute(
        Q.source_entities_release,
        bank_id,
        document_ids,
    )
    status = await conn.execute(Q.source_memories_delete, bank_id, document_ids)
    await conn.execute(Q.sources_delete, bank_id, document_ids)
    return int(status.split()[-1])


async def store_sources(conn: asyncpg.Connection, bank_id: str, items: list[RetainItem]) -> None:
    """Keep the text retained under each document_id (its items' contents, in order), with their
    tags and metadata, for clients that read a retained document back."""
    docs: dict[str, list[RetainItem]] = {}
    for it in items:
        if it.document_id:
            docs.setdefault(it.document_id, []).append(it)
    rows = []
    for doc_id, its in docs.items():
        text = "\n\n".join(it.content for it in its)
        metadata: dict = {}
        for it in its:
            metadata.update(it.metadata)
        rows.append(
            (
                bank_id,
                doc_id,
                text,
                hashlib.sha256(text.encode()).hexdigest(),
                sorted({t for it in its for t in it.tags}),
                json.dumps(metadata, default=str),
            )
        )
    if rows:
        await conn.executemany(
            Q.source_add,
            rows,
        )


class RetainedSource(BaseModel):
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


def _source(r) -> RetainedSource:
    return RetainedSource(
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


async def get_source(rt: Runtime, bank_id: str, document_id: str) -> RetainedSource:
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.source_get, bank_id, document_id)
    if r is None:
        raise NotFound(f"document {document_id!r} was not retained in bank {bank_id!r}", "document_id")
    return _source(r)


class SourceQuery(Strict):
    """Which retained documents to list: a substring of the id or text, and tags."""

    model_config = ConfigDict(extra="forbid")

    q: str | None = Field(None, max_length=500)
    tags: list[str] | None = None
    tags_match: TagsMatch = "any"
    limit: int = Field(100, ge=0, le=1000)
    offset: int = Offset

    _tags = field_validator("tags", mode="before")(clean_tags)


def _conditions(query: SourceQuery, p: Binder) -> str:
    where = []
    if query.q:
        needle = p(query.q.lower())
        where.append(f"(strpos(lower(d.id), {needle}) > 0 OR strpos(lower(d.original_text), {needle}) > 0)")
    if tagged := tag_condition("d.tags", query.tags, query.tags_match, p):
        where.append(tagged)
    return "".join(f" AND {w}" for w in where)


async def list_sources(rt: Runtime, bank_id: str, query: SourceQuery) -> tuple[list[RetainedSource], int]:
    page = Binder(bank_id, query.limit, query.offset)
    listing = fill(Q.source_list, where=_conditions(query, page))
    every = Binder(bank_id)
    counting = fill(Q.source_count, where=_conditions(query, every))
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(listing, *page.values)
        total = await conn.fetchval(counting, *every.values)
    return [_source(r) for r in rows], total


_UNITS = fill(Q.source_units, columns=COLUMNS)


async def list_source_units(
    rt: Runtime, bank_id: str, document_id: str, limit: int, offset: int
) -> tuple[list[Memory], int]:
    """A page of the units a document_id's text was split into, in order, and how many there are;
    NotFound when nothing was retained under it."""
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(_UNITS, bank_id, document_id, limit, offset)
        total = await conn.fetchval(Q.source_unit_count, bank_id, document_id)
        if not total and not await conn.fetchval(Q.source_exists, bank_id, document_id):
            raise NotFound(f"document {document_id!r} was not retained in bank {bank_id!r}", "document_id")
    return [to_memory(r) for r in rows], total


class SourceChange(Strict):
    """What a document's PATCH changes (Hindsight's UpdateDocumentRequest)."""

    model_config = ConfigDict(extra="forbid")

    tags: list[str] | None = Field(None, description="New tags for the document and every memory retained under it.")

    _tags = field_validator("tags", mode="before")(clean_tags)


async def update_source(rt: Runtime, bank_id: str, document_id: str, change: SourceChange) -> RetainedSource:
    """New tags for a retained document, and for every memory retained under it (its facts too),
    in one transaction: recall's tag filters see the document's memories as the document says."""
    if change.tags is not None:
        async with rt.writes.open(bank_id) as conn:
            if await conn.fetchval(Q.source_tags_set, bank_id, document_id, change.tags) is None:
                raise NotFound(f"document {document_id!r} was not retained in bank {bank_id!r}", "document_id")
            await conn.execute(Q.source_memories_tags_set, bank_id, document_id, change.tags)
    return await get_source(rt, bank_id, document_id)


class SourceUnit(BaseModel):
    """One unit of a retained document (Hindsight's chunk)."""

    id: str
    bank_id: str
    document_id: str
    index: int
    text: str
    created_at: datetime


async def find_source_unit(rt: Runtime, unit_id: str, banks: frozenset[str] | set[str] | None) -> SourceUnit:
    """A retained document's unit by id, among `banks` (None: any bank); ids are UUIDs, unique
    across banks, so a client may name one without its bank."""
    uid = parse_uuid(unit_id, "chunk_id", "a chunk")
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.source_unit_find, uid, sorted(banks) if banks is not None else None)
    if r is None:
        raise NotFound(f"chunk {unit_id} does not exist", "chunk_id")
    return SourceUnit(
        id=str(uid), bank_id=r["bank_id"], document_id=r["document_id"], index=r["chunk_index"], text=r["text"],
        created_at=r["created_at"],
    )  # fmt: skip
