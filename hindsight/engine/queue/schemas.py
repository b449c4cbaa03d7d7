"""The shapes of operations: the durable, asynchronous work of a bank."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from hindsight.engine.rules.fields import Offset
from hindsight.engine.rules.text import Strict

# ---- operations (engine/operations.py runs the queue they describe) --------------------------
Status = Literal["queued", "running", "succeeded", "failed", "cancelled"]


TERMINAL = ("succeeded", "failed", "cancelled")


class Operation(BaseModel):
    operation_id: str
    bank_id: str | None
    type: str
    status: Status
    attempts: int
    max_attempts: int
    error: str | None = None
    result: Any = None
    payload: dict[str, Any] = {}
    progress: dict[str, Any] | None = Field(None, description="e.g. {done, total} files of an import.")
    run_after: datetime | None = None
    created_at: datetime
    started_at: datetime | None = None
    finished_at: datetime | None = None
    updated_at: datetime


class OperationRef(Strict):
    model_config = ConfigDict(extra="forbid")

    operation_id: str = Field(description="The id an asynchronous call returned (a UUID).")


class OperationQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    status: Status | None = Field(None, description="Only operations in this status.")
    type: str | None = Field(None, max_length=64, description="Only operations of this type, e.g. retain_extract.")
    limit: int = Field(50, ge=1, le=500, description="At most this many (1-500), newest first.")
    offset: int = Offset


class OperationList(BaseModel):
    operations: list[Operation]
    total: int = Field(description="Operations matching the filters in all.")
