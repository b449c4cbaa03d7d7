"""The tags a bank's memories (or mental models) carry, each with how many carry it.

A pattern's `*` stands for any run of characters and the match ignores case (the reference's
wildcard search: `user:*`, `*-admin`); every other character stands for itself.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, ConfigDict, Field

from hindsight.db.binder import Binder
from hindsight.db.sql import Q, fill
from hindsight.engine.rules.fields import Offset
from hindsight.engine.rules.text import Strict

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


class TagQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    q: str | None = Field(
        None, max_length=200, description="Only tags matching this pattern; `*` is any run of characters (any case)."
    )
    source: Literal["memories", "mental_models"] = Field(
        "memories", description="Count the tags of memories (in recall), or of mental models."
    )
    limit: int = Field(100, ge=0, le=1000, description="At most this many, most used first.")
    offset: int = Offset


class TagCount(BaseModel):
    tag: str
    count: int = Field(description="How many memories (or mental models) carry it.")


class TagList(BaseModel):
    tags: list[TagCount]
    total: int = Field(description="Tags matching in all (the page is `tags`).")
    limit: int
    offset: int


def like_pattern(pattern: str) -> str:
    """An ILIKE pattern (escape character `\\`) for a wildcard pattern whose `*` is any run."""
    escaped = pattern.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return escaped.replace("*", "%")


async def list_tags(rt: Runtime, bank_id: str, query: TagQuery) -> TagList:
    p = Binder(bank_id, query.limit, query.offset)
    where = f" AND t ILIKE {p(like_pattern(query.q))} ESCAPE '\\'" if query.q else ""
    statement = Q.tags_of_memories if query.source == "memories" else Q.tags_of_mental_models
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(fill(statement, where=where), *p.values)
    return TagList(
        tags=[TagCount(tag=r["tag"], count=r["n"]) for r in rows if r["tag"] is not None],
        total=rows[0]["total"] if rows else 0,
        limit=query.limit,
        offset=query.offset,
    )
