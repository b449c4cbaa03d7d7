"""Banks in the reference's shape: PUT creates or updates, the profile carries the disposition
traits (1-5) and the mission reflect answers in the light of."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Query

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.banks.schemas import Bank, BankCreate, BankQuery, BankUpdate
from hindsight.engine.rules.fields import MAX_OFFSET
from hindsight.engine.rules.validation import parse

router = APIRouter(prefix="/v1/default/banks", tags=["Hindsight-compatible: banks"])


@router.get("", response_model=M.BankList, summary="List the banks this key may use")
async def list_banks(
    who: PrincipalDep,
    eng: EngineDep,
    q: str | None = Query(None, description="Substring of the bank id or name (any case)."),
    limit: int = Query(100, ge=0, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    found = await eng.list_banks(who, parse(BankQuery, dict(q=q, limit=limit, offset=offset)))
    return convert.bank_list(found, limit, offset)


def _profile_update(body: M.BankIn) -> Callable[[Bank], BankUpdate | None]:
    """What a PUT or PATCH of the profile sets, from the bank as it is: disposition traits merge
    into its existing ones."""

    def change(bank: Bank) -> BankUpdate | None:
        update = convert.profile_update(body, bank)
        return parse(BankUpdate, update) if update else None

    return change


@router.put("/{bank_id}", response_model=M.BankProfile, summary="Create a bank, or update it if it exists")
async def put_bank(body: M.BankIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    await eng.create_bank(who, parse(BankCreate, dict(bank_id=bank_id)))
    return convert.profile(await eng.change_bank(who, bank_id, _profile_update(body)))


@router.patch("/{bank_id}", response_model=M.BankProfile, summary="Update an existing bank")
async def patch_bank(body: M.BankIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.profile(await eng.change_bank(who, bank_id, _profile_update(body)))


@router.get("/{bank_id}", response_model=M.BankProfile, summary="A bank's profile")
@router.get("/{bank_id}/profile", response_model=M.BankProfile, summary="A bank's profile")
async def get_profile(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.profile(await eng.get_bank(who, bank_id))


@router.delete("/{bank_id}", response_model=M.Deleted, summary="Delete a bank and everything in it")
async def delete_bank(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    gone = await eng.delete_bank(who, bank_id)
    return M.Deleted(
        message=f"Bank '{bank_id}' and all associated data deleted successfully", deleted_count=gone.memories_deleted
    )


@router.get("/{bank_id}/stats", response_model=M.BankStats, summary="What the bank holds, counted")
async def bank_stats(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.bank_stats(await eng.count_bank(who, bank_id))


# ---- config: the reference's per-bank settings ---------------------------------------------------
@router.get("/{bank_id}/config", response_model=M.BankConfig, summary="The bank's settings and its overrides")
async def get_config(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.config_out(await eng.get_bank(who, bank_id))


@router.patch(
    "/{bank_id}/config",
    response_model=M.BankConfig,
    summary="Override settings for this bank (those this server does not have are kept and reported)",
)
async def patch_config(body: M.BankConfigUpdate, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    def change(bank: Bank) -> BankUpdate:
        return parse(BankUpdate, convert.config_update(body.updates, bank))

    return convert.config_out(await eng.change_bank(who, bank_id, change))


@router.delete("/{bank_id}/config", response_model=M.BankConfig, summary="Forget the bank's overrides")
async def reset_config(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    """The overrides go; the mission and disposition they set stay the bank's profile (a PATCH of
    the bank changes those)."""
    await eng.get_bank(who, bank_id)
    return convert.config_out(await eng.update_bank(who, bank_id, parse(BankUpdate, {"client_settings": {}})))
