"""Browsing stored memory units (REST and CLI; agents use recall); forgetting them is
engine/forgetting/erase.py."""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_core import from_json

from hindsight.db.binder import Binder
from hindsight.db.sql import Q, fill
from hindsight.engine.errors import NotFound, parse_uuid
from hindsight.engine.memory.schemas import Memory
from hindsight.engine.rules.fields import Offset, clean_tags
from hindsight.engine.rules.tags import TagsMatch, tag_condition
from hindsight.engine.rules.text import Strict

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

LINKED_NAMES = Q.memory_linked_names
COLUMNS = fill(Q.memory_columns, linked_names=LINKED_NAMES)  # what to_memory reads
_GET = fill(Q.memory_get, columns=COLUMNS)
_GET_MANY = fill(Q.memory_get_many, columns=COLUMNS)
_SOURCES = fill(Q.memory_sources, columns=COLUMNS)
_FACTS = fill(Q.memory_facts, columns=COLUMNS)


_UNRANKED = {"score": None, "relevance": None, "arms": None}  # in Memory's field order
_RANKING = _UNRANKED.keys()
_ROW_FIELDS = set(Memory.model_fields) - _RANKING
_new = object.__new__
_set = object.__setattr__


# What a memory's metadata reads as when it is nested deeper than can be answered: only an archive
# imported before imports checked depth could store it (clients may nest 32 levels). Before, one
# such memory made every recall and listing of its bank fail; its export still holds the value.
TOO_DEEP = {"unreadable": "metadata nested deeper than 200 levels; the bank's export holds it"}


def _json(text: str):
    """pydantic's JSON reader: ~0.16 us for a small object against ~1.1 for json.loads, per row of
    every recall. PostgreSQL wrote the text, so the one thing it refuses is nesting past 200."""
    try:
        return from_json(text, cache_strings="keys")
    except ValueError:
        return dict(TOO_DEEP)


def memory_values(r) -> dict:
    """The values of a Memory's stored fields, from one row of COLUMNS."""
    return {
        "id": str(r["id"]),
        "text": r["text"],
        "type": r["kind"],
        "context": r["context"],
        "occurred_start": r["occurred_start"],
        "occurred_end": r["occurred_end"],
        "mentioned_at": r["mentioned_at"],
        "entities": list(r["entities"]),
        "document_id": r["document_id"],
        "metadata": _json(r["metadata"]),
        "tags": list(r["tags"]),
        "created_at": r["created_at"],
        "superseded": r["superseded"] or None,
        "valid_from": r["valid_from"],
        "valid_to": r["valid_to"],
        "superseded_by": r["superseded_by"] and str(r["superseded_by"]),
        "invalidated_at": r["invalidated_at"],
        "invalidation_reason": r["invalidation_reason"],
    }


def to_memory(r, **ranking) -> Memory:
    """A Memory from one row of COLUMNS, with `score`, `arms` and `relevance` when ranked.

    Every value comes typed from our own columns, so nothing is validated, and the instance is
    made the way pydantic's model_construct makes it (its __dict__, the fields given as set, no
    extra or private values) without that method's Python loop over the fields and their
    defaults: a recall builds ~115 of these, and model_construct was a sixth of the server's
    request thread (11 us a row against 4; bench/README.md, "Recall results without
    model_construct"). tests/unit/test_memory_rows.py checks the result equals the Memory that
    validating memory_values gives."""
    if not ranking.keys() <= _RANKING:
        raise TypeError(f"to_memory: unexpected {sorted(ranking.keys() - _RANKING)}")
    values = memory_values(r)
    values.update(_UNRANKED)
    values.update(ranking)
    m = _new(Memory)
    _set(m, "__dict__", values)
    # A set of its own: assigning a field later adds to it.
    _set(m, "__pydantic_fields_set__", _ROW_FIELDS | ranking.keys())
    _set(m, "__pydantic_extra__", None)
    _set(m, "__pydantic_private__", None)
    return m


def parse_memory_id(memory_id: str) -> uuid.UUID:
    return parse_uuid(memory_id, "memory_id", "a memory")


class MemoryList(BaseModel):
    memories: list[Memory]
    total: int
    limit: int
    offset: int


class MemoryRef(Strict):
    model_config = ConfigDict(extra="forbid")

    memory_id: str = Field(description="The memory's id (a UUID), as recall and list_memories give it.")


