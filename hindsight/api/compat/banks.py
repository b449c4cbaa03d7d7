"""Banks in the reference's shape: PUT creates or updates, the profile carries the disposition
traits (1-5) and the mission reflect answers in the light of."""

from __future__ import annotations

from collections.abc import Callable

from fastapi import APIRouter, Body, Query

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.banks.schemas import Bank, BankCreate, BankQuery, BankUpdate
from hindsight.engine.banks.settings import BankSettingsChange
from hindsight.engine.reflection.setup import BankSetup
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
    change = parse(BankSettingsChange, {"config_updates": body.updates})
    return convert.config_out(await eng.configure_bank(who, bank_id, change, field="updates"))


@router.delete("/{bank_id}/config", response_model=M.BankConfig, summary="Forget the bank's overrides")
async def reset_config(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    """The overrides go; the mission and disposition they set stay the bank's profile (a PATCH of
    the bank changes those)."""
    await eng.get_bank(who, bank_id)
    return convert.config_out(await eng.update_bank(who, bank_id, parse(BankUpdate, {"client_settings": {}})))


# ---- profile: the traits and the (deprecated) background ------------------------------------------
@router.put("/{bank_id}/profile", response_model=M.BankProfile, summary="Set the bank's disposition traits (1-5)")
async def put_disposition(body: M.UpdateDispositionIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    """The bank is created if it did not exist, as the reference's profile routes do."""
    await eng.create_bank(who, parse(BankCreate, dict(bank_id=bank_id)))
    return convert.profile(
        await eng.change_bank(who, bank_id, lambda bank: parse(BankUpdate, convert.disposition_update(body, bank)))
    )


@router.post(
    "/{bank_id}/background",
    response_model=M.BackgroundOut,
    summary="Add to the bank's mission (the reference's deprecated background; nothing is inferred from it)",
)
async def add_background(body: M.AddBackgroundIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    await eng.create_bank(who, parse(BankCreate, dict(bank_id=bank_id)))

    def change(bank: Bank) -> BankUpdate | None:
        update = convert.background_update(body, bank)
        return parse(BankUpdate, update) if update else None

    return convert.background_out(await eng.change_bank(who, bank_id, change))


# ---- templates: a bank's setup without its memories ----------------------------------------------
@router.get(
    "/{bank_id}/export",
    response_model=M.TemplateOut,
    response_model_exclude_none=True,
    summary="The bank's setup as a template: settings, mental models and directives (no memories; our data export is "
    "GET /v1/banks/{bank_id}/export)",
)
async def export_template(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    bank, setup = await eng.export_bank_setup(who, bank_id)
    return convert.template_out(bank, setup)


@router.post(
    "/{bank_id}/import",
    response_model=M.TemplateImported,
    summary="Apply a template: the bank created if needed, settings merged in, mental models created or updated "
    "by id, directives by name",
)
async def import_template(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    body: M.TemplateIn = Body(...),
    dry_run: bool = Query(False, description="Say what would be done; change nothing."),
):
    setup = parse(BankSetup, convert.template_in(body))
    return convert.template_imported(await eng.apply_bank_setup(who, bank_id, setup, dry_run))


# ---- the LLM, probed ---------------------------------------------------------------------------
@router.post(
    "/{bank_id}/health/llm",
    response_model=M.LlmHealthOut,
    summary="Whether the LLMs the bank's work uses answer now: one small call each, status only",
)
async def llm_health(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.llm_health(await eng.probe_llms(who, bank_id))
