"""Mental models: a named `source_query` whose content reflect keeps current.

Every refresh is a `refresh_mental_model` operation with the dedup key of its model, so at most
one is queued or running per model whichever process asked (the unique partial index on
operations decides). The scheduler's sweep queues a refresh when memories matching the model's
tags arrived after its watermark and the bank has been quiet for the debounce period (or the
oldest unseen memory waited ten debounce periods). A refresh commits the new content, the new
watermark and its operation's success in one transaction, and the sweep locks the model row, so
a model is never refreshed twice for the same memories, even with several processes. A refresh
whose answer is unusable (the LLM failed, or answered nothing or more than the model's
max_tokens: engine/reflection/reflect.py checks) fails like any other failed refresh: the previous content
stays, the reason is recorded on the operation and the model (`last_error`), and the sweep waits
REFRESH_COOL_DOWN debounce periods before it queues the model again for the same memories (an LLM
that keeps failing is not asked again every tick). The last N versions are kept.
"""

from __future__ import annotations

import json
import re
import time
import uuid
from collections import Counter
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.db.binder import Binder
from hindsight.db.sql import Q, fill
from hindsight.engine.banks.registry import ensure_bank
from hindsight.engine.errors import Conflict, HindsightError, InvalidArgument, NotFound
from hindsight.engine.memory.records import get_memories
from hindsight.engine.memory.retain import EXTRACT
from hindsight.engine.notify import events
from hindsight.engine.queue import operations as ops
from hindsight.engine.reflection.reflect import ReflectRequest, reflect
from hindsight.engine.rules.fields import Offset, clean_tags
from hindsight.engine.rules.tags import MENTAL_MODEL_MATCH, TagsMatch, tag_condition
from hindsight.engine.rules.text import Strict

if TYPE_CHECKING:
    from hindsight.engine.queue.operations import Job
    from hindsight.engine.runtime import Runtime


MODEL_ID_PATTERN = r"^[a-z0-9][a-z0-9-]{0,63}$"
_MODEL_ID = re.compile(MODEL_ID_PATTERN)
REFRESH = "refresh_mental_model"
CONSOLIDATE = "consolidate"
DELETED = "mental model deleted"
# After a failed refresh, the sweep leaves the model alone for this many debounce periods (at
# least a minute) before it queues it again for the memories it could not take in.
REFRESH_COOL_DOWN = 10
MIN_COOL_DOWN_SECONDS = 60.0


class MentalModelCreate(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=200, description="A display name.")
    source_query: str = Field(min_length=1, max_length=4_000, description="The question the model's content answers.")
    mental_model_id: str | None = Field(
        None,
        pattern=MODEL_ID_PATTERN,
        description="1-64 lowercase letters, digits and hyphens; default: from the name.",
    )
    tags: list[str] = Field(default_factory=list, description="Draw only from memories carrying all of these tags.")
    max_tokens: int = Field(2048, ge=64, le=32_768, description="Longest content, in tokens.")

    _tags = field_validator("tags", mode="before")(clean_tags)


