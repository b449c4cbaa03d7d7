"""Typed shapes at the edges of the engine; MCP tools, REST routes and the CLI all speak these."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from hindsight.config import BANK_ID_RULE, valid_bank_id
from hindsight.engine.entities import kind_of_type
from hindsight.engine.relevance import SearchOptions
from hindsight.engine.strict import Strict
from hindsight.engine.tags import TagsMatch


def _bank_id(v: str) -> str:
    if not valid_bank_id(v):
        raise ValueError(f"invalid bank id {v!r}; use {BANK_ID_RULE}")
    return v


BankId = Annotated[str, AfterValidator(_bank_id), Field(description=f"Bank id: {BANK_ID_RULE}.")]
MemoryType = Literal["world", "experience"]
ChunkSize = Field(None, ge=200, le=20_000, description="Default characters per document chunk for this bank.")
MAX_TAGS = 64
# The most memories one retained item may supersede.
MAX_SUPERSEDES = 100
# PostgreSQL's OFFSET is a bigint; a page this deep is never useful, and a larger number was a 500.
MAX_OFFSET = 1_000_000_000
Offset = Field(0, ge=0, le=MAX_OFFSET, description="Skip this many first (at most 1,000,000,000).")
MAX_TAG_CHARS = 128


def confirmation(what: str) -> Any:
    """The type of a `confirm` argument that must be true to delete `what` (default false, so
    that leaving it out is refused too)."""

    def check(v: bool) -> bool:
        if v is not True:
            raise ValueError(f"deleting {what} needs confirm=true")
        return v

    return Annotated[
        bool,
        AfterValidator(check),
        Field(validate_default=True, description="Must be true: deleting cannot be undone."),
    ]


def not_blank(v: str, what: str) -> str:
    if not v.strip():
        raise ValueError(f"{what} is blank")
    return v


def _clean_tags(v: Any) -> Any:
    """Tags trimmed, deduplicated and sorted. Anything but a list is left to the type check: a
    string is never taken for a list of one."""
    if isinstance(v, list):
        if len(v) > MAX_TAGS:
            raise ValueError(f"at most {MAX_TAGS} tags")
        for t in v:
            if not isinstance(t, str) or not t.strip() or len(t) > MAX_TAG_CHARS:
                raise ValueError(f"each tag must be a non-empty string of at most {MAX_TAG_CHARS} characters")
        return sorted({t.strip() for t in v})
    return v


# The most JSON a memory's metadata may hold (retain, and imports: engine/portable.py).
METADATA_BYTES = 16_384


class GivenEntity(Strict):
    """An entity the client names with an item, added to those found in its text."""

    model_config = ConfigDict(extra="forbid")

    text: str = Field(min_length=1, max_length=200)
    type: str | None = Field(None, max_length=64, description="PERSON, ORG, LOCATION, ... (others are names).")


class RetainItem(Strict):
    model_config = ConfigDict(extra="forbid")

    content: str = Field(min_length=1, description="The text to remember.")
    context: str = Field("general", max_length=200, description="Category of the memory.")
    timestamp: datetime | Literal["unset"] | None = Field(
        None,
        description='ISO 8601 time the content was said or happened (default: now); "unset" for '
        'timeless content (no mention time, and relative dates such as "yesterday" are not resolved).',
    )
    tags: list[str] = Field(default_factory=list, description="Labels for filtering recall.")
    metadata: dict[str, Any] = Field(default_factory=dict, description="Free JSON object kept with each unit.")
    document_id: str | None = Field(
        None, min_length=1, max_length=256, description="Groups units; retaining it again replaces them."
    )
    entities: list[GivenEntity] | None = Field(
        None, max_length=MAX_TAGS, description="Entities to link besides those found in the text."
    )
    supersedes: list[str] | None = Field(
        None,
        max_length=MAX_SUPERSEDES,
        description="Ids of memories of this bank that this item replaces: each ends (valid_to) when this item "
        "became true and points to it; left out of recall unless include_superseded or an as_of before then.",
    )

    _tags = field_validator("tags", mode="before")(_clean_tags)

    @field_validator("supersedes")
    @classmethod
    def _supersedes(cls, v: list[str] | None) -> list[str] | None:
        for i, memory_id in enumerate(v or []):
            try:
                uuid.UUID(memory_id)
            except ValueError:
                raise ValueError(f"supersedes[{i}] is not a memory id (a UUID)") from None
        return v

    @property
    def timeless(self) -> bool:
        return self.timestamp == "unset"

    @property
    def anchor(self) -> datetime | None:
        """The mention time, None when timeless or not given."""
        return None if self.timestamp == "unset" else self.timestamp

    def given_entities(self) -> list[tuple[str, str]]:
        if not self.entities:
            return []
        return [(e.text.strip(), kind_of_type(e.type)) for e in self.entities]

    @field_validator("metadata", mode="before")
    @classmethod
    def _meta(cls, v: Any) -> Any:
        if v is None:
            return {}
        if isinstance(v, dict) and len(json.dumps(v, default=str)) > METADATA_BYTES:
            raise ValueError("metadata is larger than 16 KiB")
        return v

    @field_validator("content", "context", "document_id")
    @classmethod
    def _content(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and not v.strip():
            raise ValueError(f"{info.field_name} is blank")
        return v


class RetainRequest(RetainItem):
    """retain's arguments: one item, and whether to wait for its facts."""

    wait: bool = Field(False, description="With an LLM: return once facts are extracted, with their ids.")

    def item(self) -> RetainItem:
        """The item itself, already validated (no second validation)."""
        return RetainItem.model_construct(
            self.model_fields_set - {"wait"}, **{k: getattr(self, k) for k in RetainItem.model_fields}
        )


