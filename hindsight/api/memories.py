from __future__ import annotations

from typing import Any

from fastapi import APIRouter, Body, Query, Response

from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.forgetting.schemas import (
    ForgetEntity,
    ForgetMemory,
    ForgetMemoryResult,
    ForgetRetainedDocument,
    Forgotten,
    PurgeMemories,
)
from hindsight.engine.memory.curation import MemoryHistory, MemoryInvalidation, MemoryUpdate, MemoryUpdated
from hindsight.engine.memory.graph import EntityDetail, EntityGraph, EntityGraphQuery, MemoryGraph, MemoryGraphQuery
from hindsight.engine.memory.records import EntityList, EntityQuery, Lineage, MemoryList, MemoryQuery
from hindsight.engine.memory.schemas import Memory, RetainBatchRequest, RetainItem, RetainResult
from hindsight.engine.memory.tags import TagList, TagQuery
from hindsight.engine.memory.timeseries import MemoriesTimeseries, TimeseriesQuery
from hindsight.engine.rules.validation import inline_defs, parse
from hindsight.engine.search.schemas import RecallRequest, RecallResult

router = APIRouter(prefix="/v1/banks/{bank_id}", tags=["memories"])

_RETAIN_BODY = {
    "oneOf": [
        inline_defs(schema, schema.get("$defs", {}))
        for schema in (RetainItem.model_json_schema(), RetainBatchRequest.model_json_schema())
    ]
}


@router.post(
    "/memories",
    summary='Retain one item, or {"items": [...]}; creates the bank on first use',
    openapi_extra={"requestBody": {"content": {"application/json": {"schema": _RETAIN_BODY}}, "required": True}},
)
async def retain(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    body: Any = Body(...),
    wait: bool = Query(False, description="With an LLM: return once facts are extracted, with their ids."),
) -> RetainResult:
    if not isinstance(body, dict):
        raise InvalidArgument("body: expected a JSON object with 'content' or 'items'")
    if "items" in body:
        batch = parse(RetainBatchRequest, body)
        return await eng.retain(who, bank_id, batch.items, wait=wait or batch.wait)
    return await eng.retain(who, bank_id, [parse(RetainItem, body)], wait=wait)


@router.post("/recall", summary="Recall memories for a query, cut to max_tokens", response_model=RecallResult)
async def recall(req: RecallRequest, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    # Serialised once by pydantic: the hot path skips FastAPI's second validation of the result.
    result = await eng.recall(who, bank_id, req)
    return Response(result.model_dump_json(), media_type="application/json")


@router.get("/memories", summary="List memories, newest first")
async def list_memories(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    query: MemoryQuery = Query(),
) -> MemoryList:
    return await eng.list_memories(who, bank_id, query)


@router.get("/memories/{memory_id}", summary="Get one memory")
async def get_memory(memory_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Memory:
    return await eng.get_memory(who, bank_id, memory_id)


@router.get("/memories/{memory_id}/lineage", summary="The raw units a fact came from, or the facts a raw unit gave")
async def memory_lineage(memory_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Lineage:
    return await eng.memory_lineage(who, bank_id, memory_id)


@router.patch("/memories/{memory_id}", summary="Edit, invalidate or restore one memory (recorded in its history)")
async def update_memory(
    memory_id: str, req: MemoryUpdate, bank_id: BankPath, who: PrincipalDep, eng: EngineDep
) -> MemoryUpdated:
    return await eng.update_memory(who, bank_id, memory_id, req)


@router.post("/memories/{memory_id}/invalidate", summary="Invalidate one memory: kept for audit, left out of recall")
async def invalidate_memory(
    memory_id: str,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    req: MemoryInvalidation | None = Body(None),
) -> MemoryUpdated:
    return await eng.invalidate_memory(who, bank_id, memory_id, req.reason if req else None)


@router.get("/memories/{memory_id}/history", summary="Every version of one memory: what changed, when, why, by whom")
async def memory_history(memory_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> MemoryHistory:
    return await eng.memory_history(who, bank_id, memory_id)


@router.get("/entities", summary="The bank's entities, most mentioned first")
async def list_entities(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    query: EntityQuery = Query(),
) -> EntityList:
    return await eng.list_entities(who, bank_id, query)


@router.get("/entities/graph", summary="The most mentioned entities and which of them memories name together")
async def entity_graph(
    bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: EntityGraphQuery = Query()
) -> EntityGraph:
    return await eng.entity_graph(who, bank_id, query)


@router.get("/entities/{entity_id}", summary="One entity, with the memories that mention it, newest first")
async def get_entity(entity_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> EntityDetail:
    return await eng.get_entity(who, bank_id, entity_id)


@router.get("/graph", summary="The newest memories, linked where they share an entity or one came from another")
async def memory_graph(
    bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: MemoryGraphQuery = Query()
) -> MemoryGraph:
    return await eng.memory_graph(who, bank_id, query)


@router.get("/tags", summary="The tags of the bank's memories (or mental models), most used first")
async def list_tags(bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: TagQuery = Query()) -> TagList:
    return await eng.list_tags(who, bank_id, query)


@router.get("/stats/memories-timeseries", summary="Memories taken in over a period, by type, in time buckets")
async def memories_timeseries(
    bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: TimeseriesQuery = Query()
) -> MemoriesTimeseries:
    return await eng.memories_timeseries(who, bank_id, query)


@router.delete(
    "/memories/{memory_id}",
    summary="Forget one memory: it, the facts extracted from it, its history, and its traces (docs/privacy.md)",
)
async def delete_memory(
    memory_id: str,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    include_sources: bool = Query(False, description=ForgetMemory.model_fields["include_sources"].description),
    dry_run: bool = Query(False, description=ForgetMemory.model_fields["dry_run"].description),
) -> ForgetMemoryResult:
    req = parse(ForgetMemory, {"memory_id": memory_id, "include_sources": include_sources, "dry_run": dry_run})
    return await eng.forget_memory(who, bank_id, req)


@router.post(
    "/memories/purge",
    summary="Forget, for good, memories that are no longer true (invalidated, superseded)",
)
async def purge_memories(req: PurgeMemories, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Forgotten:
    return await eng.purge_memories(who, bank_id, req)


@router.post(
    "/memories/forget-document",
    summary="Forget everything retained under a document_id (a conversation, a document) and drawn from it",
)
async def forget_retained_document(
    req: ForgetRetainedDocument, bank_id: BankPath, who: PrincipalDep, eng: EngineDep
) -> Forgotten:
    return await eng.forget_retained_document(who, bank_id, req)


@router.post(
    "/entities/forget",
    summary="Forget everything about a person (or any entity): every memory linked to it or naming it",
)
async def forget_entity(req: ForgetEntity, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Forgotten:
    return await eng.forget_entity(who, bank_id, req)