class MentalModelUpdate(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str | None = Field(None, min_length=1, max_length=200)
    source_query: str | None = Field(None, min_length=1, max_length=4_000)
    tags: list[str] | None = None
    max_tokens: int | None = Field(None, ge=64, le=32_768)

    _tags = field_validator("tags", mode="before")(clean_tags)


class MentalModelRef(Strict):
    """Names one model of the bank; the id's form is checked where it is looked up."""

    model_config = ConfigDict(extra="forbid")

    mental_model_id: str = Field(description="1-64 lowercase letters, digits and hyphens.")


class MentalModelChange(MentalModelUpdate, MentalModelRef):
    """update_mental_model's arguments: the model, then what changes."""

    def changes(self) -> MentalModelUpdate:
        """What changes, already validated (no second validation)."""
        return MentalModelUpdate.model_construct(
            self.model_fields_set - {"mental_model_id"},
            **{k: getattr(self, k) for k in MentalModelUpdate.model_fields},
        )


class MentalModelQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    tags: list[str] | None = Field(None, description="Only models with these tags (matched as tags_match says).")
    tags_match: TagsMatch = Field(
        "any", description="any / all also list untagged models; any_strict, all_strict or exact only tagged ones."
    )
    ids: list[str] | None = Field(None, max_length=1000, description="Only the models with these ids.")
    limit: int | None = Field(None, ge=0, le=1000, description="At most this many, oldest first (default: all).")
    offset: int = Offset

    _tags = field_validator("tags", mode="before")(clean_tags)


class MentalModel(BaseModel):
    mental_model_id: str
    bank_id: str
    name: str
    source_query: str
    tags: list[str]
    max_tokens: int
    content: str | None = Field(None, description="None until the first refresh succeeds.")
    based_on: dict[str, Any] = Field(default_factory=dict)
    status: str = Field(
        description="pending (no content: never refreshed, or its content was withdrawn), ready, or failed (no content yet)."
    )
    last_refreshed_at: datetime | None = None
    last_error: str | None = None
    stale: bool = Field(
        False,
        description="A memory it was drawn from was forgotten: a refresh that no longer sees it is queued, and until "
        "then reflect leaves the model out (content that quoted the forgotten text is withdrawn).",
    )
    created_at: datetime
    updated_at: datetime
    pending_operation_id: str | None = Field(None, description="The refresh queued or running, if any.")


class MentalModelOperation(BaseModel):
    mental_model_id: str
    operation_id: str


class MentalModelList(BaseModel):
    mental_models: list[MentalModel]
    total: int = Field(description="Models matching the query in all (the page is `mental_models`).")


class MentalModelDeleted(BaseModel):
    deleted: bool
    mental_model_id: str


class RefreshPreview(BaseModel):
    """What a refresh would write now, written nowhere."""

    mental_model: MentalModel = Field(description="The model as it is.")
    content: str = Field(description="The content a refresh would write.")
    based_on: dict[str, Any]
    memory_types: dict[str, int] = Field(description="The memories it drew from, by type.")
    mode: str = Field(description="llm, or extractive (offline, as a refresh would be).")
    usage: dict[str, int] | None = None
    as_of: datetime = Field(description="The memories it read were those written up to this time.")
    seconds: float


class Consolidation(BaseModel):
    operation_id: str
    deduplicated: bool = Field(description="True when one was already queued or running: that one is returned.")


class MentalModelVersion(BaseModel):
    version: int
    content: str
    based_on: dict[str, Any]
    created_at: datetime


def dedup_key(bank_id: str, model_id: str) -> str:
    return f"mental_model:{bank_id}:{model_id}"


def check_model_id(model_id: object) -> str:
    if not isinstance(model_id, str) or not _MODEL_ID.fullmatch(model_id):
        raise InvalidArgument(
            f"mental_model_id: invalid id {model_id!r}; use 1-64 lowercase letters, digits and hyphens",
            "mental_model_id",
        )
    return model_id


def slug(name: str) -> str:
    s = re.sub(r"[^a-z0-9]+", "-", name.lower()).strip("-")[:48].strip("-")
    return s or "model"


def to_model(r, pending: str | None = None) -> MentalModel:
    return MentalModel(
        mental_model_id=r["id"],
        bank_id=r["bank_id"],
        name=r["name"],
        source_query=r["source_query"],
        tags=list(r["tags"]),
        max_tokens=r["max_tokens"],
        content=r["content"],
        based_on=json.loads(r["based_on"]),
        status=r["status"],
        last_refreshed_at=r["last_refreshed_at"],
        last_error=r["last_error"],
        stale=r["stale_since"] is not None,
        created_at=r["created_at"],
        updated_at=r["updated_at"],
        pending_operation_id=pending,
    )


async def _queue_refresh(rt: Runtime, conn, bank_id: str, model_id: str, reason: str) -> uuid.UUID:
    return await ops.enqueue_operation(
        conn,
        bank_id,
        REFRESH,
        {"mental_model_id": model_id, "reason": reason},
        max_attempts=rt.settings.operation_max_attempts,
        dedup_key=dedup_key(bank_id, model_id),
    )


async def create_mental_model(rt: Runtime, bank_id: str, req: MentalModelCreate) -> MentalModelOperation:
    vec = await rt.embedder.query(req.source_query)
    async with rt.writes.open(bank_id) as conn:
        await ensure_bank(conn, bank_id)
        made = await add_mental_model(rt, conn, bank_id, req, vec)
    rt.queue.poke()
    return made


async def add_mental_model(rt: Runtime, conn, bank_id: str, req: MentalModelCreate, vec) -> MentalModelOperation:
    """A new model and its first refresh, in the caller's transaction (it holds the bank's write
    lock); `vec` is the source query's embedding. The caller pokes the queue after its commit."""
    if req.mental_model_id:
        model_id = req.mental_model_id
    else:
        base = slug(req.name)
        taken = {r[0] for r in await conn.fetch(Q.mental_model_ids_like, bank_id, base)}
        model_id = (
            base
            if base not in taken
            else next(f"{base}-{n}" for n in range(2, len(taken) + 3) if f"{base}-{n}" not in taken)
        )
    inserted = await conn.fetchval(
        Q.mental_model_create, bank_id, model_id, req.name, req.source_query, req.tags, req.max_tokens, vec
    )
    if inserted is None:
        raise Conflict(
            f"mental_model_id: a mental model {model_id!r} already exists in bank {bank_id!r}", "mental_model_id"
        )
    op_id = await _queue_refresh(rt, conn, bank_id, model_id, "created")
    return MentalModelOperation(mental_model_id=model_id, operation_id=str(op_id))


async def _pending(conn, bank_id: str, ids: list[str]) -> dict[str, str]:
    rows = await conn.fetch(
        Q.mental_model_refreshes_pending,
        bank_id,
        [dedup_key(bank_id, i) for i in ids],
    )
    return {r["dedup_key"].rsplit(":", 1)[1]: str(r["id"]) for r in rows}


async def list_mental_models(rt: Runtime, bank_id: str, req: MentalModelQuery) -> MentalModelList:
    """A page of the models, filtered by their own tags, matched as memories are
    (engine/rules/tags.py), and by id."""
    p = Binder(bank_id)
    conds = [c for c in (tag_condition("tags", req.tags, req.tags_match, p),) if c]
    if req.ids is not None:
        conds.append(f"id = ANY({p(req.ids, 'text[]')})")
    where = "".join(f" AND {c}" for c in conds)
    page = f"LIMIT {p(req.limit, 'int')} OFFSET {p(req.offset, 'bigint')}"
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(fill(Q.mental_model_list, conditions=where, page=page), *p.values)
        models = [r for r in rows if r["id"] is not None]
        pending = await _pending(conn, bank_id, [r["id"] for r in models])
    total = rows[0]["total"] if rows else 0
    return MentalModelList(mental_models=[to_model(r, pending.get(r["id"])) for r in models], total=total)


async def get_mental_model(rt: Runtime, bank_id: str, model_id: str) -> MentalModel:
    check_model_id(model_id)
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.mental_model_get, bank_id, model_id)
        if r is None:
            raise NotFound(f"mental model {model_id!r} does not exist in bank {bank_id!r}", "mental_model_id")
        pending = await _pending(conn, bank_id, [model_id])
    return to_model(r, pending.get(model_id))


