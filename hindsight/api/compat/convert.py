"""Engine models to and from the `/v1/default` shapes (one place for every mapping)."""

from __future__ import annotations

import difflib
import json
from datetime import datetime, timedelta
from typing import Any

import pydantic_core

from hindsight.api.compat import schemas as M
from hindsight.engine.audit.schemas import AuditEntry, AuditList, AuditStats
from hindsight.engine.banks.llm_health import LlmHealth
from hindsight.engine.banks.schemas import Bank, BankCounts, BankList
from hindsight.engine.banks.settings import TRAITS, effective_settings, not_applied
from hindsight.engine.banks.usage import LLMRequest, LLMRequestList, LLMStats
from hindsight.engine.directives.schemas import Directive, DirectiveList
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.knowledge.pages import KnowledgeBundle, KnowledgeNode, KnowledgePage, KnowledgeTree, PageHits
from hindsight.engine.memory.curation import MemoryHistory
from hindsight.engine.memory.extraction import ExtractionPreview
from hindsight.engine.memory.graph import EntityDetail, EntityGraph, MemoryGraph
from hindsight.engine.memory.records import EntityList
from hindsight.engine.memory.retain import RetainAccepted
from hindsight.engine.memory.schemas import Memory, RetainItem, RetainResult, parse_retain_items
from hindsight.engine.memory.sources import RetainedSource, SourceUnit
from hindsight.engine.memory.tags import TagList
from hindsight.engine.memory.timeseries import MemoriesTimeseries
from hindsight.engine.notify.schemas import Delivery, DeliveryList, Webhook, WebhookList
from hindsight.engine.queue.schemas import Operation, OperationList
from hindsight.engine.reflection.mental_models import MentalModel, MentalModelList, MentalModelVersion, RefreshPreview
from hindsight.engine.reflection.reflect import ReflectResult
from hindsight.engine.reflection.setup import BankSetup, SetupApplied
from hindsight.engine.rules.validation import parse
from hindsight.engine.search.schemas import RecallResult
from hindsight.engine.search.trace import ResultTrace

# Our operation states in the reference's words, and back (either word is accepted in filters).
STATUS_OUT = {
    "queued": "pending",
    "running": "processing",
    "succeeded": "completed",
    "failed": "failed",
    "cancelled": "cancelled",
}
STATUS_IN = {**{v: k for k, v in STATUS_OUT.items()}, **{k: k for k in STATUS_OUT}}
KNOWN_TYPES = ("world", "experience")


def iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def string_values(meta: dict[str, Any] | None) -> dict[str, str]:
    """The client's models take metadata as strings only; other JSON values travel as JSON text."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in (meta or {}).items()}


def recall_result(m: Memory) -> M.RecallResultOut:
    return M.RecallResultOut(
        id=m.id,
        text=m.text,
        type=m.type,
        entities=m.entities,
        context=m.context,
        occurred_start=iso(m.occurred_start),
        occurred_end=iso(m.occurred_end),
        mentioned_at=iso(m.mentioned_at),
        document_id=m.document_id,
        metadata=string_values(m.metadata),
        tags=m.tags,
    )


def recall_scores(t: ResultTrace) -> M.RecallScores:
    """Hindsight's scores of a result from our trace of it: an arm's score only where that arm found it."""
    return M.RecallScores(
        final=t.score,
        semantic=t.semantic if "semantic" in t.arms else None,
        keyword=t.keyword if "keyword" in t.arms else None,
    )


def recall_answer(result: RecallResult) -> bytes:
    """The recall answer as JSON, in RecallOut's shape (every field, nulls too), written from the
    engine's result in one pass. Why: making a RecallResultOut of each of ~100 results and then
    FastAPI's check of the whole answer against its response model would cost a large share of
    the recall itself (bench/README.md, "Recall that finds what matters")."""
    traced = result.trace.results if result.trace is not None else None
    rows = [
        {
            "id": m.id,
            "text": m.text,
            "type": m.type,
            "entities": m.entities,
            "context": m.context,
            "occurred_start": iso(m.occurred_start),
            "occurred_end": iso(m.occurred_end),
            "mentioned_at": iso(m.mentioned_at),
            "document_id": m.document_id,
            "metadata": string_values(m.metadata),
            "chunk_id": None,
            "tags": m.tags,
            "scores": None if traced is None else recall_scores(traced[i]).model_dump(),
        }
        for i, m in enumerate(result.results)
    ]
    trace = None if result.trace is None else result.trace.model_dump() | {"total_tokens": result.total_tokens}
    return pydantic_core.to_json({"results": rows, "trace": trace})


def reflect_fact(m: Memory) -> M.ReflectFact:
    """A fact reflect used: a recall result without entities (Hindsight's FactUsed shape)."""
    return M.ReflectFact(**recall_result(m).model_dump(exclude={"entities", "chunk_id"}))


def memory_unit(m: Memory) -> M.MemoryUnit:
    when = m.occurred_start or m.mentioned_at
    return M.MemoryUnit(
        id=m.id,
        text=m.text,
        context=m.context,
        date=when.strftime("%Y-%m-%d %H:%M") if when else "N/A",
        fact_type=m.type,
        type=m.type,
        document_id=m.document_id,
        mentioned_at=iso(m.mentioned_at),
        occurred_start=iso(m.occurred_start),
        occurred_end=iso(m.occurred_end),
        entities=", ".join(m.entities) if m.entities else "None",
        tags=m.tags,
        metadata=m.metadata,
        created_at=iso(m.created_at),
    )


def curated_unit(m: Memory) -> dict[str, Any]:
    """One memory as the reference's single-memory answers show it, with its curation state and
    time of truth."""
    return {
        **memory_unit(m).model_dump(),
        "entities": m.entities,
        "chunk_id": None,
        "state": "invalidated" if m.invalidated_at else "valid",
        "reason": m.invalidation_reason,
        "valid_from": iso(m.valid_from),
        "valid_to": iso(m.valid_to),
        "superseded_by": m.superseded_by,
    }


def versions(history: MemoryHistory) -> list[dict[str, Any]]:
    return [v.model_dump(mode="json") for v in history.versions]


def disposition(d: dict[str, Any] | None) -> M.Disposition:
    """Traits from a bank's disposition object; missing or out-of-range traits read as 3."""
    d = d or {}

    def trait(name: str) -> int:
        v = d.get(name)
        return v if isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= 5 else 3

    return M.Disposition(skepticism=trait("skepticism"), literalism=trait("literalism"), empathy=trait("empathy"))


def profile(b: Bank) -> M.BankProfile:
    return M.BankProfile(
        bank_id=b.bank_id,
        name=b.name or b.bank_id,
        disposition=disposition(b.disposition),
        mission=b.mission or "",
        background=b.mission or "",
    )


def bank_item(b: Bank) -> M.BankListItem:
    return M.BankListItem(
        bank_id=b.bank_id,
        name=b.name or b.bank_id,
        disposition=disposition(b.disposition),
        mission=b.mission,
        created_at=iso(b.created_at),
        updated_at=iso(b.updated_at),
        fact_count=b.memory_count,
        last_write_at=iso(b.last_memory_at),
    )


def operation(op: Operation) -> M.OperationOut:
    payload = op.payload or {}
    return M.OperationOut(
        id=op.operation_id,
        operation_id=op.operation_id,
        task_type=op.type,
        operation_type=op.type,
        # a finished retain keeps its count of items, not their text (engine/forgetting/erase.py)
        items_count=payload["item_count"]
        if isinstance(payload.get("item_count"), int)
        else len(payload.get("items") or payload.get("raw_ids") or payload.get("files") or []),
        mental_model_id=payload.get("mental_model_id"),
        created_at=op.created_at.isoformat(),
        updated_at=iso(op.updated_at),
        status=STATUS_OUT[op.status],
        error_message=op.error,
        retry_count=max(0, op.attempts - 1),
        next_retry_at=iso(op.run_after) if op.status == "queued" else None,
    )


def operation_list(bank_id: str, found: OperationList, limit: int, offset: int) -> M.OperationList:
    return M.OperationList(
        bank_id=bank_id,
        total=found.total,
        limit=limit,
        offset=offset,
        operations=[operation(o) for o in found.operations],
    )


def operation_status(op: Operation) -> M.OperationStatus:
    return M.OperationStatus(
        operation_id=op.operation_id,
        id=op.operation_id,
        status=STATUS_OUT[op.status],
        operation_type=op.type,
        task_type=op.type,
        mental_model_id=(op.payload or {}).get("mental_model_id"),
        created_at=iso(op.created_at),
        updated_at=iso(op.updated_at),
        completed_at=iso(op.finished_at),
        error_message=op.error,
        retry_count=max(0, op.attempts - 1),
        next_retry_at=iso(op.run_after) if op.status == "queued" else None,
        result_metadata=result_metadata(op),
    )


def result_metadata(op: Operation) -> dict[str, Any] | None:
    """An operation's result, with the download URL of the archive an export wrote (where the
    reference's clients fetch it)."""
    if not isinstance(op.result, dict):
        return None
    if op.type == "export_documents" and isinstance(op.result.get("storage_key"), str):
        return {**op.result, "download_url": download_url(op.result["storage_key"])}
    return op.result


def mental_model(m: MentalModel, with_content: bool = True) -> M.MentalModelOut:
    return M.MentalModelOut(
        id=m.mental_model_id,
        bank_id=m.bank_id,
        name=m.name,
        source_query=m.source_query,
        content=(m.content or "") if with_content else None,
        tags=m.tags,
        max_tokens=m.max_tokens,
        last_refreshed_at=iso(m.last_refreshed_at),
        last_refresh_failed_at=iso(m.updated_at) if m.last_error else None,
        created_at=iso(m.created_at),
        is_stale=m.pending_operation_id is not None,
    )


def mental_model_list(found: MentalModelList, detail: str, limit: int, offset: int) -> M.MentalModelList:
    return M.MentalModelList(
        items=[mental_model(m, detail != "metadata") for m in found.mental_models],
        total=found.total,
        limit=limit,
        offset=offset,
    )


def model_history(versions: list[MentalModelVersion]) -> list[dict[str, Any]]:
    """A model's contents, newest first, each with the one it replaced."""
    return [
        {
            "version": v.version,
            "content": v.content,
            "changed_at": v.created_at.isoformat(),
            "previous_content": versions[i + 1].content if i + 1 < len(versions) else None,
        }
        for i, v in enumerate(versions)
    ]


def as_list(tags: list[str] | None) -> list:
    return [] if tags is None else list(tags)


def _text_of(content: str | list[dict[str, Any]], where: str) -> str:
    """Plain text, or content blocks of which only text blocks can be kept (no vision model)."""
    if isinstance(content, str):
        return content
    parts = []
    for i, block in enumerate(content):
        if not isinstance(block, dict) or block.get("type") != "text" or not isinstance(block.get("text"), str):
            raise InvalidArgument(
                f"{where}.content.{i}: only text blocks are supported (this server has no vision model)",
                f"{where}.content",
            )
        parts.append(block["text"])
    return "\n".join(parts)


def retain_items(body: M.RetainIn) -> list[RetainItem]:
    """The client's items as engine items, errors naming `items.N.field` as our own API does."""
    raw = []
    for i, it in enumerate(body.items):
        where = f"items.{i}"
        if it.update_mode not in (None, "replace"):
            raise InvalidArgument(
                f"{where}.update_mode: only 'replace' is supported (a document_id retained again replaces "
                "its memories)",
                f"{where}.update_mode",
            )
        item: dict[str, Any] = {"content": _text_of(it.content, where)}
        if isinstance(it.timestamp, str) and it.timestamp.strip().lower() == "unset":
            item["timestamp"] = "unset"
        elif it.timestamp is not None:
            item["timestamp"] = it.timestamp
        if it.context:
            item["context"] = it.context
        if it.metadata:
            item["metadata"] = it.metadata
        if it.document_id:
            item["document_id"] = it.document_id
        if it.entities:
            item["entities"] = [e.model_dump() for e in it.entities]
        tags = as_list(it.tags) + list(body.document_tags or [])
        if tags:
            item["tags"] = tags
        raw.append(item)
    return parse_retain_items(raw)


# ---- banks ----------------------------------------------------------------------------------------
def bank_list(found: BankList, limit: int, offset: int) -> M.BankList:
    return M.BankList(banks=[bank_item(b) for b in found.banks], total=found.total, limit=limit, offset=offset)


def profile_update(body: M.BankIn, bank: Bank) -> dict[str, Any]:
    """The BankUpdate fields a PUT or PATCH of the profile sets on `bank`: its name, mission, and
    disposition traits merged into the bank's own."""
    update: dict[str, Any] = {}
    if body.name is not None:
        update["name"] = body.name
    if body.resolved_mission() is not None:
        update["mission"] = body.resolved_mission()
    if traits := body.disposition_updates():
        update["disposition"] = {**(bank.disposition or {}), **traits}
    return update


def bank_stats(c: BankCounts) -> M.BankStats:
    ops = c.operations_by_status
    return M.BankStats(
        bank_id=c.bank_id,
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


# ---- config: the reference's per-bank settings (engine/banks/settings.py maps them) -------------
def config_out(bank: Bank) -> M.BankConfig:
    return M.BankConfig(
        bank_id=bank.bank_id,
        config=effective_settings(bank),
        overrides=dict(bank.client_settings),
        not_applied=not_applied(bank),
    )


# ---- memories ---------------------------------------------------------------------------------------
def retain_accepted(accepted: RetainAccepted) -> M.RetainOut:
    return M.RetainOut(
        bank_id=accepted.bank_id, items_count=accepted.items, is_async=True, operation_id=accepted.operation_id
    )


def retain_done(result: RetainResult) -> M.RetainOut:
    return M.RetainOut(
        bank_id=result.bank_id,
        items_count=result.items,
        is_async=False,
        operation_id=result.operation_id,
        extraction=result.extraction,
    )


def reflect_out(res: ReflectResult, facts: list[Memory] | None, models: list[MentalModel] | None) -> M.ReflectOut:
    """The answer; `facts` and `models` (what it was based on) when the request asked to include them."""
    based_on = None
    if facts is not None:
        based_on = M.ReflectBasedOn(
            memories=[reflect_fact(m) for m in facts],
            mental_models=[
                M.ReflectMentalModel(id=m.mental_model_id, text=m.content or "", context=m.name) for m in models or []
            ],
        )
    usage = None
    if res.usage:
        pt, ct = res.usage["prompt_tokens"], res.usage["completion_tokens"]
        usage = M.TokenUsage(input_tokens=pt, output_tokens=ct, total_tokens=pt + ct)
    return M.ReflectOut(
        text=res.answer,
        based_on=based_on,
        structured_output=res.structured_output,
        structured_output_error=res.structured_output_error,
        usage=usage,
        mode=res.mode,
        llm_error=res.llm_error.model_dump() if res.llm_error else None,
    )


def memory_update(body: M.UpdateMemoryIn) -> dict[str, Any]:
    """The MemoryUpdate fields a PATCH sets (the reference's fact_type is our type)."""
    fields = body.model_dump(exclude_unset=True, exclude={"resolve_entities"})
    if "fact_type" in fields:
        fields["type"] = fields.pop("fact_type")
    return fields


# ---- retained sources (the reference's documents) ---------------------------------------------------
def source_list(found: list[RetainedSource], total: int, limit: int, offset: int) -> M.DocumentList:
    return M.DocumentList(
        items=[
            M.DocumentItem(
                id=d.id,
                bank_id=d.bank_id,
                content_hash=d.content_hash,
                created_at=d.created_at.isoformat(),
                updated_at=d.updated_at.isoformat(),
                text_length=len(d.original_text),
                memory_unit_count=d.memory_count,
                document_metadata=d.metadata,
                tags=d.tags,
            )
            for d in found
        ],
        total=total,
        limit=limit,
        offset=offset,
    )


def chunk_list(units: list[Memory], total: int, document_id: str, bank_id: str, limit: int, offset: int) -> M.ChunkList:
    return M.ChunkList(
        items=[
            M.Chunk(
                chunk_id=u.id,
                document_id=document_id,
                bank_id=bank_id,
                chunk_index=offset + i,
                chunk_text=u.text,
                created_at=u.created_at.isoformat() if u.created_at else "",
            )
            for i, u in enumerate(units)
        ],
        total=total,
        limit=limit,
        offset=offset,
    )


def source(d: RetainedSource) -> M.DocumentOut:
    return M.DocumentOut(
        id=d.id,
        bank_id=d.bank_id,
        original_text=d.original_text,
        content_hash=d.content_hash,
        created_at=d.created_at.isoformat(),
        updated_at=d.updated_at.isoformat(),
        memory_unit_count=d.memory_count,
        tags=d.tags,
        document_metadata=d.metadata,
    )


# ---- the rest of the reference's surface ------------------------------------------------------------
def disposition_update(body: M.UpdateDispositionIn, bank: Bank) -> dict[str, Any]:
    """The traits of a PUT of the profile, merged into the bank's own disposition."""
    return {"disposition": {**(bank.disposition or {}), **body.disposition.model_dump()}}


def background_update(body: M.AddBackgroundIn, bank: Bank) -> dict[str, Any]:
    """Background added to the mission (the reference's deprecated route now writes the mission):
    appended as a paragraph of its own, unless the mission holds it already."""
    mission, added = bank.mission or "", body.content.strip()
    if added in mission:
        return {}
    merged = f"{mission}\n\n{added}" if mission else added
    if len(merged) > 4_000:
        raise InvalidArgument("content: the mission with this added would pass 4,000 characters", "content")
    return {"mission": merged}


def background_out(b: Bank) -> M.BackgroundOut:
    return M.BackgroundOut(mission=b.mission or "", background=b.mission or "", disposition=disposition(b.disposition))


def template_out(bank: Bank, setup: BankSetup) -> M.TemplateOut:
    """A bank's setup as the reference's template manifest: the settings by its names (ours that
    it has: the mission and traits; those kept for the bank as it was given them)."""
    settings: dict[str, Any] = {**bank.client_settings, "reflect_mission": bank.mission}
    for key, trait in TRAITS.items():
        if trait in (bank.disposition or {}):
            settings[key] = bank.disposition[trait]
    return M.TemplateOut(
        bank={k: v for k, v in settings.items() if v is not None},
        mental_models=[
            M.TemplateModelOut(
                id=m.mental_model_id, name=m.name, source_query=m.source_query, tags=m.tags, max_tokens=m.max_tokens
            )
            for m in setup.mental_models or []
        ],
        directives=[
            {"name": d.name, "content": d.content, "priority": d.priority, "is_active": d.is_active, "tags": d.tags}
            for d in setup.directives or []
        ],
    )


def template_in(body: M.TemplateIn) -> dict[str, Any]:
    """The BankSetup a manifest asks for: its settings, mental models (by id) and directives (by
    name)."""
    if body.version.strip() != "1":
        raise InvalidArgument(f'version: {body.version!r} is not a template version this server reads ("1")', "version")
    setup: dict[str, Any] = {}
    if body.name is not None:
        setup["name"] = body.name
    if body.bank is not None:
        setup["settings"] = body.bank
    if body.directives is not None:
        setup["directives"] = [
            {
                "name": d.name,
                "content": d.content,
                "priority": d.priority if d.priority is not None else 0,
                "is_active": d.is_active if d.is_active is not None else True,
                "tags": as_list(d.tags),
            }
            for d in body.directives
        ]
    if body.mental_models is not None:
        setup["mental_models"] = [
            {
                "mental_model_id": m.id,
                "name": m.name,
                "source_query": m.source_query,
                "tags": as_list(m.tags),
                "max_tokens": m.max_tokens if m.max_tokens is not None else 2048,
                "content": m.content,
            }
            for m in body.mental_models
        ]
    return setup


def template_imported(applied: SetupApplied) -> M.TemplateImported:
    return M.TemplateImported(
        bank_id=applied.bank_id,
        config_applied=applied.settings_applied,
        mental_models_created=applied.mental_models_created,
        mental_models_updated=applied.mental_models_updated,
        directives_created=applied.directives_created,
        directives_updated=applied.directives_updated,
        operation_ids=applied.operation_ids,
        dry_run=applied.dry_run,
    )


def llm_health(h: LlmHealth) -> M.LlmHealthOut:
    return M.LlmHealthOut(bank_id=h.bank_id, operations=[M.LlmOperationHealth(**p.model_dump()) for p in h.operations])


def usage_out(usage: dict[str, int] | None) -> M.TokenUsage:
    pt, ct = (usage or {}).get("prompt_tokens", 0), (usage or {}).get("completion_tokens", 0)
    return M.TokenUsage(input_tokens=pt, output_tokens=ct, total_tokens=pt + ct)


def dry_run_extract_in(body: M.DryRunExtractIn) -> dict[str, Any]:
    item: dict[str, Any] = {"content": _text_of(body.content, "body")}
    if body.context:
        item["context"] = body.context
    if body.timestamp is not None:
        item["timestamp"] = body.timestamp
    return item


def dry_run_extract_out(p: ExtractionPreview) -> M.DryRunExtractOut:
    return M.DryRunExtractOut(
        facts=[
            M.ExtractedFactOut(
                text=f.text,
                fact_type=f.type,
                occurred_start=iso(f.occurred_start),
                occurred_end=iso(f.occurred_end),
                entities=f.entities,
            )
            for f in p.facts
        ],
        usage=usage_out(p.usage),
    )


def dry_run_refresh_out(p: RefreshPreview) -> M.DryRunRefreshOut:
    """A refresh preview in the reference's shape. Every refresh here is a full one, so the mode
    asked for and the one run are both `full`; what it read is the models's tags, all of them
    (all_strict), up to when the preview started."""
    m = p.mental_model
    current = m.content or ""
    diff = "".join(
        difflib.unified_diff(
            current.splitlines(keepends=True), p.content.splitlines(keepends=True), "current", "candidate"
        )
    )
    outcome = "content_written" if p.content != current else "content_unchanged"
    usage = usage_out(p.usage)
    ms = int(p.seconds * 1000)
    return M.DryRunRefreshOut(
        mental_model_id=m.mental_model_id,
        name=m.name,
        outcome=outcome,
        would_persist=p.content != current,
        scope=M.RefreshScope(
            tags=m.tags or None, tags_match="all_strict", exclude_mental_model_ids=[m.mental_model_id]
        ),
        window=M.RefreshWindow(created_before=p.as_of.isoformat(), watermark=p.as_of.isoformat()),
        facts=M.FactCounts(retrieved=p.memory_types, used=p.memory_types),
        based_on={k: [{"id": i} for i in v] for k, v in p.based_on.items() if isinstance(v, list)},
        current_content=current,
        candidate_content=p.content,
        preview_content=p.content,
        diff=diff,
        trace=M.RefreshTrace(
            recorded_at=p.as_of.isoformat(), effective_mode="full", outcome=outcome, usage=usage, duration_ms=ms
        ),
        usage=usage,
        duration_ms=ms,
    )


def chunk_out(u: SourceUnit) -> M.Chunk:
    return M.Chunk(
        chunk_id=u.id,
        document_id=u.document_id,
        bank_id=u.bank_id,
        chunk_index=u.index,
        chunk_text=u.text,
        created_at=u.created_at.isoformat(),
    )


def download_url(key: str) -> str:
    return f"/v1/default/files/download/{key}"


def file_metas(raw: str) -> list[dict[str, Any]]:
    """The per-file metadata of a files/retain request (its `request` form field, JSON text)."""
    try:
        body = json.loads(raw) if raw.strip() else {}
    except ValueError:
        raise InvalidArgument("request: not JSON (a FileRetainRequest as JSON text)", "request") from None
    if not isinstance(body, dict):
        raise InvalidArgument("request: must be a JSON object", "request")
    return list(parse(M.FilesRequest, body, "request.").files_metadata or [])


# ---- directives ----------------------------------------------------------------------------------
def directive(d: Directive) -> M.DirectiveOut:
    return M.DirectiveOut(
        id=d.directive_id,
        bank_id=d.bank_id,
        name=d.name,
        content=d.content,
        priority=d.priority,
        is_active=d.is_active,
        tags=d.tags,
        created_at=iso(d.created_at),
        updated_at=iso(d.updated_at),
    )


def directive_list(found: DirectiveList) -> M.DirectiveList:
    return M.DirectiveList(
        items=[directive(d) for d in found.directives], total=found.total, limit=found.limit, offset=found.offset
    )


def directive_update(body: M.DirectivePatch) -> dict[str, Any]:
    """The DirectiveUpdate fields a PATCH sets (an explicit null leaves a field as it is)."""
    return body.model_dump(exclude_unset=True, exclude_none=True)


# ---- entities, graphs, tags, time series ----------------------------------------------------------
# Colours of the reference's graph views (its console draws nodes and edges with them).
_ENTITY_COLOUR = {True: "#42a5f5", False: "#90caf9"}
_LINK_STYLE = {"entity": ("#ffd700", "solid"), "source": ("#ff69b4", "solid")}


def entity_list(found: EntityList, seen: dict[int, tuple], limit: int, offset: int) -> M.EntityListOut:
    return M.EntityListOut(
        items=[
            M.EntityListItem(
                id=str(e.id),
                canonical_name=e.name,
                mention_count=e.mention_count,
                first_seen=iso(seen.get(e.id, (None, None))[0]),
                last_seen=iso(seen.get(e.id, (None, None))[1]),
                metadata={"kind": e.kind},
            )
            for e in found.entities[:limit]
        ],
        total=found.total,
        limit=limit,
        offset=offset,
    )


def entity_detail(e: EntityDetail) -> M.EntityDetailOut:
    """An entity's observations are the memories that mention it, newest first: we keep no
    observations of our own (docs/clients.md)."""
    return M.EntityDetailOut(
        id=str(e.id),
        canonical_name=e.name,
        mention_count=e.mention_count,
        first_seen=iso(e.first_seen),
        last_seen=iso(e.last_seen),
        metadata={"kind": e.kind},
        observations=[M.EntityObservation(text=m.text, mentioned_at=iso(m.mentioned_at)) for m in e.memories],
    )


def entity_graph(g: EntityGraph, limit: int) -> M.EntityGraphOut:
    """Nodes of the entities in a pair (as the reference draws them), edges the pairs."""
    linked = {i for e in g.edges for i in (e.source, e.target)}
    nodes = [
        {
            "data": {
                "id": str(n.id),
                "label": n.name,
                "mentionCount": n.mention_count,
                "color": _ENTITY_COLOUR[n.mention_count > 1],
            }
        }
        for n in g.nodes
        if n.id in linked
    ]
    edges = [
        {
            "data": {
                "id": f"{e.source}-{e.target}",
                "source": str(e.source),
                "target": str(e.target),
                "linkType": "cooccurrence",
                "weight": e.count,
                "color": "#ffd700",
                "lineStyle": "solid",
                "lastCooccurred": iso(e.last_at),
            }
        }
        for e in g.edges
    ]
    return M.EntityGraphOut(nodes=nodes, edges=edges, total_entities=len(nodes), total_edges=len(edges), limit=limit)


def memory_graph(g: MemoryGraph, limit: int) -> M.GraphOut:
    nodes, rows = [], []
    for m in g.nodes:
        when = m.occurred_start or m.mentioned_at
        entities = ", ".join(m.entities) if m.entities else "None"
        colour = "#e0e0e0" if not m.entities else _ENTITY_COLOUR[len(m.entities) > 1]
        nodes.append(
            {
                "data": {
                    "id": m.id,
                    "label": m.text if len(m.text) <= 30 else f"{m.text[:30]}...",
                    "text": m.text,
                    "date": iso(when) or "",
                    "context": m.context or "",
                    "entities": entities,
                    "color": colour,
                }
            }
        )
        rows.append(
            {
                "id": m.id,
                "text": m.text,
                "context": m.context or "N/A",
                "occurred_start": iso(m.occurred_start),
                "occurred_end": iso(m.occurred_end),
                "mentioned_at": iso(m.mentioned_at),
                "date": when.strftime("%Y-%m-%d %H:%M") if when else "N/A",
                "entities": entities,
                "document_id": m.document_id,
                "chunk_id": None,
                "fact_type": m.type,
                "tags": m.tags,
                "created_at": iso(m.created_at),
                "proof_count": None,
            }
        )
    edges = []
    for e in g.edges:
        colour, style = _LINK_STYLE[e.kind]
        edges.append(
            {
                "data": {
                    "id": f"{e.source}-{e.target}-{e.kind}",
                    "source": e.source,
                    "target": e.target,
                    "linkType": e.kind,
                    "weight": 1.0,
                    "entityName": e.entity or "",
                    "color": colour,
                    "lineStyle": style,
                }
            }
        )
    return M.GraphOut(nodes=nodes, edges=edges, table_rows=rows, total_units=g.total, limit=limit)


def tag_list(found: TagList) -> M.TagListOut:
    return M.TagListOut(
        items=[M.TagItem(tag=t.tag, count=t.count) for t in found.tags],
        total=found.total,
        limit=found.limit,
        offset=found.offset,
    )


def timeseries(t: MemoriesTimeseries) -> M.TimeseriesOut:
    return M.TimeseriesOut(
        bank_id=t.bank_id,
        period=t.period,
        trunc=t.trunc,
        time_field=t.time_field,
        buckets=[M.TimeBucketOut(time=b.time.isoformat(), world=b.world, experience=b.experience) for b in t.buckets],
    )


# ---- the LLM request log ---------------------------------------------------------------------------
def _llm_status(status: str) -> str:
    """The reference's two outcomes; the cause of a failure is in `metadata.cause`."""
    return "success" if status == "ok" else "error"


def llm_request(bank_id: str, r: LLMRequest) -> M.LLMRequestEntry:
    started = r.created_at - timedelta(milliseconds=r.duration_ms or 0)
    return M.LLMRequestEntry(
        id=str(r.id),
        bank_id=bank_id,
        operation=r.operation,
        scope=r.purpose,
        trace_id=r.operation_id,
        span_id=str(r.id),
        parent_span_id=None,
        provider=r.model.split("/", 1)[0] if "/" in r.model else None,
        model=r.model,
        status=_llm_status(r.status),
        started_at=iso(started),
        ended_at=iso(r.created_at),
        duration_ms=r.duration_ms,
        input_tokens=r.prompt_tokens,
        output_tokens=r.completion_tokens,
        cached_tokens=0,
        total_tokens=r.prompt_tokens + r.completion_tokens,
        input=r.request,
        output=r.response,
        error=r.error,
        llm_info={"model": r.model, "purpose": r.purpose},
        metadata={"cause": None if r.status == "ok" else r.status, "attempt": r.attempt, "cost_usd": r.cost_usd},
    )


def llm_request_list(bank_id: str, found: LLMRequestList) -> M.LLMRequestListOut:
    return M.LLMRequestListOut(
        bank_id=bank_id,
        total=found.total,
        limit=found.limit,
        offset=found.offset,
        items=[llm_request(bank_id, r) for r in found.requests],
    )


def llm_stats(s: LLMStats) -> M.LLMStatsOut:
    buckets = []
    for b in s.buckets:
        statuses: dict[str, int] = {}
        for outcome, n in b.outcomes.items():
            statuses[_llm_status(outcome)] = statuses.get(_llm_status(outcome), 0) + n
        total = b.prompt_tokens + b.completion_tokens
        buckets.append(
            M.LLMStatsBucketOut(
                time=b.time.isoformat(),
                statuses=statuses,
                total=b.calls,
                tokens=M.LLMTokenSums(input=b.prompt_tokens, output=b.completion_tokens, cached=0, total=total),
            )
        )
    return M.LLMStatsOut(bank_id=s.bank_id, period=s.period, trunc=s.trunc, start=s.start.isoformat(), buckets=buckets)


# ---- webhooks ---------------------------------------------------------------------------------------
# A delivery's states in the reference's words (its deliveries are operations too).
_DELIVERY_STATUS = {"pending": "pending", "delivering": "processing", "delivered": "completed"}


def webhook(w: Webhook) -> M.WebhookOut:
    config = w.http_config
    return M.WebhookOut(
        id=w.webhook_id,
        bank_id=w.bank_id,
        url=w.url,
        secret=w.secret,
        event_types=w.event_types,
        enabled=w.enabled,
        http_config=M.WebhookHttpConfig(
            method=config.method, timeout_seconds=config.timeout_seconds, headers=config.headers, params=config.params
        ),
        created_at=iso(w.created_at),
        updated_at=iso(w.updated_at),
    )


def webhook_list(found: WebhookList, limit: int, offset: int) -> M.WebhookListOut:
    return M.WebhookListOut(
        items=[webhook(w) for w in found.webhooks[offset : offset + limit]],
        total=len(found.webhooks),
        limit=limit,
        offset=offset,
    )


def _http_config(c: M.WebhookHttpConfig) -> dict[str, Any]:
    return c.model_dump()


def webhook_create(body: M.WebhookIn) -> dict[str, Any]:
    """The WebhookCreate fields: no secret given makes the server make one (every delivery is
    signed here)."""
    return {
        "url": body.url,
        "secret": body.secret,
        "event_types": body.event_types,
        "enabled": body.enabled,
        "http_config": _http_config(body.http_config),
    }


def webhook_update(body: M.WebhookPatch) -> dict[str, Any]:
    """The WebhookUpdate fields a PATCH sets. A null secret, which clears the reference's (its
    deliveries then go unsigned), makes a new one here, shown in the answer."""
    sent = body.model_fields_set
    update: dict[str, Any] = {}
    for name in ("url", "event_types", "enabled"):
        if name in sent and getattr(body, name) is not None:
            update[name] = getattr(body, name)
    if "http_config" in sent and body.http_config is not None:
        update["http_config"] = _http_config(body.http_config)
    if "secret" in sent:
        if body.secret is None:
            update["new_secret"] = True
        else:
            update["secret"] = body.secret
    return update


def delivery(webhook_id: str, d: Delivery) -> M.WebhookDeliveryOut:
    return M.WebhookDeliveryOut(
        id=d.delivery_id,
        webhook_id=webhook_id,
        url=d.url or "",
        event_type=d.event_type,
        status=_DELIVERY_STATUS.get(d.status, d.status),
        attempts=d.attempts,
        next_retry_at=iso(d.next_attempt_at),
        last_error=d.last_error,
        last_response_status=d.last_status_code,
        last_attempt_at=iso(d.last_attempt_at),
        created_at=iso(d.created_at),
        updated_at=iso(d.updated_at),
    )


def delivery_list(webhook_id: str, found: DeliveryList) -> M.WebhookDeliveryListOut:
    return M.WebhookDeliveryListOut(
        items=[delivery(webhook_id, d) for d in found.deliveries], next_cursor=found.next_cursor
    )


# ---- the knowledge base ------------------------------------------------------------------------------
def knowledge_node(n: KnowledgeNode) -> M.KnowledgeNodeOut:
    return M.KnowledgeNodeOut(
        id=n.node_id,
        kind=n.kind,
        name=n.name,
        parent_id=n.parent_id,
        mental_model_id=n.mental_model_id,
        managed=n.managed,
        description=n.source_query,
        tags=n.tags,
        timestamp=iso(n.updated_at),
        is_stale=n.is_stale,
        children=[knowledge_node(c) for c in n.children],
    )


def knowledge_tree(t: KnowledgeTree) -> M.KnowledgeTreeOut:
    return M.KnowledgeTreeOut(roots=[knowledge_node(n) for n in t.roots])


def knowledge_page(p: KnowledgePage) -> M.KnowledgePageOut:
    return M.KnowledgePageOut(
        id=p.node_id,
        name=p.name,
        type=p.type,
        description=p.source_query,
        tags=p.tags,
        timestamp=iso(p.updated_at),
        body=p.content,
        markdown=p.markdown,
    )


def page_create(body: M.PageIn) -> dict[str, Any]:
    """A page of the reference is generated from its source query; its trigger settings are
    accepted and not applied (a page refreshes when new memories in its scope arrive)."""
    return {
        "name": body.name,
        "source_query": body.source_query,
        "parent_id": body.parent_id,
        "tags": as_list(body.tags),
        "max_tokens": body.max_tokens,
    }


def node_update(body: M.NodePatch) -> dict[str, Any]:
    """The NodeUpdate fields a PATCH sets: each when present; parent_id null moves to the top."""
    sent = body.model_fields_set - {"trigger"}
    update = {k: getattr(body, k) for k in sent if getattr(body, k) is not None}
    if "parent_id" in sent and body.parent_id is None:
        update["parent_id"] = "root"
    return update


def page_hits(found: PageHits) -> M.PageSearchOut:
    return M.PageSearchOut(
        results=[
            M.PageSearchHit(
                id=h.page_id,
                name=h.name,
                mental_model_id=h.mental_model_id,
                snippet=h.snippet,
                score=h.score,
                updated_at=iso(h.updated_at),
            )
            for h in found.results
        ],
        total=found.total,
    )


def bundle(b: KnowledgeBundle) -> M.BundleOut:
    return M.BundleOut(files=[M.BundleFileOut(path=f.path, content=f.content) for f in b.files])


def audit_entry(e: AuditEntry) -> M.AuditLogEntry:
    metadata: dict[str, Any] = {"principal": e.principal}
    if e.detail:
        metadata.update(e.detail)
    return M.AuditLogEntry(
        id=e.id,
        action=e.action,
        transport=e.transport,
        bank_id=e.bank_id,
        started_at=iso(e.started_at),
        ended_at=iso(e.ended_at),
        duration_ms=e.duration_ms,
        request={"method": e.method, "route": e.route, "request_id": e.request_id},
        response={"status": e.status, "outcome": e.outcome},
        metadata=metadata,
    )


def audit_list(bank_id: str, found: AuditList) -> M.AuditLogListResponse:
    return M.AuditLogListResponse(
        bank_id=bank_id,
        total=found.total,
        limit=found.limit,
        offset=found.offset,
        items=[audit_entry(e) for e in found.items],
    )


def audit_stats(stats: AuditStats) -> M.AuditLogStatsResponse:
    return M.AuditLogStatsResponse(
        bank_id=stats.bank_id,
        period=stats.period,
        trunc=stats.trunc,
        start=stats.start.isoformat(),
        buckets=[
            M.AuditLogStatsBucket(time=b.time.isoformat(), actions=b.actions, total=b.total) for b in stats.buckets
        ],
    )
