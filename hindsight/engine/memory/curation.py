"""Memory that stays true: edit, invalidate, restore and supersede one memory, with its history.

Why here and not in memories.py: browsing reads what is stored; curation changes it, under the
bank's write lock, and records every change as a version (`memory_versions`) with what changed
(field: [before, after]), the reason given and who did it, because a memory people correct is one
they need to audit. An edit re-embeds the text and re-links entities, so recall finds the memory
by what it now says; an invalidated memory stays stored (and listed) but leaves recall, reflect
and mental models until it is restored.

Supersession (a newer memory ending older ones) is engine/memory/validity.py; restoring a superseded
memory here undoes it.
"""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Literal

import asyncpg
from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator

from hindsight.db.binder import Binder
from hindsight.db.sql import Q, fill
from hindsight.engine.errors import InvalidArgument, NotFound
from hindsight.engine.memory.records import LINKED_NAMES, get_memory, parse_memory_id
from hindsight.engine.memory.retain import link_entities
from hindsight.engine.memory.schemas import Memory, MemoryType
from hindsight.engine.memory.validity import began, restore_predecessors
from hindsight.engine.memory.vectors import memory_vectors
from hindsight.engine.rules.fields import MAX_TAGS, clean_tags
from hindsight.engine.rules.text import Strict
from hindsight.language.entities import canonical, extract_entities, merge_entities

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

_LOCK = fill(Q.curation_lock, linked_names=LINKED_NAMES)
_ENTITY_NAMES = fill(Q.curation_entity_names, linked_names=LINKED_NAMES)
MAX_REASON_CHARS = 1_000
MAX_TEXT_CHARS = 10_000
State = Literal["valid", "invalidated"]
# Fields an edit may change, and the column each is stored in.
EDITABLE = {
    "text": "text",
    "context": "context",
    "type": "kind",
    "occurred_start": "occurred_start",
    "occurred_end": "occurred_end",
    "mentioned_at": "mentioned_at",
    "valid_from": "valid_from",
    "valid_to": "valid_to",
    "tags": "tags",
}
# Of those, the ones an explicit null clears (the others: null leaves them as they are).
CLEARABLE = {"occurred_start", "occurred_end", "mentioned_at", "valid_from", "valid_to"}


class MemoryUpdate(Strict):
    """A correction of one memory: the fields given change (a date given as null is cleared),
    `state` invalidates it or makes it valid again (which also undoes a supersession), `reason`
    is recorded with the change."""

    model_config = ConfigDict(extra="forbid")

    text: str | None = Field(None, min_length=1, max_length=MAX_TEXT_CHARS, description="The corrected text.")
    context: str | None = Field(None, min_length=1, max_length=200)
    type: MemoryType | None = Field(None, description="world or experience.")
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    valid_from: datetime | None = Field(None, description="When it became true.")
    valid_to: datetime | None = Field(None, description="When it stopped being true (null: it still is).")
    entities: list[str] | None = Field(
        None, max_length=MAX_TAGS, description="The entities it mentions (replaces those linked)."
    )
    tags: list[str] | None = Field(None, description="Its labels (replaces them).")
    state: State | None = Field(
        None, description="invalidated: kept for audit, left out of recall; valid: restored (and no longer superseded)."
    )
    reason: str | None = Field(None, max_length=MAX_REASON_CHARS, description="Why, recorded in the history.")

    _tags = field_validator("tags", mode="before")(clean_tags)

    @field_validator("text", "context")
    @classmethod
    def _not_blank(cls, v: str | None, info: ValidationInfo) -> str | None:
        if v is not None and not v.strip():
            raise ValueError(f"{info.field_name} is blank")
        return v

    @field_validator("entities")
    @classmethod
    def _entities(cls, v: list[str] | None) -> list[str] | None:
        for i, name in enumerate(v or []):
            if not name.strip() or len(name) > 200:
                raise ValueError(f"entities[{i}] must be 1-200 characters")
        return v

    @field_validator("occurred_start", "occurred_end", "mentioned_at", "valid_from", "valid_to")
    @classmethod
    def _utc(cls, v: datetime | None) -> datetime | None:
        return v.replace(tzinfo=UTC) if v is not None and v.tzinfo is None else v

    @model_validator(mode="after")
    def _something(self):
        for name in self.model_fields_set - CLEARABLE - {"reason", "memory_id"}:
            if getattr(self, name) is None:
                raise ValueError(f"{name}: null is not a value here (leave it out to keep it)")
        if not (self.model_fields_set - {"reason", "memory_id"}):
            raise ValueError("nothing to change: give a field to edit, or state")
        return self


