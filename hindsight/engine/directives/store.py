"""Directives kept per bank, and the ones a reflect applies.

A reflect applies every active untagged directive, and the tagged ones whose tags match its own
(as memories match: `any` shares one, `all` holds them all, `exact` the same set; the untagged
reflect applies untagged directives only, so a scoped rule never leaks into another scope's
answers). A mental model's refresh is a reflect with the model's tags (all of them, strictly),
so a directive tagged like the model applies to it.
"""

from __future__ import annotations

import uuid
from typing import TYPE_CHECKING

import asyncpg

from hindsight.db.binder import Binder
from hindsight.db.sql import Q, fill
from hindsight.engine.banks.registry import ensure_bank
from hindsight.engine.directives.schemas import (
    MAX_DIRECTIVES,
    AppliedDirective,
    Directive,
    DirectiveCreate,
    DirectiveList,
    DirectiveQuery,
    DirectiveUpdate,
)
from hindsight.engine.errors import Conflict, NotFound, parse_uuid
from hindsight.engine.rules.tags import TagsMatch, tag_condition

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

_CREATE = fill(Q.directive_create, columns=Q.directive_columns)
_GET = fill(Q.directive_get, columns=Q.directive_columns)
_UPDATE = fill(Q.directive_update, columns=Q.directive_columns)
# The strict form of each match: the untagged directives are added to every reflect's anyway.
_STRICT: dict[str, TagsMatch] = {"any": "any_strict", "all": "all_strict"}


def to_directive(r: asyncpg.Record) -> Directive:
    return Directive(
        directive_id=str(r["id"]),
        bank_id=r["bank_id"],
        name=r["name"],
        content=r["content"],
        priority=r["priority"],
        is_active=r["is_active"],
        tags=list(r["tags"]),
        created_at=r["created_at"],
        updated_at=r["updated_at"],
    )


def parse_directive_id(directive_id: str) -> uuid.UUID:
    return parse_uuid(directive_id, "directive_id", "a directive")


def _missing(bank_id: str, directive_id: str) -> NotFound:
    return NotFound(f"directive {directive_id} does not exist in bank {bank_id!r}", "directive_id")


async def create_directive(rt: Runtime, bank_id: str, req: DirectiveCreate) -> Directive:
    async with rt.writes.open(bank_id) as conn:
        await ensure_bank(conn, bank_id)
        if await conn.fetchval(Q.directive_count_all, bank_id) >= MAX_DIRECTIVES:
            raise Conflict(f"bank {bank_id!r} already has {MAX_DIRECTIVES} directives, the most a bank may have")
        r = await conn.fetchrow(
            _CREATE, bank_id, uuid.uuid4(), req.name, req.content, req.priority, req.is_active, req.tags
        )
    return to_directive(r)


async def get_directive(rt: Runtime, bank_id: str, directive_id: str) -> Directive:
    did = parse_directive_id(directive_id)
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(_GET, bank_id, did)
    if r is None:
        raise _missing(bank_id, directive_id)
    return to_directive(r)


async def list_directives(rt: Runtime, bank_id: str, query: DirectiveQuery) -> DirectiveList:
    """A page of the bank's directives, highest priority first. No tags lists them all (the
    reference's listing does too); tags filter as memories are filtered."""
    p = Binder(bank_id, query.limit, query.offset)
    where = []
    if query.active_only:
        where.append("is_active")
    if tagged := tag_condition("tags", query.tags, query.tags_match, p):
        where.append(tagged)
    sql = fill(Q.directive_list, columns=Q.directive_columns, where="".join(f" AND {w}" for w in where))
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(sql, *p.values)
    found = [to_directive(r) for r in rows if r["id"] is not None]
    return DirectiveList(
        directives=found, total=rows[0]["total"] if rows else 0, limit=query.limit, offset=query.offset
    )


async def update_directive(rt: Runtime, bank_id: str, directive_id: str, req: DirectiveUpdate) -> Directive:
    did = parse_directive_id(directive_id)
    f = req.model_dump(exclude_unset=True, exclude_none=True)
    async with rt.writes.open(bank_id) as conn:
        r = await conn.fetchrow(
            _UPDATE,
            bank_id,
            did,
            f.get("name"),
            f.get("content"),
            f.get("priority"),
            f.get("is_active"),
            f.get("tags"),
        )
    if r is None:
        raise _missing(bank_id, directive_id)
    return to_directive(r)


async def delete_directive(rt: Runtime, bank_id: str, directive_id: str) -> None:
    did = parse_directive_id(directive_id)
    async with rt.writes.open(bank_id) as conn:
        if await conn.fetchval(Q.directive_delete, bank_id, did) is None:
            raise _missing(bank_id, directive_id)


async def directives_for(
    conn: asyncpg.Connection, bank_id: str, tags: list[str] | None, tags_match: TagsMatch
) -> list[AppliedDirective]:
    """The active directives a reflect with these tags applies, highest priority first (see the
    module docstring); on the caller's connection."""
    p = Binder(bank_id, MAX_DIRECTIVES)
    scoped = ""
    if tags:
        condition = tag_condition("tags", tags, _STRICT.get(tags_match, tags_match), p)
        scoped = f" OR {condition}" if condition else ""
    rows = await conn.fetch(fill(Q.directives_for_prompt, scoped=scoped), *p.values)
    return [AppliedDirective(directive_id=str(r["id"]), name=r["name"], content=r["content"]) for r in rows]