async def get_mental_model_history(rt: Runtime, bank_id: str, model_id: str) -> list[MentalModelVersion]:
    await get_mental_model(rt, bank_id, model_id)
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(
            Q.mental_model_history,
            bank_id,
            model_id,
        )
    return [
        MentalModelVersion(
            version=r["version"], content=r["content"], based_on=json.loads(r["based_on"]), created_at=r["created_at"]
        )
        for r in rows
    ]


async def update_mental_model(rt: Runtime, bank_id: str, model_id: str, req: MentalModelUpdate) -> MentalModel:
    """A new source query, tags or size make the content stale: a refresh is queued."""
    check_model_id(model_id)
    fields = req.model_dump(exclude_unset=True, exclude_none=True)
    vec = await rt.embedder.query(fields["source_query"]) if "source_query" in fields else None
    async with rt.writes.open(bank_id) as conn:
        r = await conn.fetchrow(
            Q.mental_model_update,
            bank_id,
            model_id,
            fields.get("name"),
            fields.get("source_query"),
            fields.get("tags"),
            fields.get("max_tokens"),
            vec,
        )
        if r is None:
            raise NotFound(f"mental model {model_id!r} does not exist in bank {bank_id!r}", "mental_model_id")
        if fields.keys() & {"source_query", "tags", "max_tokens"}:
            await _queue_refresh(rt, conn, bank_id, model_id, "updated")
    rt.queue.poke()
    return await get_mental_model(rt, bank_id, model_id)


async def delete_mental_model(rt: Runtime, bank_id: str, model_id: str) -> None:
    check_model_id(model_id)
    async with rt.writes.open(bank_id) as conn:
        if not await remove_mental_model(conn, bank_id, model_id):
            raise NotFound(f"mental model {model_id!r} does not exist in bank {bank_id!r}", "mental_model_id")


