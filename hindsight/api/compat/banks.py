"""Banks in the reference's shape: PUT creates or updates, the profile carries the disposition
traits (1-5) and the mission reflect answers in the light of."""

from __future__ import annotations

import re
from typing import Any

from fastapi import APIRouter, Query

from hindsight.api.compat import convert
from hindsight.api.compat import models as M
from hindsight.api.deps import BankId, Caller, EngineDep
from hindsight.engine.access.keys import Principal
from hindsight.engine.banks.schemas import Bank, BankCreate, BankUpdate
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.facade import Engine
from hindsight.engine.rules.fields import MAX_OFFSET
from hindsight.engine.rules.validation import parse

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


@router.get("/{bank_id}/stats", response_model=M.BankStats, summary="What the bank holds, counted")
async def bank_stats(bank_id: BankId, who: Caller, eng: EngineDep):
    c = await eng.count_bank(who, bank_id)
    ops = c.operations_by_status
    return M.BankStats(
        bank_id=bank_id,
        total_nodes=sum(c.memories_by_type.values()),
        total_links=sum(c.links_by_kind.values()),
        total_documents=c.documents,
        nodes_by_fact_type=c.memories_by_type,
        links_by_link_type=c.links_by_kind,
        links_by_fact_type={},
        links_breakdown={},
        pending_operations=ops.get("queued", 0) + ops.get("running", 0),
        failed_operations=ops.get("failed", 0),
        operations_by_status=ops,
        last_memory_write_at=c.last_memory_at.isoformat() if c.last_memory_at else None,
    )


# ---- config: the reference's per-bank settings ---------------------------------------------------
# The ones we act on, and where they go; every other key is kept and reported back as not applied.
_TRAITS = {f"disposition_{t}": t for t in ("skepticism", "literalism", "empathy")}
APPLIED = {"reflect_mission", *_TRAITS}
_KEY = re.compile(r"[a-z][a-z0-9_]{0,99}")


def _key(raw: str) -> str:
    """A setting's name as the reference's Python field (HINDSIGHT_API_X is also accepted)."""
    key = raw.removeprefix("HINDSIGHT_API_").lower() if raw.startswith("HINDSIGHT_API_") else raw
    if not _KEY.fullmatch(key):
        raise InvalidArgument(f"updates: {raw[:120]!r} is not a setting name (lower_snake_case)", "updates")
    return key


def _check(key: str, value: Any) -> None:
    if key == "reflect_mission" and not (isinstance(value, str) and len(value) <= 4_000):
        raise InvalidArgument("updates.reflect_mission: expected text of at most 4,000 characters", "updates")
    if key in _TRAITS and not (isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 5):
        raise InvalidArgument(f"updates.{key}: expected an integer from 1 to 5", "updates")


def _config_out(bank: Bank) -> M.BankConfig:
    overrides = dict(bank.client_settings)
    config: dict[str, Any] = {
        "reflect_mission": bank.mission,
        **{key: (bank.disposition or {}).get(trait, 3) for key, trait in _TRAITS.items()},
        "document_chunk_size": bank.document_chunk_size,
    }
    return M.BankConfig(
        bank_id=bank.bank_id,
        config={**overrides, **config},
        overrides=overrides,
        not_applied=sorted(k for k in overrides if k not in APPLIED),
    )


@router.get("/{bank_id}/config", response_model=M.BankConfig, summary="The bank's settings and its overrides")
async def get_config(bank_id: BankId, who: Caller, eng: EngineDep):
    return _config_out(await eng.get_bank(who, bank_id))


@router.patch(
    "/{bank_id}/config",
    response_model=M.BankConfig,
    summary="Override settings for this bank (those this server does not have are kept and reported)",
)
async def patch_config(body: M.BankConfigUpdate, bank_id: BankId, who: Caller, eng: EngineDep):
    bank = await eng.get_bank(who, bank_id)
    kept = dict(bank.client_settings)
    update: dict[str, Any] = {}
    for raw, value in body.updates.items():
        key = _key(raw)
        if value is None:  # null removes an override
            kept.pop(key, None)
            continue
        _check(key, value)
        kept[key] = value
        if key == "reflect_mission":
            update["mission"] = value
        elif key in _TRAITS:
            update.setdefault("disposition", dict(bank.disposition or {}))[_TRAITS[key]] = value
    if len(kept) > 100:
        raise InvalidArgument("updates: a bank keeps at most 100 overrides", "updates")
    bank = await eng.update_bank(who, bank_id, parse(BankUpdate, {**update, "client_settings": kept}))
    return _config_out(bank)


@router.delete("/{bank_id}/config", response_model=M.BankConfig, summary="Forget the bank's overrides")
async def reset_config(bank_id: BankId, who: Caller, eng: EngineDep):
    """The overrides go; the mission and disposition they set stay the bank's profile (a PATCH of
    the bank changes those)."""
    await eng.get_bank(who, bank_id)
    return _config_out(await eng.update_bank(who, bank_id, parse(BankUpdate, {"client_settings": {}})))
