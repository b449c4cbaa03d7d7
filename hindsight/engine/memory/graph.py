"""A bank's entities and memories as graphs, for drawing: which entities are named together
(co-mentions), and which memories share an entity or came from one another; and one entity in
detail, with the memories that mention it.

Only memories in recall count (not superseded raw units, not invalidated ones), so an entity
mentioned by a raw unit and by the fact extracted from it is one co-mention, not two. The graph
holds a bank's most mentioned entities (MAX_NODES at most), and the pairs among them: a drawing
of more is unreadable, and the pairs of every entity of a large bank would be read whole.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.db.sql import Q
from hindsight.engine.errors import InvalidArgument, NotFound
from hindsight.engine.memory.records import MemoryQuery, list_memories
from hindsight.engine.memory.schemas import Memory, MemoryType
from hindsight.engine.rules.fields import clean_tags
from hindsight.engine.rules.tags import TagsMatch
from hindsight.engine.rules.text import Strict

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

MAX_NODES = 1_000
MAX_EDGES = 10_000
# Memories of one entity linked in the memory graph, each to its next ones in time, at most: an
# entity mentioned a thousand times would otherwise make half a million edges.
NEIGHBOURS = 10


class EntityRef(Strict):
    model_config = ConfigDict(extra="forbid")

    entity_id: str = Field(description="The entity's id, from a listing or the graph.")


def parse_entity_id(entity_id: str) -> int:
    """Entity ids are integers; anything else is an error naming the argument."""
    if not entity_id.isascii() or not entity_id.isdigit() or len(entity_id) > 18:
        raise InvalidArgument(f"entity_id: {entity_id[:40]!r} is not an entity id (an integer)", "entity_id")
    return int(entity_id)


class EntityMention(BaseModel):
    memory_id: str
    text: str
    mentioned_at: datetime | None = None
    created_at: datetime


class EntityDetail(BaseModel):
    id: int
    name: str
    kind: str
    mention_count: int
    first_seen: datetime | None = Field(None, description="When the first memory mentioning it was stored.")
    last_seen: datetime | None = Field(None, description="When the last one was.")
    memories: list[EntityMention] = Field(description="The memories in recall that mention it, newest first.")


MENTIONS_SHOWN = 20


async def get_entity(rt: Runtime, bank_id: str, entity_id: str) -> EntityDetail:
    eid = parse_entity_id(entity_id)
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.entity_get, bank_id, eid)
        if r is None:
            raise NotFound(f"entity {entity_id} does not exist in bank {bank_id!r}", "entity_id")
        rows = await conn.fetch(Q.entity_recent_memories, bank_id, eid, MENTIONS_SHOWN)
    return EntityDetail(
        id=r["id"],
        name=r["name"],
        kind=r["kind"],
        mention_count=r["mention_count"],
        first_seen=r["first_seen"],
        last_seen=r["last_seen"],
        memories=[
            EntityMention(
                memory_id=str(m["id"]), text=m["text"], mentioned_at=m["mentioned_at"], created_at=m["created_at"]
            )
            for m in rows
        ],
    )


async def entities_seen(rt: Runtime, bank_id: str, entity_ids: list[int]) -> dict[int, tuple]:
    """When memories of the bank first and last mentioned each entity: {id: (first, last)}."""
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(Q.entity_seen_span, bank_id, entity_ids)
    return {r["entity_id"]: (r["first_seen"], r["last_seen"]) for r in rows}


class EntityGraphQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    nodes: int = Field(150, ge=1, le=MAX_NODES, description="The most mentioned entities drawn, at most.")
    limit: int = Field(1000, ge=0, le=MAX_EDGES, description="Pairs drawn at most, the most co-mentioned first.")
    min_count: int = Field(1, ge=1, le=1_000_000, description="Pairs named together by fewer memories are left out.")


class EntityNode(BaseModel):
    id: int
    name: str
    kind: str
    mention_count: int


class EntityEdge(BaseModel):
    source: int
    target: int
    count: int = Field(description="How many memories (in recall) mention both.")
    last_at: datetime | None = None


class EntityGraph(BaseModel):
    nodes: list[EntityNode] = Field(description="The most mentioned entities, most first.")
    edges: list[EntityEdge] = Field(description="Pairs of them named by one memory, most often first.")


async def entity_graph(rt: Runtime, bank_id: str, query: EntityGraphQuery) -> EntityGraph:
    async with rt.pool.acquire() as conn:
        nodes = await conn.fetch(Q.entity_graph_nodes, bank_id, query.nodes)
        ids = [r["id"] for r in nodes]
        edges = await conn.fetch(Q.entity_graph_edges, bank_id, ids, query.min_count, query.limit) if ids else []
    return EntityGraph(
        nodes=[EntityNode(**dict(r)) for r in nodes],
        edges=[EntityEdge(source=r["source"], target=r["target"], count=r["n"], last_at=r["last_at"]) for r in edges],
    )


class MemoryGraphQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(200, ge=0, le=1000, description="Memories drawn at most, newest first.")
    type: MemoryType | None = None
    q: str | None = Field(None, max_length=500, description="Substring of the text or context (any case).")
    document_id: str | None = Field(None, max_length=256)
    tags: list[str] | None = None
    tags_match: TagsMatch = "all_strict"

    _tags = field_validator("tags", mode="before")(clean_tags)


class MemoryEdge(BaseModel):
    source: str
    target: str
    kind: str = Field(description="entity: both mention `entity`; source: `target` was extracted from `source`.")
    entity: str | None = None


class MemoryGraph(BaseModel):
    nodes: list[Memory]
    edges: list[MemoryEdge]
    total: int = Field(description="Memories matching the query in all (`nodes` holds the newest of them).")


async def memory_graph(rt: Runtime, bank_id: str, query: MemoryGraphQuery) -> MemoryGraph:
    """The bank's newest memories matching the query, linked where they share an entity (each to
    its next NEIGHBOURS in time, per entity) or one was extracted from another."""
    found = await list_memories(
        rt,
        bank_id,
        MemoryQuery(
            limit=query.limit,
            type=query.type,
            q=query.q,
            document_id=query.document_id,
            tags=query.tags,
            tags_match=query.tags_match,
        ),
    )
    memories = found.memories
    edges: list[MemoryEdge] = []
    by_entity: dict[str, list[str]] = {}
    for m in sorted(memories, key=lambda m: (m.created_at or datetime.min, m.id)):
        for name in m.entities:
            by_entity.setdefault(name, []).append(m.id)
    for name, ids in by_entity.items():
        for i, a in enumerate(ids):
            edges += [
                MemoryEdge(source=a, target=b, kind="entity", entity=name) for b in ids[i + 1 : i + 1 + NEIGHBOURS]
            ]
    if memories:
        async with rt.pool.acquire() as conn:
            pairs = await conn.fetch(Q.memory_graph_sources, bank_id, [uuid.UUID(m.id) for m in memories])
        edges += [MemoryEdge(source=str(r["raw_id"]), target=str(r["fact_id"]), kind="source") for r in pairs]
    return MemoryGraph(nodes=memories, edges=edges, total=found.total)
