"""The shapes of memories and of what a client retains."""

from __future__ import annotations

import json
import uuid
from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator

from hindsight.engine.errors import InvalidArgument
from hindsight.engine.rules.fields import MAX_TAGS, METADATA_BYTES, clean_tags
from hindsight.engine.rules.text import Strict
from hindsight.engine.rules.validation import parse
from hindsight.language.entities import kind_of_type

MemoryType = Literal["world", "experience"]


# The most memories one retained item may supersede.
MAX_SUPERSEDES = 100


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

    _tags = field_validator("tags", mode="before")(clean_tags)

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


def parse_retain_items(raw: Any, batch: bool = True) -> list[RetainItem]:
    """A list of item objects (or one, with batch=False) into RetainItems."""
    if not isinstance(raw, list):
        raise InvalidArgument("items: must be a list of objects", "items")
    items = []
    for i, it in enumerate(raw):
        if not isinstance(it, dict):
            where = f"items.{i}" if batch else "body"
            raise InvalidArgument(f"{where}: must be an object with at least 'content'", "items")
        items.append(parse(RetainItem, it, f"items.{i}." if batch else ""))
    return items
