"""Banks in the reference's shape: PUT creates or updates, the profile carries the disposition
traits (1-5) and the mission reflect answers in the light of."""

from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Query

from ...engine.core import Engine
from ...engine.keys import Principal
from ...engine.models import MAX_OFFSET, Bank, BankCreate, BankUpdate
from ...engine.validation import parse
from ..deps import BankId, Caller, EngineDep
from . import convert
from . import models as M

router = APIRouter(prefix="/v1/default/banks", tags=["Hindsight-compatible: banks"])


@router.get("", response_model=M.BankList, summary="List the banks this key may use")
async def list_banks(
    who: Caller,
    eng: EngineDep,
    q: str | None = Query(None, description="Substring of the bank id or name (any case)."),
    limit: int = Query(100, ge=0, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    banks = (await eng.list_banks(who)).banks
    if q:
        needle = q.lower()
        banks = [b for b in banks if needle in b.bank_id.lower() or needle in (b.name or "").lower()]
    page = banks[offset : offset + limit]
    return M.BankList(banks=[convert.bank_item(b) for b in page], total=len(banks), limit=limit, offset=offset)


async def _apply(eng: Engine, who: Principal, bank_id: str, body: M.BankIn, bank: Bank) -> M.BankProfile:
    """Write what the body sets onto `bank` (disposition traits merge into the existing ones)."""
    update: dict[str, Any] = {}
    if body.name is not None:
        update["name"] = body.name
    if body.resolved_mission() is not None:
        update["mission"] = body.resolved_mission()
    if traits := body.disposition_updates():
        update["disposition"] = {**(bank.disposition or {}), **traits}
    if update:
        bank = await eng.update_bank(who, bank_id, parse(BankUpdate, update))
    return convert.profile(bank)


@router.put("/{bank_id}", response_model=M.BankProfile, summary="Create a bank, or update it if it exists")
async def put_bank(body: M.BankIn, bank_id: BankId, who: Caller, eng: EngineDep):
    created = await eng.create_bank(who, parse(BankCreate, dict(bank_id=bank_id)))
    return await _apply(eng, who, bank_id, body, created.bank)


@router.patch("/{bank_id}", response_model=M.BankProfile, summary="Update an existing bank")
async def patch_bank(body: M.BankIn, bank_id: BankId, who: Caller, eng: EngineDep):
    return await _apply(eng, who, bank_id, body, await eng.get_bank(who, bank_id))


@router.get("/{bank_id}", response_model=M.BankProfile, summary="A bank's profile")
@router.get("/{bank_id}/profile", response_model=M.BankProfile, summary="A bank's profile")
async def get_profile(bank_id: BankId, who: Caller, eng: EngineDep):
    return convert.profile(await eng.get_bank(who, bank_id))


@router.delete("/{bank_id}", response_model=M.Deleted, summary="Delete a bank and everything in it")
async def delete_bank(bank_id: BankId, who: Caller, eng: EngineDep):
    gone = await eng.delete_bank(who, bank_id)
    return M.Deleted(
        message=f"Bank '{bank_id}' and all associated data deleted successfully", deleted_count=gone.memories_deleted
    )