async def remove_mental_model(conn, bank_id: str, model_id: str) -> bool:
    """Delete a model and cancel its pending refresh, in the caller's transaction; False when the
    bank has no such model."""
    if await conn.fetchval(Q.mental_model_delete, bank_id, model_id) is None:
        return False
    await conn.execute(Q.mental_model_cancel_refreshes, bank_id, dedup_key(bank_id, model_id), DELETED)
    return True


async def clear_mental_model(rt: Runtime, bank_id: str, model_id: str) -> MentalModel:
    """Forget the model's content: it reads as pending, with no content, until its next refresh
    (asked for, or queued by the sweep when memories it draws from arrive). Every refresh here is
    a full one, so clearing is not needed to rebuild it; it is for content that should go now. The
    versions it had stay in its history; a refresh under way is left to finish."""
    check_model_id(model_id)
    async with rt.writes.open(bank_id) as conn:
        if await conn.fetchval(Q.mental_model_clear, bank_id, model_id) is None:
            raise NotFound(f"mental model {model_id!r} does not exist in bank {bank_id!r}", "mental_model_id")
    return await get_mental_model(rt, bank_id, model_id)


async def create_with_content(rt: Runtime, bank_id: str, req: MentalModelCreate, content: str) -> MentalModel:
    """A model whose content was written elsewhere (a bank's setup brought over): ready, current
    as of now, its content its first version; no refresh is queued (the sweep refreshes it when
    memories carrying its tags arrive, as any other)."""
    model_id = check_model_id(req.mental_model_id or slug(req.name))
    vec = await rt.embedder.query(req.source_query)
    async with rt.writes.open(bank_id) as conn:
        await ensure_bank(conn, bank_id)
        inserted = await conn.fetchval(
            Q.mental_model_create_with_content,
            bank_id,
            model_id,
            req.name,
            req.source_query,
            req.tags,
            req.max_tokens,
            vec,
            content,
        )
        if inserted is None:
            raise Conflict(
                f"mental_model_id: a mental model {model_id!r} already exists in bank {bank_id!r}", "mental_model_id"
            )
        await conn.fetchval(Q.mental_model_add_version, bank_id, model_id, content, "{}")
    return await get_mental_model(rt, bank_id, model_id)


async def preview_refresh(rt: Runtime, bank_id: str, model_id: str) -> RefreshPreview:
    """A refresh run as the worker runs it, its content returned instead of written (the model,
    its history and its watermark stay as they are). Calls the LLM as a refresh does."""
    model = await get_mental_model(rt, bank_id, model_id)
    started, as_of = time.perf_counter(), datetime.now(UTC)
    result = await reflect(
        rt,
        bank_id,
        ReflectRequest(
            query=model.source_query,
            tags=model.tags or None,
            tags_match=MENTAL_MODEL_MATCH,
            budget="high" if model.max_tokens > 4096 else "mid",
            on_llm_failure="error",
        ),
        operation="mental_model_preview",
        exclude_model=model_id,
        max_answer_tokens=model.max_tokens,
    )
    drawn = await get_memories(rt, bank_id, result.based_on.memories)
    return RefreshPreview(
        mental_model=model,
        content=result.answer,
        based_on=result.based_on.model_dump(),
        memory_types=dict(Counter(m.type for m in drawn)),
        mode=result.mode,
        usage=result.usage,
        as_of=as_of,
        seconds=round(time.perf_counter() - started, 3),
    )


async def consolidate(rt: Runtime, bank_id: str) -> Consolidation:
    """Bring the bank's derived knowledge up to date now: an operation that queues a refresh of
    every model whose content is behind its memories (what the scheduler's sweep does on its own
    once a bank has been quiet). One per bank at a time: asked again meanwhile, the one under way
    is returned."""
    key = f"{CONSOLIDATE}:{bank_id}"
    async with rt.pool.acquire() as conn, conn.transaction():
        if not await conn.fetchval(Q.bank_exists, bank_id):
            raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
        pending = await conn.fetchval(Q.operation_pending_by_key, bank_id, key)
        op_id = pending or await ops.enqueue_operation(
            conn, bank_id, CONSOLIDATE, {}, max_attempts=rt.settings.operation_max_attempts, dedup_key=key
        )
    rt.queue.poke()
    return Consolidation(operation_id=str(op_id), deduplicated=pending is not None)


async def run_consolidate(rt: Runtime, job: Job) -> dict:
    async with rt.pool.acquire() as conn, conn.transaction():
        stale = [r[0] for r in await conn.fetch(Q.mental_model_stale_in_bank, job.bank_id)]
        queued = [str(await _queue_refresh(rt, conn, job.bank_id, m, "consolidation")) for m in stale]
    rt.queue.poke()
    return {"mental_models": stale, "refresh_operation_ids": queued}


