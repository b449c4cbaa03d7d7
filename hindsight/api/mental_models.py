"""REST face of reflect, mental models, operations and LLM usage (thin over the engine)."""

from __future__ import annotations

from fastapi import APIRouter, Query

from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.banks.usage import LLMRequestList, LLMRequestQuery, LLMStats, LLMStatsQuery
from hindsight.engine.queue.schemas import Operation, OperationList, OperationQuery
from hindsight.engine.reflection.mental_models import (
    MentalModel,
    MentalModelCreate,
    MentalModelDeleted,
    MentalModelList,
    MentalModelOperation,
    MentalModelQuery,
    MentalModelUpdate,
    MentalModelVersion,
)
from hindsight.engine.reflection.reflect import ReflectRequest, ReflectResult
from hindsight.web.errors import LLM_ERROR_RESPONSES

router = APIRouter(prefix="/v1/banks/{bank_id}")


@router.post(
    "/reflect",
    tags=["reflect"],
    summary="Answer a question from the bank's memories (LLM, or extractive offline)",
    responses=LLM_ERROR_RESPONSES,
)
async def reflect(req: ReflectRequest, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> ReflectResult:
    return await eng.reflect(who, bank_id, req)


@router.post(
    "/mental-models",
    status_code=202,
    tags=["mental models"],
    summary="Create a mental model; content is filled asynchronously",
)
async def create(req: MentalModelCreate, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> MentalModelOperation:
    return await eng.create_mental_model(who, bank_id, req)


@router.get("/mental-models", tags=["mental models"], summary="List mental models (optionally sharing a tag)")
async def list_(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    query: MentalModelQuery = Query(),
) -> MentalModelList:
    return await eng.list_mental_models(who, bank_id, query)


@router.get("/mental-models/{mental_model_id}", tags=["mental models"], summary="Get a mental model with its content")
async def get(mental_model_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> MentalModel:
    return await eng.get_mental_model(who, bank_id, mental_model_id)


@router.get(
    "/mental-models/{mental_model_id}/history", tags=["mental models"], summary="Previous contents, newest first"
)
async def history(
    mental_model_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep
) -> list[MentalModelVersion]:
    return await eng.mental_model_history(who, bank_id, mental_model_id)


@router.patch(
    "/mental-models/{mental_model_id}", tags=["mental models"], summary="Update name, source query, tags or max tokens"
)
async def update(
    req: MentalModelUpdate,
    mental_model_id: str,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
) -> MentalModel:
    return await eng.update_mental_model(who, bank_id, mental_model_id, req)


@router.delete("/mental-models/{mental_model_id}", tags=["mental models"], summary="Delete a mental model")
async def delete(mental_model_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> MentalModelDeleted:
    return await eng.delete_mental_model(who, bank_id, mental_model_id)


@router.post(
    "/mental-models/{mental_model_id}/refresh", status_code=202, tags=["mental models"], summary="Queue a refresh"
)
async def refresh(mental_model_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> MentalModelOperation:
    return await eng.refresh_mental_model(who, bank_id, mental_model_id)


@router.get("/operations", tags=["operations"], summary="List operations, newest first")
async def list_operations(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    query: OperationQuery = Query(),
) -> OperationList:
    return await eng.list_operations(who, bank_id, query)


@router.get("/operations/{operation_id}", tags=["operations"], summary="Get one operation")
async def get_operation(operation_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Operation:
    return await eng.get_operation(who, bank_id, operation_id)


@router.post("/operations/{operation_id}/cancel", tags=["operations"], summary="Cancel a queued or running operation")
async def cancel_operation(operation_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Operation:
    return await eng.cancel_operation(who, bank_id, operation_id)


@router.get("/usage", tags=["operations"], summary="LLM calls, tokens and cost, by operation and model")
async def usage(bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> dict:
    return await eng.usage(who, bank_id)


@router.get(
    "/llm-requests",
    tags=["operations"],
    summary="Every LLM call of the bank, newest first: outcome (the cause of a failure), tokens, duration",
)
async def llm_requests(
    bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: LLMRequestQuery = Query()
) -> LLMRequestList:
    return await eng.list_llm_requests(who, bank_id, query)


@router.get("/llm-requests/stats", tags=["operations"], summary="LLM calls and tokens by outcome over a period")
async def llm_request_stats(
    bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: LLMStatsQuery = Query()
) -> LLMStats:
    return await eng.llm_request_stats(who, bank_id, query)