# The types a client may name when browsing or clearing: ours, and Hindsight's observations
# (consolidated summaries its server keeps beside the facts), of which this server keeps none.
BrowseType = Literal["world", "experience", "observation"]


class MemoryQuery(Strict):
    """Which stored memories to list (browsing, not ranking: that is recall)."""

    model_config = ConfigDict(extra="forbid")

    limit: int = Field(50, ge=0, le=1000)
    offset: int = Offset
    document_id: str | None = Field(None, max_length=256)
    type: BrowseType | None = Field(None, description="world or experience (observation: none are kept here).")
    q: str | None = Field(None, max_length=500, description="Substring of the text or context (any case).")
    tags: list[str] | None = None
    tags_match: TagsMatch = "any"

    _tags = field_validator("tags", mode="before")(clean_tags)


def _memory_conditions(query: MemoryQuery, p: Binder) -> str:
    where = []
    if query.document_id is not None:
        where.append(f"m.document_id = {p(query.document_id)}")
    if query.type is not None:
        where.append(f"m.kind = {p(query.type)}")
    if query.q:
        needle = p(query.q.lower())
        where.append(f"(strpos(lower(m.text), {needle}) > 0 OR strpos(lower(m.context), {needle}) > 0)")
    if tagged := tag_condition("m.tags", query.tags, query.tags_match, p):
        where.append(tagged)
    return "".join(f" AND {w}" for w in where)


async def list_memories(rt: Runtime, bank_id: str, query: MemoryQuery) -> MemoryList:
    page = Binder(bank_id, query.limit, query.offset)
    listing = fill(Q.memory_list, columns=COLUMNS, where=_memory_conditions(query, page))
    every = Binder(bank_id)
    counting = fill(Q.memory_count, where=_memory_conditions(query, every))
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(listing, *page.values)
        total = await conn.fetchval(counting, *every.values)
    return MemoryList(memories=[to_memory(r) for r in rows], total=total, limit=query.limit, offset=query.offset)


async def get_memory(rt: Runtime, bank_id: str, memory_id: str) -> Memory:
    mid = parse_memory_id(memory_id)
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(_GET, bank_id, mid)
    if r is None:
        raise NotFound(f"memory {memory_id} does not exist in bank {bank_id!r}", "memory_id")
    return to_memory(r)


async def get_memories(rt: Runtime, bank_id: str, memory_ids: list[str]) -> list[Memory]:
    ids = [parse_memory_id(m) for m in memory_ids]
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(_GET_MANY, bank_id, ids)
    by_id = {r["id"]: r for r in rows}
    return [to_memory(by_id[i]) for i in ids if i in by_id]


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


class EntityQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    q: str | None = Field(None, max_length=200, description="Substring of the name (any case).")
    limit: int = Field(50, ge=1, le=1000)
    offset: int = Offset


async def list_entities(rt: Runtime, bank_id: str, query: EntityQuery) -> EntityList:
    """The bank's entities, most mentioned first (entities no memory mentions any more are left out)."""

    def conditions(p: Binder) -> str:
        return f" AND strpos(canonical, {p(query.q.lower())}) > 0" if query.q else ""

    page, every = Binder(bank_id, query.limit, query.offset), Binder(bank_id)
    listing, counting = fill(Q.entity_list, where=conditions(page)), fill(Q.entity_count, where=conditions(every))
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(listing, *page.values)
        total = await conn.fetchval(counting, *every.values)
    return EntityList(
        entities=[EntityRow(**dict(r)) for r in rows], total=total, limit=query.limit, offset=query.offset
    )


class Lineage(BaseModel):
    """Where a memory came from and what came of it, when an LLM extracted facts."""

    sources: list[Memory] = Field(description="The raw units this fact was extracted from.")
    facts: list[Memory] = Field(description="The facts extracted from this raw unit.")


async def get_lineage(rt: Runtime, bank_id: str, memory_id: str) -> Lineage:
    mid = parse_memory_id(memory_id)
    async with rt.pool.acquire() as conn:
        if not await conn.fetchval(Q.memory_exists, bank_id, mid):
            raise NotFound(f"memory {memory_id} does not exist in bank {bank_id!r}", "memory_id")
        sources = await conn.fetch(_SOURCES, mid, bank_id)
        facts = await conn.fetch(_FACTS, mid, bank_id)
    return Lineage(sources=[to_memory(r) for r in sources], facts=[to_memory(r) for r in facts])