class RetainBatchRequest(Strict):
    """Many items committed together; the batch limit is a server setting, checked by the engine."""

    model_config = ConfigDict(extra="forbid")

    items: list[RetainItem] = Field(min_length=1, description="Items with the arguments of retain.")
    wait: bool = Field(False, description="As in retain.")


class RetainResult(BaseModel):
    bank_id: str
    memory_ids: list[str] = Field(
        description="Memories now in recall for this call: the raw units, or, after `wait` with an LLM, "
        "the extracted facts (plus raw units that yielded none)."
    )
    items: int
    units: int
    operation_id: str | None = Field(None, description="Fact-extraction operation (only with an LLM).")
    extraction: Literal["none", "queued", "running", "succeeded", "empty", "failed", "cancelled"] = Field(
        "none",
        description="none: offline mode; otherwise the extraction status when the call returned: succeeded (facts "
        "were extracted), empty (the LLM found no fact: the raw text stays in recall), failed (the raw text stays "
        "in recall; the operation's error says why), or still queued / running.",
    )
    facts: int | None = Field(None, description="Facts linked to this call (with `wait`).")


class Entity(BaseModel):
    name: str
    kind: str


class Memory(BaseModel):
    id: str
    text: str
    type: str
    context: str
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    entities: list[str] = Field(default_factory=list)
    document_id: str | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list)
    created_at: datetime | None = None
    superseded: bool | None = Field(None, description="A raw unit replaced in recall by the facts extracted from it.")
    valid_from: datetime | None = Field(
        None,
        description="When it became true (unless set: when it happened or was said, the earlier, else when stored).",
    )
    valid_to: datetime | None = Field(None, description="When it stopped being true (a newer fact superseded it).")
    superseded_by: str | None = Field(None, description="The memory that replaced it.")
    invalidated_at: datetime | None = Field(
        None, description="When it was invalidated: kept for audit, left out of recall, reflect and mental models."
    )
    invalidation_reason: str | None = None
    score: float | None = Field(None, description="Fused rank score (results are ordered by it).")
    relevance: float | None = Field(None, description="0-1 relevance to the query, what strictness/min_score compare.")
    arms: list[str] | None = Field(None, description="Which recall arms found it.")


class RecallRequest(SearchOptions):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4_000, description="Natural language search query.")
    max_tokens: int = Field(
        4096,
        ge=1,
        description="Most tokens of memories to return (the server caps it: HINDSIGHT_API_MAX_RECALL_TOKENS).",
    )
    tags: list[str] | None = Field(None, description="Only memories with these labels (as tags_match says).")
    tags_match: TagsMatch = Field(
        "any",
        description="any / all (untagged memories too), any_strict / all_strict "
        "(tagged only), exact (the same tag set).",
    )
    types: list[MemoryType] | None = Field(None, description="Only world facts or experiences.")
    query_timestamp: datetime | None = Field(
        None, description='ISO 8601 time that relative times in the query ("last May") are resolved against.'
    )
    as_of: datetime | None = Field(
        None,
        description="ISO 8601 time: recall what was true then (memories valid at that time, superseded ones "
        "included if they were still true); default: what is true now.",
    )
    include_superseded: bool = Field(
        False, description="Also memories a newer one superseded (each says superseded_by and valid_to)."
    )

    _tags = field_validator("tags", mode="before")(_clean_tags)

    _query = field_validator("query")(lambda v: not_blank(v, "query"))


class RecallResult(BaseModel):
    bank_id: str
    query: str
    results: list[Memory]
    total_tokens: int


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

    @field_validator("disposition", "client_settings", mode="before")
    @classmethod
    def _small(cls, v: Any, info: ValidationInfo) -> Any:
        """At most 16 KiB, as a memory's metadata: both are stored with the bank and sent back
        whole with it (every bank read, every listing), and the disposition goes into every
        reflect prompt. 10 MB of nested empty lists took 0.3 s of the event loop each time the
        bank was read."""
        try:
            size = len(json.dumps(v, default=str, ensure_ascii=False).encode()) if isinstance(v, dict) else 0
        except (RecursionError, ValueError):
            return v  # nested past json's reach: the depth check that follows refuses it
        if size > METADATA_BYTES:
            raise ValueError("larger than 16 KiB of JSON (UTF-8)")
        return v


class ApiKeyCreate(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200)
    role: Literal["admin", "bank"] = "bank"
    banks: list[str] = Field(default_factory=list)
    access: Literal["read", "read_write"] = "read_write"

    @field_validator("banks")
    @classmethod
    def _banks(cls, v: list[str]) -> list[str]:
        return sorted({_bank_id(b) for b in v})


class ApiKey(BaseModel):
    key_id: str
    name: str
    role: str
    banks: list[str]
    access: str
    created_at: datetime | None = None
    revoked_at: datetime | None = None
    last_used_at: datetime | None = None
    key: str | None = Field(None, description="The secret; shown once, at creation.")


class ApiKeyList(BaseModel):
    keys: list[ApiKey]


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
