"""What the reference calls consolidation and observations, in our terms.

The reference distils its facts into *observations*: beliefs an LLM keeps consolidated across
facts, by tag scope, in the background. This server keeps no observations: what a bank knows
beyond its memories is its mental models (questions whose answers reflect keeps current) and the
facts extraction draws from what is retained. So consolidation here means bringing those up to
date: `consolidate` refreshes now every mental model whose content is behind the bank's memories
(what the scheduler does on its own once a bank is quiet), and `consolidation/recover` asks again
for the fact extractions and refreshes that failed. The observation routes answer what a bank
without observations holds: none to list, none to clear (after checking the caller may write the
bank, and that a memory named exists)."""

from __future__ import annotations

from fastapi import APIRouter, Body, Query

from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.rules.fields import MAX_OFFSET

router = APIRouter(prefix="/v1/default/banks/{bank_id}", tags=["Hindsight-compatible: consolidation"])


@router.post(
    "/consolidate",
    response_model=M.ConsolidationOut,
    summary="Refresh now every mental model behind the bank's memories (an operation; we keep no observations)",
)
async def consolidate(
    bank_id: BankPath, who: PrincipalDep, eng: EngineDep, _body: M.ConsolidationIn | None = Body(None)
):
    done = await eng.consolidate(who, bank_id)
    return M.ConsolidationOut(operation_id=done.operation_id, deduplicated=done.deduplicated)


@router.post(
    "/consolidation/recover",
    response_model=M.Recovered,
    summary="Ask again for the bank's failed fact extractions and mental-model refreshes",
)
async def recover(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return M.Recovered(retried_count=await eng.recover_consolidation(who, bank_id))


@router.delete(
    "/observations", response_model=M.Deleted, summary="Clear the bank's observations: it keeps none, so none go"
)
async def clear_observations(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    eng.require(who, bank_id, write=True)
    return M.Deleted(
        message="this server keeps no observations (mental models hold what is distilled)", deleted_count=0
    )


@router.get(
    "/observations/scopes", response_model=M.ObservationScopes, summary="The bank's observation scopes: none kept"
)
async def observation_scopes(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    eng.require(who, bank_id)
    return M.ObservationScopes(scopes=[], total=0, limit=limit, offset=offset)


@router.delete(
    "/memories/{memory_id}/observations",
    response_model=M.ObservationsCleared,
    summary="Clear the observations drawn from one memory: none are kept, so none go",
)
async def clear_memory_observations(memory_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    eng.require(who, bank_id, write=True)
    await eng.get_memory(who, bank_id, memory_id)  # a memory that does not exist is a 404, as there
    return M.ObservationsCleared(deleted_count=0)
