"""The shapes of banks: their profile, counts, and what creates or changes one."""

from __future__ import annotations

import json
from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from hindsight.engine.rules.fields import MAX_TAG_CHARS, MAX_TAGS, METADATA_BYTES, BankId, Offset
from hindsight.engine.rules.text import Strict

ChunkSize = Field(None, ge=200, le=20_000, description="Default characters per document chunk for this bank.")
# The longest retention a bank may set, in days (a hundred years).
MAX_RETENTION_DAYS = 36_500
RETENTION_DAYS = (
    "Days a memory is kept after it was stored; older ones are forgotten by the scheduler (engine/forgetting/"
    "retention.py). 0 turns it off."
)
RETENTION_BY_TAG = (
    "Days kept for memories with a tag, by tag: a memory with such tags is kept the shortest of their days, "
    "instead of the bank's retention_days. Replaces the tags set before; {} clears them."
)


class Bank(BaseModel):
    bank_id: str
    name: str | None = None
    mission: str | None = None
    disposition: dict[str, Any] = Field(default_factory=dict)
    document_chunk_size: int | None = Field(
        None, description="Default characters per document chunk (else the server's)."
    )
    client_settings: dict[str, Any] = Field(
        default_factory=dict,
        description="Settings a client set for this bank that this server keeps but has no use for "
        "(Hindsight's bank config: PATCH /v1/default/banks/{bank_id}/config).",
    )
    retention_days: int | None = Field(
        None, description="Days a memory is kept after it was stored (null: forever); see retention_by_tag."
    )
    retention_by_tag: dict[str, int] = Field(
        default_factory=dict, description="Days memories with a tag are kept, by tag (the shortest of a memory's tags)."
    )
    created_at: datetime | None = None
    updated_at: datetime | None = None
    memory_count: int | None = None
    entity_count: int | None = None
    document_count: int | None = None
    last_memory_at: datetime | None = None


class BankCounts(BaseModel):
    """What a bank holds, counted: memories by type, links by kind, operations by status."""

    bank_id: str
    memories_by_type: dict[str, int]
    links_by_kind: dict[str, int] = Field(description="entity: entity mentions; source: a fact's raw units.")
    operations_by_status: dict[str, int]
    documents: int
    last_memory_at: datetime | None = None


class BankList(BaseModel):
    banks: list[Bank]
    total: int = Field(description="Banks matching the query in all (the page is `banks`).")


class BankQuery(Strict):
    """Which of the banks a caller may see to list."""

    model_config = ConfigDict(extra="forbid")

    q: str | None = Field(None, max_length=200, description="Only banks whose id or name holds this (any case).")
    limit: int | None = Field(None, ge=0, le=1000, description="At most this many, by id (default: all).")
    offset: int = Offset


class BankCreated(BaseModel):
    bank: Bank
    created: bool = Field(description="False when the bank already existed (returned unchanged).")


class BankDeleted(BaseModel):
    deleted: bool
    bank_id: str
    memories_deleted: int


class BankCreate(Strict):
    model_config = ConfigDict(extra="forbid")

    bank_id: BankId
    name: str | None = Field(None, max_length=200, description="A display name.")
    mission: str | None = Field(
        None, max_length=4_000, description="Who the agent is and what it is trying to accomplish (steers reflect)."
    )
    document_chunk_size: int | None = ChunkSize


class BankUpdate(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, max_length=200)
    mission: str | None = Field(None, max_length=4_000)
    disposition: dict[str, Any] | None = None
    document_chunk_size: int | None = ChunkSize
    client_settings: dict[str, Any] | None = Field(None, max_length=100, description="Replaces the kept settings.")
    retention_days: int | None = Field(None, ge=0, le=MAX_RETENTION_DAYS, description=RETENTION_DAYS)
    retention_by_tag: dict[str, int] | None = Field(None, max_length=MAX_TAGS, description=RETENTION_BY_TAG)

    @field_validator("retention_by_tag")
    @classmethod
    def _tag_days(cls, v: dict[str, int] | None) -> dict[str, int] | None:
        if v is None:
            return v
        out = {}
        for tag, days in v.items():
            if not tag.strip() or len(tag) > MAX_TAG_CHARS:
                raise ValueError(f"each tag must be a non-empty string of at most {MAX_TAG_CHARS} characters")
            if not 1 <= days <= MAX_RETENTION_DAYS:
                raise ValueError(f"{tag}: days must be 1 to {MAX_RETENTION_DAYS}")
            out[tag.strip()] = days
        return out

    @field_validator("disposition", "client_settings", mode="before")
    @classmethod
    def _small(cls, v: Any, info: ValidationInfo) -> Any:
        """At most 16 KiB, as a memory's metadata: both are stored with the bank and sent back
        whole with it (every bank read, every listing), and the disposition goes into every
        reflect prompt: a large one would cost event-loop time on every read of the bank."""
        try:
            size = len(json.dumps(v, default=str, ensure_ascii=False).encode()) if isinstance(v, dict) else 0
        except (RecursionError, ValueError):
            return v  # nested past json's reach: the depth check that follows refuses it
        if size > METADATA_BYTES:
            raise ValueError("larger than 16 KiB of JSON (UTF-8)")
        return v
