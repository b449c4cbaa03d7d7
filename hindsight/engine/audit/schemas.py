"""The shapes of the audit log: one record per request that read or changed a bank, and the
queries that read them."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.engine.rules.fields import Offset
from hindsight.engine.rules.text import Strict

Transport = Literal["http", "mcp", "system"]
Period = Literal["1d", "7d", "30d"]


class AuditEntry(BaseModel):
    """Who did what to which bank, when, and how it ended; never what a memory says."""

    id: str
    bank_id: str | None = Field(description="The bank; null for requests that named none (API keys, bank listings).")
    started_at: datetime
    ended_at: datetime
    duration_ms: int
    transport: Transport = Field(description="http (REST, /v1/default, the console), mcp (a tool call), system.")
    action: str = Field(description="The operation: the REST route's or MCP tool's name, or retention.")
    method: str | None = None
    route: str | None = Field(None, description="The route's template, e.g. /v1/banks/{bank_id}/memories/{memory_id}.")
    status: int = Field(description="The HTTP status answered.")
    outcome: str = Field(description="ok, or the error's code (unauthorized, forbidden, not_found, ...).")
    principal: str | None = Field(
        None,
        description="Who: an API key id, oauth:<connection>, jwt:<subject>, env (the environment's admin key), open "
        "(no keys configured), scheduler; null when the request did not authenticate.",
    )
    request_id: str = Field(description="The X-Request-Id the request carried or was given.")
    detail: dict[str, Any] | None = Field(None, description="Counts a system action reports (never content).")


class AuditQuery(Strict):
    """Which audit records to read, newest first."""

    model_config = ConfigDict(extra="forbid")

    action: str | None = Field(None, max_length=100, description="Only this operation (e.g. recall, delete_memory).")
    transport: Transport | None = Field(None, description="Only this transport: http, mcp or system.")
    principal: str | None = Field(None, max_length=300, description="Only this caller (an API key id, oauth:..., ...).")
    outcome: str | None = Field(None, max_length=64, description="Only this outcome: ok, forbidden, not_found, ...")
    start_date: datetime | None = Field(None, description="From this time (ISO 8601, inclusive).")
    end_date: datetime | None = Field(None, description="Until this time (ISO 8601, exclusive).")
    limit: int = Field(50, ge=1, le=500, description="At most this many (1-500).")
    offset: int = Offset

    @field_validator("start_date", "end_date")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        from datetime import UTC

        return v.replace(tzinfo=UTC) if v is not None and v.tzinfo is None else v


class AuditList(BaseModel):
    bank_id: str | None = Field(None, description="The bank read; null for every bank's records.")
    items: list[AuditEntry]
    total: int = Field(description="Records matching the query in all.")
    limit: int
    offset: int


class AuditStatsQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    action: str | None = Field(None, max_length=100, description="Only this operation.")
    period: Period = Field("7d", description="1d (by hour), 7d or 30d (by day).")


class AuditBucket(BaseModel):
    time: datetime
    actions: dict[str, int]
    total: int


class AuditStats(BaseModel):
    bank_id: str
    period: Period
    trunc: Literal["hour", "day"]
    start: datetime
    buckets: list[AuditBucket]
