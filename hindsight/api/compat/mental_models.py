"""Mental models in the reference's shape (`id`, `items` lists, `detail` levels). Triggers and
refresh modes are accepted and ignored: our scheduler refreshes a model when memories carrying
its tags arrive, and every refresh is a full one."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Body, Query

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.reflection.mental_models import MentalModelCreate, MentalModelQuery, MentalModelUpdate
from hindsight.engine.rules.fields import MAX_OFFSET
from hindsight.engine.rules.tags import TagsMatch
from hindsight.engine.rules.validation import parse
from hindsight.web.errors import LLM_ERROR_RESPONSES

router = APIRouter(prefix="/v1/default/banks/{bank_id}/mental-models", tags=["Hindsight-compatible: mental models"])
Detail = Literal["metadata", "content", "full"]


@router.get("", response_model=M.MentalModelList, summary="List mental models (content with detail=content|full)")
async def list_models(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    tags: list[str] | None = Query(None),
    tags_match: TagsMatch = "any",
    detail: Detail = "metadata",
    limit: int = Query(100, ge=1, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    query = parse(
        MentalModelQuery,
        dict(tags=convert.as_list(tags) or None, tags_match=tags_match, limit=limit, offset=offset),
    )
    return convert.mental_model_list(await eng.list_mental_models(who, bank_id, query), detail, limit, offset)


@router.post(
    "", response_model=M.MentalModelCreated, summary="Create a mental model; its content is generated in the background"
)
async def create_model(body: M.MentalModelIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    req = parse(
        MentalModelCreate,
        dict(
            name=body.name,
            source_query=body.source_query,
            mental_model_id=body.id,
            tags=convert.as_list(body.tags) or None,
            max_tokens=body.max_tokens,
        ),
    )
    created = await eng.create_mental_model(who, bank_id, req)
    return M.MentalModelCreated(mental_model_id=created.mental_model_id, operation_id=created.operation_id)


@router.get("/{model_id}", response_model=M.MentalModelOut, summary="One mental model")
async def get_model(
    model_id: str,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    detail: Detail = "full",
):
    return convert.mental_model(await eng.get_mental_model(who, bank_id, model_id), detail != "metadata")


@router.patch("/{model_id}", response_model=M.MentalModelOut, summary="Update a mental model")
async def update_model(
    model_id: str,
    body: M.MentalModelPatch,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
):
    req = parse(
        MentalModelUpdate,
        dict(
            name=body.name,
            source_query=body.source_query,
            max_tokens=body.max_tokens,
            tags=convert.as_list(body.tags) if body.tags is not None else None,
        ),
    )
    return convert.mental_model(await eng.update_mental_model(who, bank_id, model_id, req))


@router.delete("/{model_id}", summary="Delete a mental model")
async def delete_model(model_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> dict:
    await eng.delete_mental_model(who, bank_id, model_id)
    return {"status": "deleted"}


@router.post("/{model_id}/refresh", response_model=M.Submitted, summary="Refresh a mental model in the background")
async def refresh_model(
    model_id: str,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    _body: dict | None = Body(None),
):
    op = await eng.refresh_mental_model(who, bank_id, model_id)
    return M.Submitted(operation_id=op.operation_id)


@router.post(
    "/{model_id}/clear",
    response_model=M.MentalModelOut,
    summary="Clear a mental model's content: pending until its next refresh (every refresh is a full one here)",
)
async def clear_model(model_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.mental_model(await eng.clear_mental_model(who, bank_id, model_id))


@router.post(
    "/{model_id}/dry-run-refresh",
    response_model=M.DryRunRefreshOut,
    summary="What a refresh would write now, with the diff from the content it has; nothing written",
    responses=LLM_ERROR_RESPONSES,
)
async def dry_run_refresh(model_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.dry_run_refresh_out(await eng.preview_mental_model_refresh(who, bank_id, model_id))


@router.get("/{model_id}/history", summary="A mental model's contents, most recent first")
async def history(model_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> list[dict]:
    return convert.model_history(await eng.mental_model_history(who, bank_id, model_id))