async def recover_failed(rt: Runtime, bank_id: str) -> int:
    """Derived knowledge that failed to come about, asked for again: the bank's failed fact
    extractions queued again, and a refresh queued for each model whose last refresh failed.
    Returns how many."""
    retried = await ops.retry_failed_operations(rt, bank_id, [EXTRACT])
    async with rt.pool.acquire() as conn:
        failed = [r[0] for r in await conn.fetch(Q.mental_model_failed_in_bank, bank_id)]
        for model_id in failed:
            await _queue_refresh(rt, conn, bank_id, model_id, "recovery")
    rt.queue.poke()
    return retried + len(failed)


async def refresh_mental_model(rt: Runtime, bank_id: str, model_id: str) -> MentalModelOperation:
    await get_mental_model(rt, bank_id, model_id)
    async with rt.pool.acquire() as conn:
        op_id = await _queue_refresh(rt, conn, bank_id, model_id, "requested")
    rt.queue.poke()
    return MentalModelOperation(mental_model_id=model_id, operation_id=str(op_id))


async def run_refresh(rt: Runtime, job: Job) -> dict:
    model_id = job.payload["mental_model_id"]
    bank_id = job.bank_id
    async with rt.pool.acquire() as conn:
        m = await conn.fetchrow(
            Q.mental_model_refresh_input,
            bank_id,
            model_id,
        )
    if m is None:
        raise ops.Cancelled(DELETED)
    try:
        result = await reflect(
            rt,
            bank_id,
            ReflectRequest(
                query=m["source_query"],
                tags=list(m["tags"]) or None,
                tags_match=MENTAL_MODEL_MATCH,
                budget="high" if m["max_tokens"] > 4096 else "mid",
                on_llm_failure="error",  # a refresh fails; the model keeps its content
            ),
            operation="mental_model",
            operation_id=job.id,
            exclude_model=model_id,
            max_answer_tokens=m["max_tokens"],
        )
    except Exception as exc:
        why = str(exc) if isinstance(exc, HindsightError) else f"refresh failed: {type(exc).__name__}: {exc}"
        async with rt.pool.acquire() as conn:
            still_there = await conn.fetchval(
                Q.mental_model_record_error,
                bank_id,
                model_id,
                f"{why} (attempt {job.attempts} of {job.max_attempts})"[:2000],
            )
        if not still_there:
            raise ops.Cancelled(DELETED) from None
        raise
    based_on = result.based_on.model_dump()
    outcome = {"mental_model_id": model_id, "mode": result.mode, "based_on": based_on}
    announced = 0
    seen = [uuid.UUID(i) for i in dict.fromkeys([*result._shown, *result.based_on.memories])]
    # Under the bank's write lock, as every transaction that writes several of a bank's tables:
    # a bank deleted meanwhile cascades through models and operations in its own order, and two
    # orders of row locks can deadlock (seen: DELETE of a bank during a refresh).
    async with rt.writes.open(bank_id) as conn:
        # Deleted while we reflected: nothing to store (its versions would break the foreign key).
        if not await conn.fetchval(Q.mental_model_lock, bank_id, model_id):
            raise ops.Cancelled(DELETED)
        # A memory the answer was written from was forgotten while it was written (erasures take
        # this lock too, so none can happen from here to the commit): not kept, tried again.
        if seen and await conn.fetchval(Q.mental_model_memories_left, bank_id, seen) < len(seen):
            raise Conflict("a memory this refresh drew on was forgotten while it ran; it runs again")
        # reflect never answers empty or longer than max_tokens: the LLM's answer was checked
        # (and an unusable one failed the refresh above), the extractive one is cut to fit.
        await conn.execute(
            Q.mental_model_set_content,
            bank_id,
            model_id,
            result.answer,
            json.dumps(based_on),
            m["watermark"],
        )
        version = await conn.fetchval(
            Q.mental_model_add_version,
            bank_id,
            model_id,
            result.answer,
            json.dumps(based_on),
        )
        await conn.execute(
            Q.mental_model_trim_versions,
            bank_id,
            model_id,
            version - rt.settings.mental_model_history,
        )
        outcome["version"] = version
        if await ops.mark_succeeded(conn, job, outcome):
            data = {"mental_model_id": model_id, "version": version, "mode": result.mode}
            announced = await events.fire(rt, conn, bank_id, events.MENTAL_MODEL_REFRESHED, data, job.id)
    if announced:
        rt.queue.poke()
    return outcome


