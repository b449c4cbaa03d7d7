"""Browsing and deleting stored memory units (REST and CLI; agents use recall)."""
from __future__ import annotations

import json
import uuid

from .banks import lock_writes
from .errors import NotFound, parse_uuid
from .models import Memory

# Entity names come from one primary-key lookup per link (a scalar subquery, which the planner
# cannot turn into a join). Written as a join, a bank with a few hundred entities got a hash
# join that scanned the whole entities table once per memory: 9 of a recall's 14 ms of details.
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
        id=str(r["id"]), text=r["text"], type=r["kind"], context=r["context"],
        occurred_start=r["occurred_start"], occurred_end=r["occurred_end"], mentioned_at=r["mentioned_at"],
        entities=list(r["entities"]), document_id=r["document_id"], metadata=json.loads(r["metadata"]),
        tags=list(r["tags"]), created_at=r["created_at"], superseded=r["superseded"] or None, **extra,
    )


def parse_memory_id(memory_id: str) -> uuid.UUID:
    return parse_uuid(memory_id, "memory_id", "a memory")


async def list_memories(pool, bank_id: str, limit: int, offset: int, document_id: str | None) -> tuple[list[Memory], int]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(
            f"SELECT {COLUMNS} FROM memories m WHERE m.bank_id = $1 AND ($2::text IS NULL OR m.document_id = $2)"
            " ORDER BY m.created_at DESC, m.source_id, m.position LIMIT $3 OFFSET $4",
            bank_id, document_id, limit, offset,
        )
        total = await conn.fetchval(
            "SELECT count(*) FROM memories WHERE bank_id = $1 AND ($2::text IS NULL OR document_id = $2)",
            bank_id, document_id,
        )
    return [to_memory(r) for r in rows], total


async def get_memory(pool, bank_id: str, memory_id: str) -> Memory:
    mid = parse_memory_id(memory_id)
    async with pool.acquire() as conn:
        r = await conn.fetchrow(f"SELECT {COLUMNS} FROM memories m WHERE m.bank_id = $1 AND m.id = $2", bank_id, mid)
    if r is None:
        raise NotFound(f"memory {memory_id} does not exist in bank {bank_id!r}", "memory_id")
    return to_memory(r)


async def delete_memory(pool, bank_id: str, memory_id: str) -> None:
    mid = parse_memory_id(memory_id)
    async with pool.acquire() as conn:
        async with conn.transaction():
            await lock_writes(conn, bank_id)
            # Facts extracted only from this unit go with it; facts shared with others stay.
            orphans = [r[0] for r in await conn.fetch(
                "SELECT f.fact_id FROM fact_sources f WHERE f.raw_id = $1 AND NOT EXISTS"
                " (SELECT 1 FROM fact_sources g WHERE g.fact_id = f.fact_id AND g.raw_id <> $1)", mid
            )]
            await conn.execute(
                "UPDATE entities e SET mention_count = greatest(0, e.mention_count - x.n)"
                " FROM (SELECT entity_id, count(*) AS n FROM memory_entities WHERE memory_id = ANY($1::uuid[])"
                "       GROUP BY entity_id) x WHERE x.entity_id = e.id", [mid, *orphans]
            )
            if orphans:
                await conn.execute("DELETE FROM memories WHERE bank_id = $1 AND id = ANY($2::uuid[])", bank_id, orphans)
            done = await conn.fetchval("DELETE FROM memories WHERE bank_id = $1 AND id = $2 RETURNING id", bank_id, mid)
    if done is None:
        raise NotFound(f"memory {memory_id} does not exist in bank {bank_id!r}", "memory_id")