class MemoryInvalidation(Strict):
    model_config = ConfigDict(extra="forbid")

    reason: str | None = Field(None, max_length=MAX_REASON_CHARS, description="Why, recorded in the history.")


class MemoryRef(Strict):
    """Names one memory of the bank; the id's form is checked where it is looked up."""

    model_config = ConfigDict(extra="forbid")

    memory_id: str = Field(max_length=64, description="The memory's id (as recall returns it).")


class MemoryChange(MemoryUpdate, MemoryRef):
    """update_memory's arguments: the memory, then what changes."""

    def changes(self) -> MemoryUpdate:
        """What changes, already validated (no second validation)."""
        return MemoryUpdate.model_construct(
            self.model_fields_set - {"memory_id"}, **{k: getattr(self, k) for k in MemoryUpdate.model_fields}
        )


class MemoryInvalidate(MemoryInvalidation, MemoryRef):
    """invalidate_memory's arguments."""


class MemoryVersion(BaseModel):
    version: int = Field(description="0: as stored; then one per change.")
    action: Literal["created", "edited", "invalidated", "restored", "superseded"]
    at: datetime | None
    actor: str | None = Field(
        None, description="Who: an API key id, oauth:<connection>, jwt:<subject>, open, or llm (extraction)."
    )
    reason: str | None = None
    changes: dict[str, list[Any]] = Field(default_factory=dict, description="field: [before, after].")
    text: str = Field(description="The memory's text after this version.")


class MemoryHistory(BaseModel):
    memory: Memory
    versions: list[MemoryVersion] = Field(description="Oldest first; the last is the memory as it is.")
    supersedes: list[str] = Field(default_factory=list, description="The memories this one replaced.")


class MemoryUpdated(BaseModel):
    memory: Memory
    version: int | None = Field(None, description="The version this change recorded (null: nothing changed).")
    changed: list[str] = Field(default_factory=list, description="The fields that changed.")


def actor_of(key_id: str | None, kind: str) -> str:
    return key_id or kind


def _plain(value: Any) -> Any:
    """A column's value as JSON for the history."""
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, uuid.UUID):
        return str(value)
    if isinstance(value, (list, tuple)):
        return list(value)
    return value


async def update_memory(rt: Runtime, bank_id: str, memory_id: str, req: MemoryUpdate, actor: str) -> MemoryUpdated:
    mid = parse_memory_id(memory_id)
    given = req.model_fields_set
    vector, found = None, None
    if req.text is not None:  # CPU work in a thread, before the bank's write lock, as retain does
        text = req.text

        def read() -> tuple[Any, list[tuple[str, str]]]:
            return memory_vectors(rt.embedder, [text])[0], extract_entities(text)

        vector, found = await rt.cpu_slots.run(read)
    async with rt.writes.open(bank_id) as conn:
        row = await conn.fetchrow(_LOCK, bank_id, mid)
        if row is None:
            raise NotFound(f"memory {memory_id} does not exist in bank {bank_id!r}", "memory_id")
        changes: dict[str, list[Any]] = {}
        after: dict[str, Any] = {}
        for field, column in EDITABLE.items():
            if field not in given:
                continue
            new = getattr(req, field)
            if new is None and field not in CLEARABLE:
                continue
            old = row[column]
            if (list(old) if isinstance(old, list) else old) != new:
                changes[field] = [_plain(old), _plain(new)]
                after[column] = new
        if "valid_to" in after and after["valid_to"] is None and row["superseded_by"] is not None:
            # "true again": a memory whose end is cleared is no longer replaced by its successor
            after["superseded_by"] = None
            changes["superseded_by"] = [str(row["superseded_by"]), None]
        _check_times(row, after)
        entities = _entities_after(row, req, after, found or [])
        if entities is not None and {canonical(n) for n, _ in entities} != {canonical(n) for n in row["entities"]}:
            changes["entities"] = [list(row["entities"]), sorted({n for n, _ in entities})]
        else:
            entities = None
        if req.entities is not None:  # names given by hand survive a later edit of the text
            after["given_entities"] = json.dumps([[n, k] for n, k in _by_canonical(req.entities)])
        action = "edited"
        if req.state == "invalidated" and row["invalidated_at"] is None:
            action = "invalidated"
            after["invalidated_at"] = datetime.now(UTC)
            after["invalidation_reason"] = req.reason
            changes["state"] = ["valid", "invalidated"]
        elif req.state == "valid" and (row["invalidated_at"] is not None or row["superseded_by"] is not None):
            action = "restored"
            if row["invalidated_at"] is not None:
                after["invalidated_at"] = after["invalidation_reason"] = None
                changes["state"] = ["invalidated", "valid"]
            if row["superseded_by"] is not None:
                after["superseded_by"] = None
                changes["superseded_by"] = [str(row["superseded_by"]), None]
                if "valid_to" not in after:  # an end the client gives with the restore stands
                    after["valid_to"] = None
                    changes["valid_to"] = [_plain(row["valid_to"]), None]
        if not changes:
            return MemoryUpdated(memory=await get_memory(rt, bank_id, memory_id), version=None, changed=[])
        if "text" in after:
            after["embedding"] = vector
        p = Binder(bank_id, mid)
        assignments = "".join(f", {column} = {p(value)}" for column, value in after.items())
        if "text" in after:
            await conn.execute(Q.curation_lexemes_remove, bank_id, mid)
        await conn.execute(fill(Q.curation_update, set=assignments), *p.values)
        if "text" in after:
            await conn.execute(Q.curation_lexemes_add, bank_id, mid)
        if action == "invalidated":  # what a retracted memory had replaced stands again
            await restore_predecessors(conn, bank_id, mid, actor, f"its successor {mid} was invalidated")
        if entities is not None:
            await conn.execute(Q.memory_release_entities, bank_id, [mid])
            await conn.execute(Q.curation_unlink_entities, bank_id, mid)
            await link_entities(conn, bank_id, [(mid, entities)])
            await conn.execute(_ENTITY_NAMES, bank_id, mid)
        version = await conn.fetchrow(
            Q.curation_version_add, bank_id, mid, action, json.dumps(changes), req.reason, actor
        )
    return MemoryUpdated(
        memory=await get_memory(rt, bank_id, memory_id), version=version["version"], changed=sorted(changes)
    )


