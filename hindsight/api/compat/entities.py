"""Entities, the entity and memory graphs, tags and the memories time series in the reference's
shapes. Our entities keep no observations: an entity's observations are the memories that
mention it, and regenerating them has nothing to do (docs/clients.md)."""

from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Query

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.memory.graph import MAX_EDGES, MAX_NODES, EntityGraphQuery, MemoryGraphQuery
from hindsight.engine.memory.records import EntityQuery
from hindsight.engine.memory.tags import TagQuery
from hindsight.engine.memory.timeseries import PERIODS, TimeseriesQuery
from hindsight.engine.rules.fields import MAX_OFFSET
from hindsight.engine.rules.tags import TAGS_MATCH_VALUES
from hindsight.engine.rules.validation import parse

router = APIRouter(prefix="/v1/default/banks/{bank_id}", tags=["Hindsight-compatible: entities and graphs"])
TIME_FIELDS = ("created_at", "mentioned_at", "occurred_start")


@router.get("/entities", response_model=M.EntityListOut, summary="The bank's entities, most mentioned first")
async def list_entities(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    limit: int = Query(100, ge=0, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    found = await eng.list_entities(who, bank_id, parse(EntityQuery, dict(limit=max(limit, 1), offset=offset)))
    shown = found.entities[:limit]
    seen = await eng.entities_seen(who, bank_id, [e.id for e in shown]) if shown else {}
    return convert.entity_list(found, seen, limit, offset)


@router.get("/entities/graph", response_model=M.EntityGraphOut, summary="Entities and how often memories name two")
async def entity_graph(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    limit: int = Query(1000, ge=0, le=MAX_EDGES),
    min_count: int = Query(1, ge=1, le=1_000_000),
):
    query = parse(EntityGraphQuery, dict(nodes=MAX_NODES, limit=limit, min_count=min_count))
    return convert.entity_graph(await eng.entity_graph(who, bank_id, query), limit)


@router.get("/entities/{entity_id}", response_model=M.EntityDetailOut, summary="One entity and its memories")
async def get_entity(entity_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.entity_detail(await eng.get_entity(who, bank_id, entity_id))


@router.post(
    "/entities/{entity_id}/regenerate",
    response_model=M.EntityDetailOut,
    summary="One entity and its memories (nothing to regenerate: its observations are its memories)",
)
async def regenerate_entity(entity_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.entity_detail(await eng.get_entity(who, bank_id, entity_id))


@router.get("/graph", response_model=M.GraphOut, summary="The newest memories and how they link")
async def graph(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    type: str | None = None,
    limit: int = Query(1000, ge=0, le=1000),
    q: str | None = None,
    tags: list[str] | None = Query(None),
    tags_match: str = "all_strict",
    document_id: str | None = None,
    chunk_id: str | None = None,
):
    """`type` observation (or another we do not keep) draws nothing; `chunk_id` is accepted and
    not applied (our memories are their own chunks)."""
    values = dict(limit=limit, q=q, tags=tags, tags_match=tags_match, document_id=document_id)
    if type in ("world", "experience"):
        values["type"] = type
    elif type is not None:
        values["limit"] = 0
    if tags_match not in TAGS_MATCH_VALUES:
        values["tags_match"] = "all_strict"
    return convert.memory_graph(await eng.memory_graph(who, bank_id, parse(MemoryGraphQuery, values)), limit)


@router.get("/tags", response_model=M.TagListOut, summary="Tags with how many memories carry each, `*` a wildcard")
async def list_tags(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    q: str | None = None,
    source: Literal["memories", "mental_models"] = "memories",
    limit: int = Query(100, ge=0, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    query = parse(TagQuery, dict(q=q, source=source, limit=limit, offset=offset))
    return convert.tag_list(await eng.list_tags(who, bank_id, query))


@router.get("/stats/memories-timeseries", response_model=M.TimeseriesOut, summary="Memories taken in, by type and time")
async def memories_timeseries(
    bank_id: BankPath, who: PrincipalDep, eng: EngineDep, period: str = "7d", time_field: str = "created_at"
):
    """An unknown period reads as 7d and an unknown time field as created_at, as the reference reads them."""
    query = parse(
        TimeseriesQuery,
        dict(
            period=period if period in PERIODS else "7d",
            time_field=time_field if time_field in TIME_FIELDS else "created_at",
        ),
    )
    return convert.timeseries(await eng.memories_timeseries(who, bank_id, query))
