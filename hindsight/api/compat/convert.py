"""Engine models to and from the `/v1/default` shapes (one place for every mapping)."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from hindsight.api.compat import models as M
from hindsight.engine.banks.schemas import Bank
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.memory.curation import MemoryHistory
from hindsight.engine.memory.schemas import Memory, RetainItem, parse_retain_items
from hindsight.engine.queue.schemas import Operation
from hindsight.engine.reflection.mental_models import MentalModel

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
        items_count=len(payload.get("items") or payload.get("raw_ids") or payload.get("files") or []),
        mental_model_id=payload.get("mental_model_id"),
        created_at=op.created_at.isoformat(),
        updated_at=iso(op.updated_at),
        status=STATUS_OUT[op.status],
        error_message=op.error,
        retry_count=max(0, op.attempts - 1),
        next_retry_at=iso(op.run_after) if op.status == "queued" else None,
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
        result_metadata=op.result if isinstance(op.result, dict) else None,
    )


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
