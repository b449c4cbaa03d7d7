"""The shapes of forgetting: what a caller asks to forget, and what an erasure removed."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, model_validator

from hindsight.engine.memory.records import BrowseType
from hindsight.engine.memory.schemas import MemoryType
from hindsight.engine.rules.text import Strict

# The most memories a dry run lists (it counts them all).
MAX_LISTED = 1_000


class ForgetOptions(Strict):
    """How far a forgotten memory reaches, and whether to only say what would go."""

    model_config = ConfigDict(extra="forbid")

    include_sources: bool = Field(
        False,
        description="Also forget the raw units a forgotten fact was extracted from (and every other fact drawn from "
        "them): they hold the text the fact came from. Without it they stay and are listed in `sources_kept`.",
    )
    dry_run: bool = Field(False, description="Only say what would be forgotten; nothing changes.")


class ForgetMemory(ForgetOptions):
    """forget_memory's arguments: the memory, then the options."""

    memory_id: str = Field(max_length=64, description="The memory's id (as recall or a listing returns it).")


class ForgetEntity(Strict):
    """Forget everything about a person (or any entity): every memory linked to it or naming it."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="The entity's name, e.g. Bob (any case).")
    dry_run: bool = Field(False, description="Only list the memories that would be forgotten; nothing changes.")

    @model_validator(mode="after")
    def _named(self):
        if not self.name.strip():
            raise ValueError("name is blank")
        return self


class PurgeMemories(Strict):
    """Forget memories that are no longer true, for good (invalidation and supersession keep them)."""

    model_config = ConfigDict(extra="forbid")

    invalidated: bool = Field(True, description="Memories invalidated (retracted) by a person or an agent.")
    superseded: bool = Field(
        True,
        description="Memories that stopped being true: superseded by a newer one, or given an end (valid_to) now past.",
    )
    dry_run: bool = Field(False, description="Only count and list what would be forgotten; nothing changes.")

    @model_validator(mode="after")
    def _something(self):
        if not (self.invalidated or self.superseded):
            raise ValueError("nothing to purge: set invalidated, superseded or both")
        return self


class ForgetRetainedDocument(Strict):
    """forget_retained_document's arguments."""

    model_config = ConfigDict(extra="forbid")

    document_id: str = Field(min_length=1, max_length=256, description="The document_id the text was retained under.")
    dry_run: bool = Field(False, description="Only count what would be forgotten; nothing changes.")


class Candidate(BaseModel):
    """A memory a dry run would forget."""

    id: str
    text: str
    type: MemoryType
    created_at: datetime
    document_id: str | None = None
    why: str = Field(
        description="memory (named), fact (extracted from one), source (a fact's raw unit), linked "
        "(mentions the entity), named (holds its name), or the purge or retention rule it meets."
    )


class Forgotten(BaseModel):
    """What an erasure removed (or, in a dry run, would remove)."""

    bank_id: str
    dry_run: bool = False
    memories: int = Field(description="Memories forgotten: those asked for and every fact extracted from them.")
    memory_ids: list[str] = Field(default_factory=list, description=f"Their ids (the first {MAX_LISTED}).")
    would_forget: list[Candidate] | None = Field(
        None, description=f"In a dry run: the memories that would be forgotten (the first {MAX_LISTED})."
    )
    sources_kept: list[str] = Field(
        default_factory=list,
        description="Raw units a forgotten fact was extracted from that stay, with their text (include_sources forgets "
        "them too).",
    )
    entities_removed: int = Field(0, description="Entities no memory mentions any more, removed with their names.")
    retained_documents: list[str] = Field(
        default_factory=list, description="document_ids whose retained text lost what was forgotten (or went whole)."
    )
    mental_models_stale: list[str] = Field(
        default_factory=list,
        description="Mental models drawn from what was forgotten: a refresh without it is queued; until then "
        "reflect leaves them out.",
    )
    mental_models_withdrawn: list[str] = Field(
        default_factory=list, description="Of those, the ones whose content quoted the forgotten text: it is withdrawn."
    )
    vacuum_within_seconds: float | None = Field(
        None,
        description="The database's copies of the removed rows (dead rows, index entries, statistics) are vacuumed "
        "within about this many seconds (docs/privacy.md).",
    )


class ForgetMemoryResult(Forgotten):
    """DELETE of one memory: `deleted` and `memory_id` as before, and what went with it."""

    deleted: bool = True
    memory_id: str


class ClearMemories(Strict):
    """Forget every memory of the bank (or of one type); the bank and its settings stay."""

    model_config = ConfigDict(extra="forbid")

    type: BrowseType | None = Field(
        None, description="Only memories of this type (observation: Hindsight's, none are kept here)."
    )