async def sweep_stale_models(rt: Runtime) -> int:
    """Queue refreshes for stale models (see the module docstring); returns how many were queued."""
    debounce = rt.settings.mental_model_debounce
    async with rt.pool.acquire() as conn:
        async with conn.transaction():
            rows = await conn.fetch(
                Q.mental_model_sweep,
                debounce,
                REFRESH,
                rt.settings.operation_max_attempts,
                max(MIN_COOL_DOWN_SECONDS, REFRESH_COOL_DOWN * debounce),
            )
    return len(rows)


# A forgotten memory's sentence this long or longer, found in a model's content, is a quote of it.
QUOTE_MIN_CHARS = 20
_SENTENCE_END = re.compile(r"(?<=[.!?。！？])\s*")
_SPACE = re.compile(r"\s+")


def _plain(text: str) -> str:
    return _SPACE.sub(" ", text).strip().casefold()


def quotes(content: str, words: set[str], texts: list[str], vanished: set[str]) -> bool:
    """Whether a model's `content` (its words `words`, as the bank counts them) carries forgotten
    text: a word no memory of the bank holds any more (`vanished`), or one of the forgotten `texts`,
    whole or a sentence of it, verbatim (in any case and spacing)."""
    if words & vanished:
        return True
    said = _plain(content)
    for text in texts:
        for piece in (text, *_SENTENCE_END.split(text)):
            plain = _plain(piece)
            if len(plain) >= QUOTE_MIN_CHARS and plain in said:
                return True
    return False


def _drawn_from(based_on: str) -> tuple[set[str], set[str]]:
    """The memories and mental models a content's `based_on` names."""
    value = json.loads(based_on)
    if not isinstance(value, dict):
        return set(), set()
    return set(value.get("memories") or ()), set(value.get("mental_models") or ())


async def forget_in_models(
    conn, bank_id: str, forgotten: set[str], texts: list[str], vanished: set[str], max_attempts: int
) -> tuple[list[str], list[str]]:
    """An erasure reaches the bank's mental models, in the caller's transaction (it holds the
    bank's write lock): a model drawn from a forgotten memory, or from such a model, is stale
    (left out of reflect) until a refresh, queued now, writes it without the memory; one whose
    content quotes the forgotten text (engine `quotes`) loses that content now; kept versions
    drawn from or quoting it go. Returns (stale, withdrawn) model ids."""
    rows = await conn.fetch(Q.mental_models_forgetting, bank_id)
    sources = {r["id"]: _drawn_from(r["based_on"]) for r in rows}
    withdrawn = {
        r["id"] for r in rows if r["content"] is not None and quotes(r["content"], set(r["words"]), texts, vanished)
    }
    stale = withdrawn | {i for i, (memories, _) in sources.items() if memories & forgotten}
    grew = bool(stale)
    while grew:  # a model drawn from a stale model is stale too
        more = {i for i, (_, models) in sources.items() if i not in stale and models & stale}
        stale |= more
        grew = bool(more)
    for r in rows:
        if r["id"] in stale and r["id"] not in withdrawn:
            kept = json.loads(r["based_on"])
            if isinstance(kept, dict) and isinstance(kept.get("memories"), list):
                kept["memories"] = [m for m in kept["memories"] if m not in forgotten]
            await conn.execute(Q.mental_model_mark_stale, bank_id, r["id"], json.dumps(kept))
    if withdrawn:
        await conn.execute(Q.mental_model_withdraw, bank_id, sorted(withdrawn))
    dropped: dict[str, list[int]] = {}
    for v in await conn.fetch(Q.mental_model_versions_forgetting, bank_id):
        memories, _ = _drawn_from(v["based_on"])
        if memories & forgotten or quotes(v["content"], set(v["words"]), texts, vanished):
            dropped.setdefault(v["model_id"], []).append(v["version"])
    for model_id, versions in sorted(dropped.items()):
        await conn.execute(Q.mental_model_versions_drop, bank_id, model_id, versions)
    for model_id in sorted(stale):
        await ops.enqueue_operation(
            conn,
            bank_id,
            REFRESH,
            {"mental_model_id": model_id, "reason": "memories forgotten"},
            max_attempts=max_attempts,
            dedup_key=dedup_key(bank_id, model_id),
        )
    return sorted(stale), sorted(withdrawn)