def _check_times(row: asyncpg.Record, after: dict[str, Any]) -> None:
    def now(column: str) -> datetime | None:
        return after[column] if column in after else row[column]

    start, end = now("occurred_start"), now("occurred_end")
    if start is not None and end is not None and end < start:
        raise InvalidArgument("occurred_end: before occurred_start", "occurred_end")
    start_of_truth, ended = now("valid_from") or began(start, now("mentioned_at")), now("valid_to")
    if start_of_truth is not None and ended is not None and ended < start_of_truth:
        raise InvalidArgument("valid_to: before the memory became true (valid_from)", "valid_to")


def _by_canonical(names: list[str]) -> list[tuple[str, str]]:
    """Names given by hand, one per canonical form (as retain links them), first spelling kept."""
    seen: dict[str, tuple[str, str]] = {}
    for n in names:
        seen.setdefault(canonical(n), (n.strip(), "name"))
    return list(seen.values())


def _entities_after(
    row: asyncpg.Record, req: MemoryUpdate, after: dict[str, Any], found: list[tuple[str, str]]
) -> list[tuple[str, str]] | None:
    """The (name, kind) entities the memory mentions after the edit: those given, or, when only
    the text changed, those the client gave at retain and those found in the new text; None when
    they stay as they are."""
    if req.entities is not None:
        return _by_canonical(req.entities)
    if "text" not in after:
        return None
    given = [(n, k) for n, k in json.loads(row["given_entities"] or "[]")]
    return merge_entities(given, found)


def _changes(stored: str) -> dict[str, list[Any]]:
    """A version's changes as field: [before, after]; anything else (an imported file's own
    idea of a change) is left out rather than failing the history."""
    value = json.loads(stored)
    if not isinstance(value, dict):
        return {}
    return {str(k): v for k, v in value.items() if isinstance(v, list) and len(v) == 2}


async def memory_history(rt: Runtime, bank_id: str, memory_id: str) -> MemoryHistory:
    memory = await get_memory(rt, bank_id, memory_id)
    mid = parse_memory_id(memory_id)
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(Q.curation_versions, bank_id, mid)
        replaced = [str(r["id"]) for r in await conn.fetch(Q.curation_predecessors, bank_id, mid)]
    # Walk back from the text as it is to the text each version left.
    changes = [_changes(r["changes"]) for r in rows]
    texts = [memory.text]
    for c in reversed(changes):
        earlier = c.get("text", [texts[-1]])[0]
        texts.append(earlier if isinstance(earlier, str) else texts[-1])
    texts.reverse()
    versions = [MemoryVersion(version=0, action="created", at=memory.created_at, text=texts[0])]
    versions += [
        MemoryVersion(
            version=r["version"],
            action=r["action"],
            at=r["at"],
            actor=r["actor"],
            reason=r["reason"],
            changes=changes[i],
            text=texts[i + 1],
        )
        for i, r in enumerate(rows)
    ]
    return MemoryHistory(memory=memory, versions=versions, supersedes=replaced)
