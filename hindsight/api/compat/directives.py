"""Directives in the reference's shape (`id`, `items` lists). Tag-scoped directives apply to a
reflect whose tags match, as the reference scopes them."""

from __future__ import annotations

from fastapi import APIRouter, Query

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.directives.schemas import DirectiveCreate, DirectiveQuery, DirectiveUpdate
from hindsight.engine.rules.fields import MAX_OFFSET
from hindsight.engine.rules.tags import TagsMatch
from hindsight.engine.rules.validation import parse

router = APIRouter(prefix="/v1/default/banks/{bank_id}/directives", tags=["Hindsight-compatible: directives"])


@router.get("", response_model=M.DirectiveList, summary="List directives (no tag filter: all of them)")
async def list_directives(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    tags: list[str] | None = Query(None),
    tags_match: TagsMatch = "any",
    active_only: bool = True,
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    query = parse(
        DirectiveQuery,
        dict(tags=tags, tags_match=tags_match, active_only=active_only, limit=limit, offset=offset),
    )
    return convert.directive_list(await eng.list_directives(who, bank_id, query))


@router.post("", response_model=M.DirectiveOut, summary="Create a directive: a standing rule for reflect")
async def create_directive(body: M.DirectiveIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    req = parse(
        DirectiveCreate,
        dict(
            name=body.name,
            content=body.content,
            priority=body.priority,
            is_active=body.is_active,
            tags=convert.as_list(body.tags),
        ),
    )
    return convert.directive(await eng.create_directive(who, bank_id, req))


@router.get("/{directive_id}", response_model=M.DirectiveOut, summary="One directive")
async def get_directive(directive_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.directive(await eng.get_directive(who, bank_id, directive_id))


@router.patch("/{directive_id}", response_model=M.DirectiveOut, summary="Update a directive")
async def update_directive(
    directive_id: str, body: M.DirectivePatch, bank_id: BankPath, who: PrincipalDep, eng: EngineDep
):
    req = parse(DirectiveUpdate, convert.directive_update(body))
    return convert.directive(await eng.update_directive(who, bank_id, directive_id, req))


@router.delete("/{directive_id}", summary="Delete a directive")
async def delete_directive(directive_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> dict:
    await eng.delete_directive(who, bank_id, directive_id)
    return {"status": "deleted"}
