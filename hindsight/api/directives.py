"""REST face of directives: a bank owner's standing instructions to reflect and mental models."""

from __future__ import annotations

from fastapi import APIRouter, Query

from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.directives.schemas import (
    Directive,
    DirectiveCreate,
    DirectiveDeleted,
    DirectiveList,
    DirectiveQuery,
    DirectiveUpdate,
)

router = APIRouter(prefix="/v1/banks/{bank_id}/directives", tags=["directives"])


@router.post("", status_code=201, summary="Give reflect and mental models a standing instruction")
async def create(req: DirectiveCreate, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Directive:
    return await eng.create_directive(who, bank_id, req)


@router.get("", summary="The bank's directives, highest priority first")
async def list_(bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: DirectiveQuery = Query()) -> DirectiveList:
    return await eng.list_directives(who, bank_id, query)


@router.get("/{directive_id}", summary="One directive")
async def get(directive_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Directive:
    return await eng.get_directive(who, bank_id, directive_id)


@router.patch("/{directive_id}", summary="Change a directive's name, content, priority, active flag or tags")
async def update(
    req: DirectiveUpdate, directive_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep
) -> Directive:
    return await eng.update_directive(who, bank_id, directive_id, req)


@router.delete("/{directive_id}", summary="Delete a directive")
async def delete(directive_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> DirectiveDeleted:
    return await eng.delete_directive(who, bank_id, directive_id)
