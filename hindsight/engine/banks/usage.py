"""LLM tokens and cost per bank, broken down by operation and model, and the bank's LLM request
log: every call, answered or not, with its outcome (the failure's cause), tokens and duration,
and its prompt and answer when HINDSIGHT_API_LLM_LOG_CONTENT is on (from `llm_usage`)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hindsight.db.binder import Binder
from hindsight.db.sql import Q, fill
from hindsight.engine.errors import parse_uuid
from hindsight.engine.rules.fields import Offset
from hindsight.engine.rules.text import Strict

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


async def get_bank_usage(rt: Runtime, bank_id: str) -> dict:
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(Q.usage_by_bank, bank_id)
    by = [
        {
            "operation": r["operation"],
            "model": r["model"],
            "calls": r["calls"],
            "prompt_tokens": int(r["prompt_tokens"] or 0),
            "completion_tokens": int(r["completion_tokens"] or 0),
            "cost_usd": r["cost_usd"],
            "first_call": r["first_call"],
            "last_call": r["last_call"],
        }
        for r in rows
    ]
    costs = [b["cost_usd"] for b in by if b["cost_usd"] is not None]
    return {
        "bank_id": bank_id,
        "total": {
            "calls": sum(b["calls"] for b in by),
            "prompt_tokens": sum(b["prompt_tokens"] for b in by),
            "completion_tokens": sum(b["completion_tokens"] for b in by),
            "cost_usd": sum(costs) if costs else None,
        },
        "by_operation": by,
    }


# ---- the LLM request log: every call, answered or not ------------------------------------------
Outcome = Literal[
    "ok", "failed", "rate_limit", "timeout", "provider_error", "malformed", "truncated", "empty", "too_long"
]
StatsPeriod = Literal["1d", "7d", "30d"]


class LLMRequestQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    status: Outcome | None = Field(
        None, description="ok; failed (any cause); or one cause: rate_limit, timeout, provider_error, malformed, ..."
    )
    operation: str | None = Field(None, max_length=64, description="reflect, retain, mental_model, ...")
    purpose: Literal["retain", "reflect"] | None = Field(None, description="Which configured model was called.")
    model: str | None = Field(None, max_length=200)
    provider: str | None = Field(
        None, max_length=64, description="The model's provider: its litellm prefix (openai, ...)."
    )
    operation_id: str | None = Field(None, max_length=64, description="The calls of one operation (a UUID).")
    since: datetime | None = Field(None, description="Calls made at or after this time.")
    until: datetime | None = Field(None, description="Calls made before this time.")
    limit: int = Field(50, ge=1, le=500, description="At most this many, newest first.")
    offset: int = Offset


class LLMRequest(BaseModel):
    id: int
    bank_id: str | None
    operation: str
    operation_id: str | None
    model: str
    purpose: str | None
    status: str = Field(description="ok, or how the call failed (its cause).")
    error: str | None = None
    prompt_tokens: int
    completion_tokens: int
    cost_usd: float | None = None
    duration_ms: int | None = None
    attempt: int | None = None
    created_at: datetime = Field(description="When the call ended.")
    request: list[dict[str, Any]] | None = Field(
        None, description="The messages sent, when HINDSIGHT_API_LLM_LOG_CONTENT is on."
    )
    response: str | None = Field(None, description="The answer, when HINDSIGHT_API_LLM_LOG_CONTENT is on.")


class LLMRequestList(BaseModel):
    requests: list[LLMRequest]
    total: int
    limit: int
    offset: int


class LLMStatsQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    period: StatsPeriod = Field("7d", description="1d in hours; 7d and 30d in days (UTC).")
    operation: str | None = Field(None, max_length=64)


class LLMStatsBucket(BaseModel):
    time: datetime
    calls: int = 0
    outcomes: dict[str, int] = Field(default_factory=dict, description="Calls by outcome: ok, or the cause.")
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float | None = None


class LLMStats(BaseModel):
    bank_id: str
    period: StatsPeriod
    trunc: str
    start: datetime
    calls: int
    failed: int
    outcomes: dict[str, int] = Field(description="Calls of the period by outcome.")
    prompt_tokens: int
    completion_tokens: int
    buckets: list[LLMStatsBucket]


def _request(r) -> LLMRequest:
    return LLMRequest(
        id=r["id"],
        bank_id=r["bank_id"],
        operation=r["operation"],
        operation_id=str(r["operation_id"]) if r["operation_id"] else None,
        model=r["model"],
        purpose=r["purpose"],
        status=r["status"],
        error=r["error"],
        prompt_tokens=r["prompt_tokens"],
        completion_tokens=r["completion_tokens"],
        cost_usd=r["cost_usd"],
        duration_ms=r["duration_ms"],
        attempt=r["attempt"],
        created_at=r["created_at"],
        request=json.loads(r["request"]) if r["request"] else None,
        response=r["response"],
    )


async def list_llm_requests(rt: Runtime, bank_id: str, query: LLMRequestQuery) -> LLMRequestList:
    p = Binder(bank_id, query.limit, query.offset)
    where = []
    if query.status == "failed":
        where.append("status <> 'ok'")
    elif query.status is not None:
        where.append(f"status = {p(query.status)}")
    for column in ("operation", "purpose", "model"):
        if (value := getattr(query, column)) is not None:
            where.append(f"{column} = {p(value)}")
    if query.provider is not None:
        where.append(f"split_part(model, '/', 1) = {p(query.provider)} AND strpos(model, '/') > 0")
    if query.operation_id is not None:
        where.append(f"operation_id = {p(parse_uuid(query.operation_id, 'operation_id', 'an operation'))}")
    if query.since is not None:
        where.append(f"created_at >= {p(query.since)}")
    if query.until is not None:
        where.append(f"created_at < {p(query.until)}")
    sql = fill(Q.llm_request_list, where="".join(f" AND {w}" for w in where))
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(sql, *p.values)
    return LLMRequestList(
        requests=[_request(r) for r in rows if r["id"] is not None],
        total=rows[0]["total"] if rows else 0,
        limit=query.limit,
        offset=query.offset,
    )


_STATS = {
    "1d": ("hour", timedelta(hours=1), 24),
    "7d": ("day", timedelta(days=1), 7),
    "30d": ("day", timedelta(days=1), 30),
}


async def llm_request_stats(rt: Runtime, bank_id: str, query: LLMStatsQuery) -> LLMStats:
    """The period's calls in buckets (every bucket present), by outcome, with their tokens."""
    trunc, step, count = _STATS[query.period]
    now = datetime.now(UTC)
    last = now.replace(minute=0, second=0, microsecond=0)
    if trunc == "day":
        last = last.replace(hour=0)
    start = last - step * (count - 1)
    buckets = {start + step * i: LLMStatsBucket(time=start + step * i) for i in range(count)}
    p = Binder(bank_id, trunc, start)
    where = f" AND operation = {p(query.operation)}" if query.operation is not None else ""
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(fill(Q.llm_request_stats, where=where), *p.values)
    outcomes: dict[str, int] = {}
    for r in rows:
        b = buckets.get(r["bucket"].astimezone(UTC))
        if b is None:
            continue
        b.calls += r["n"]
        b.outcomes[r["status"]] = b.outcomes.get(r["status"], 0) + r["n"]
        b.prompt_tokens += int(r["prompt_tokens"])
        b.completion_tokens += int(r["completion_tokens"])
        if r["cost_usd"] is not None:
            b.cost_usd = (b.cost_usd or 0.0) + r["cost_usd"]
        outcomes[r["status"]] = outcomes.get(r["status"], 0) + r["n"]
    every = list(buckets.values())
    return LLMStats(
        bank_id=bank_id,
        period=query.period,
        trunc=trunc,
        start=start,
        calls=sum(outcomes.values()),
        failed=sum(n for status, n in outcomes.items() if status != "ok"),
        outcomes=outcomes,
        prompt_tokens=sum(b.prompt_tokens for b in every),
        completion_tokens=sum(b.completion_tokens for b in every),
        buckets=every,
    )
