"""Fact extraction with an LLM, run as a `retain_extract` operation after retain has committed
the raw units (so an accepted item is recallable at once and never lost).

Items are packed into one LLM call up to a token budget. Each fact is a self-contained statement
with its entities, type and absolute times; it keeps the raw unit's tags, metadata, document and
position and is linked to it in `fact_sources`. A raw unit that produced facts is marked
`superseded` (kept, hidden from recall), so facts replace it in results instead of duplicating it.

What the LLM answers is bounded before anything is stored: a fact has text, at most
MAX_FACT_CHARS characters, names an item that exists, and an item yields at most
MAX_FACTS_PER_ITEM facts; an answer that breaks these is re-asked with the reason and, if it
still does, the operation fails (the raw text stays in recall). An answer with no facts at all is
a valid outcome (greetings, filler): the operation succeeds with `extraction: "empty"` in its
result, and the raw text stays in recall.

Duplicates: a fact whose embedding is within `fact_dedup_threshold` cosine of an existing fact of
the bank (or of an earlier fact in the same batch) is not stored again; the existing fact is
linked to the new raw unit instead. Storing runs under the bank's write lock (runtime.BankWrites),
so concurrent extractions cannot both insert the same fact.

Updates: each item comes with the facts already known that are nearest to it (sharing an entity
or close in meaning, at most KNOWN_PER_ITEM), by short references; the LLM says in a fact's
`updates` which of them the fact makes no longer true (Alice moved), and those are superseded
(engine/memory/validity.py) by the new fact, recorded as the LLM's doing. A reference to a fact the item was
not given fails the answer's check like any other invalid answer: it is re-asked, and if it still
fails nothing is stored, superseded or invalidated (the operation fails; the raw text stays).
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections import Counter
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any, Literal, NamedTuple

import numpy as np
from pydantic import BaseModel, Field

from hindsight.db.sql import Q
from hindsight.engine.errors import Conflict, InvalidArgument
from hindsight.engine.memory.ids import new_memory_id
from hindsight.engine.memory.retain import Unit, store_units
from hindsight.engine.memory.schemas import GivenEntity, RetainItem
from hindsight.engine.memory.validity import began, end_with_raw_units, supersede
from hindsight.engine.memory.vectors import memory_vectors
from hindsight.engine.notify import events
from hindsight.engine.queue import operations as ops
from hindsight.language.chinese_names import Budget
from hindsight.language.entities import extract_entities, merge_entities
from hindsight.language.time_expressions import find_time_windows
from hindsight.llm import LLMError, Rejected, Usage
from hindsight.metrics import RETAIN_UNITS
from hindsight.text import estimate_tokens, split_units

if TYPE_CHECKING:
    from hindsight.engine.queue.operations import Job
    from hindsight.engine.runtime import Runtime


MAX_ITEMS_PER_CALL = 40
# The longest fact, in characters. A fact is one self-contained statement, and what recall finds
# it by is its embedding, which reads its first 256 tokens (about 1,000 characters of English,
# embedding/onnx.py MAX_TOKENS): a fact twice that long is no longer one statement. Raw units are
# cut at HINDSIGHT_API_UNIT_MAX_CHARS (1,200 by default) for the same reason. Its entity names are
# bounded apart (entities.MAX_ENTITY_CHARS) for the unique btree index on entities, the one a
# 1 MB "fact" broke; the fact's text itself is indexed only by lexeme (the tsv GIN index, whose
# entries PostgreSQL keeps under 2 KB each by dropping longer words).
MAX_FACT_CHARS = 2_000
# The most facts one item (a raw unit, at most HINDSIGHT_API_UNIT_MAX_CHARS) may yield.
MAX_FACTS_PER_ITEM = 100
# The known facts an item is shown, to say which a new fact updates: those sharing an entity with
# the item first, then those at least KNOWN_MIN_SIMILARITY similar to it, nearest first.
KNOWN_PER_ITEM = 5
KNOWN_MIN_SIMILARITY = 0.5


class Known(NamedTuple):
    """A fact already in memory, shown to the LLM by `ref` beside an item."""

    ref: str
    id: uuid.UUID
    text: str


SYSTEM = """TASK: extract_facts
You turn conversation turns and notes into facts for a long-term memory.
For every item, write each fact worth remembering as one self-contained statement:
- resolve pronouns and references ("she", "the trip", "there") into the people, places and things they mean;
- keep names, numbers, places and dates; one fact per statement; skip greetings and filler;
- type: "experience" for what the speaker did, felt or experienced; "world" for facts about others or the world;
- entities: the people, places, organisations and named things the fact mentions;
- occurred_start / occurred_end: ISO 8601 absolute times of when it happened, resolved against the item's
  timestamp (e.g. "yesterday" in an item at 2023-05-08 is 2023-05-07); null when unknown;
- item: the index of the item the fact comes from;
- updates: an item may list `known` facts already in memory (each with a ref). When a fact you write makes a
  known fact of its item no longer true (the person moved, changed jobs, changed a preference, a plan changed),
  put that known fact's ref in the fact's updates. A fact that says the same as a known fact, or adds to it
  without contradicting it, has no updates. Never name a ref the item did not list.
Reply with JSON only: {"facts": [{"item": 0, "text": "...", "type": "world", "entities": [], "occurred_start": null, "occurred_end": null, "updates": []}]}"""


class ExtractedFact(BaseModel):
    item: int
    text: str = Field(min_length=1, max_length=MAX_FACT_CHARS)
    type: Literal["world", "experience"] = "world"
    entities: list[str] = Field(default_factory=list)
    occurred_start: str | None = None
    occurred_end: str | None = None
    updates: list[str] = Field(default_factory=list, max_length=KNOWN_PER_ITEM)


class ExtractedFacts(BaseModel):
    facts: list[ExtractedFact]


def batches(rows: list, budget: int) -> list[list]:
    """Pack items into LLM calls up to the token budget (an oversized item goes alone)."""
    out: list[list] = []
    cur: list = []
    used = 0
    for r in rows:
        t = estimate_tokens(r["text"]) + 30
        if cur and (used + t > budget or len(cur) >= MAX_ITEMS_PER_CALL):
            out.append(cur)
            cur, used = [], 0
        cur.append(r)
        used += t
    if cur:
        out.append(cur)
    return out


def _when(value: str | None) -> datetime | None:
    if not value:
        return None
    try:
        dt = datetime.fromisoformat(value.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def prompt_for(group: list, known: dict[uuid.UUID, list[Known]] | None = None) -> list[dict]:
    items = []
    for i, r in enumerate(group):
        item = {
            "index": i,
            "timestamp": r["mentioned_at"].isoformat() if r["mentioned_at"] else None,
            "context": r["context"],
            "text": r["text"],
        }
        if known and known.get(r["id"]):
            item["known"] = [{"ref": k.ref, "text": k.text} for k in known[r["id"]]]
        items.append(item)
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "ITEMS:\n" + json.dumps({"items": items}, ensure_ascii=False)},
    ]


async def known_facts(rt: Runtime, bank_id: str, group: list) -> dict[uuid.UUID, list[Known]]:
    """For each raw unit, the current facts nearest to it that a new fact could update, each with
    a reference unique in the group (k1, k2, ...: short, so that a model copies them exactly)."""
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(
            Q.curation_candidates, bank_id, [r["id"] for r in group], KNOWN_MIN_SIMILARITY, KNOWN_PER_ITEM
        )
    refs: dict[uuid.UUID, str] = {}
    known: dict[uuid.UUID, list[Known]] = {}
    for r in rows:  # by unit, entity-sharing facts first, nearest first
        shown = known.setdefault(r["raw_id"], [])
        if len(shown) < KNOWN_PER_ITEM and all(k.id != r["id"] for k in shown):
            shown.append(Known(refs.setdefault(r["id"], f"k{len(refs) + 1}"), r["id"], r["text"]))
    return known


def to_units(group: list, facts: list[ExtractedFact]) -> list[tuple[Unit, uuid.UUID]]:
    units = []
    budget = Budget(sum(len(f.text) for f in facts))
    for f in facts:
        raw = group[f.item]
        base = raw["mentioned_at"]  # None: retained as timeless ("unset")
        start, end = _when(f.occurred_start), _when(f.occurred_end)
        if start is None:
            windows = find_time_windows(f.text, base, anchored=base is not None)
            start, end = (windows[0].start, windows[0].end) if windows else (None, None)
        elif end is None or end < start:
            end = start + timedelta(days=1)
        given = [GivenEntity(text=n, type=k) for n, k in json.loads(raw["given_entities"] or "[]")]
        item = RetainItem.model_construct(
            content=f.text,
            context=raw["context"],
            timestamp=base or "unset",
            tags=list(raw["tags"]),
            metadata=json.loads(raw["metadata"]),
            document_id=raw["document_id"],
            entities=given or None,
        )
        # The client's entities for the item, then those the LLM names, then those in the text.
        entities = merge_entities(
            item.given_entities(), [(n, "name") for n in f.entities], extract_entities(f.text, budget)
        )
        unit = Unit(
            id=new_memory_id(),
            text=f.text.strip(),
            kind=f.type,
            item=item,
            source_id=raw["source_id"],
            position=raw["position"],
            occurred=(start, end) if start and end else None,
            entities=entities,
        )
        units.append((unit, raw["id"]))
    return units


async def _store(
    rt: Runtime,
    bank_id: str,
    pairs: list[tuple[Unit, uuid.UUID]],
    vectors,
    raw_ids: list,
    updates: list[list[uuid.UUID]],
) -> dict:
    threshold = rt.settings.fact_dedup_threshold
    async with rt.writes.open(bank_id) as conn:
        alive = {
            r["id"]
            for r in await conn.fetch(
                Q.extraction_lock_raw_units,
                bank_id,
                raw_ids,
            )
        }
        new_units: list[Unit] = []
        new_vecs: list = []
        links: list[tuple[uuid.UUID, uuid.UUID]] = []
        kept: list[tuple[Unit, Any]] = []
        replacing: list[tuple[uuid.UUID, Unit, list[uuid.UUID]]] = []
        for (unit, raw_id), vec, older in zip(pairs, vectors, updates):
            if raw_id not in alive:  # deleted or replaced meanwhile, or done by an earlier attempt
                continue
            twin = next((u.id for u, v in kept if float(np.dot(v, vec)) >= threshold), None)
            if twin is None:
                row = await conn.fetchrow(
                    Q.fact_nearest,
                    bank_id,
                    vec,
                )
                if row is not None and row["sim"] >= threshold:
                    twin = row["id"]
            if twin is None:
                new_units.append(unit)
                new_vecs.append(vec)
                kept.append((unit, vec))
                twin = unit.id
            links.append((twin, raw_id))
            if older:
                replacing.append((twin, unit, older))
        if new_units:
            await store_units(conn, bank_id, new_units, new_vecs)
        superseded = 0
        for newer, unit, older in replacing:
            since = began(unit.occurred[0] if unit.occurred else None, unit.item.anchor) or datetime.now(UTC)
            ended = await supersede(conn, bank_id, older, newer, since, "llm", "extraction: a newer fact updates it")
            superseded += len(ended)
        links = sorted(set(links))
        if links:
            await conn.execute(
                Q.fact_sources_link,
                [a for a, _ in links],
                [b for _, b in links],
                bank_id,
            )
            await conn.execute(Q.raw_units_supersede, bank_id, sorted({b for _, b in links}))
            # Memories a retained item superseded point to its raw unit: now to its first fact.
            first: dict[uuid.UUID, uuid.UUID] = {}
            for fact, raw in links:
                first.setdefault(raw, fact)
            await conn.execute(Q.curation_repoint, bank_id, list(first), list(first.values()))
            # Raw units a later retain superseded before their facts existed: the facts end too.
            superseded += await end_with_raw_units(conn, bank_id, list(first))
    RETAIN_UNITS.labels("fact").inc(len(new_units))
    return {
        "new": [str(u.id) for u in new_units],
        "facts": sorted({str(a) for a, _ in links}),
        "merged": len(links) - len(new_units),
        "superseded": superseded,
    }


async def _extract_group(rt: Runtime, job: Job, group: list, usage: Usage) -> dict:
    known = await known_facts(rt, job.bank_id, group)

    def check(parsed: ExtractedFacts) -> None:
        per_item: Counter[int] = Counter()
        for i, f in enumerate(parsed.facts):
            if not 0 <= f.item < len(group):
                raise ValueError(f"facts.{i} names item {f.item}, but items are 0..{len(group) - 1}")
            if not f.text.strip():
                raise ValueError(f"facts.{i} has no text")
            refs = {k.ref for k in known.get(group[f.item]["id"], [])}
            if stray := [u for u in f.updates if u not in refs]:
                listed = ", ".join(sorted(refs)) or "none"
                raise ValueError(f"facts.{i} updates {stray[0]!r}, but item {f.item} lists known refs: {listed}")
            per_item[f.item] += 1
        if per_item and (most := per_item.most_common(1)[0])[1] > MAX_FACTS_PER_ITEM:
            raise Rejected("too_long", f"item {most[0]} yields {most[1]} facts; at most {MAX_FACTS_PER_ITEM}")

    parsed = await rt.llm.json(
        "retain",
        prompt_for(group, known),
        ExtractedFacts,
        bank_id=job.bank_id,
        operation="retain",
        operation_id=job.id,
        check=check,
        usage=usage,
    )

    def prepared() -> tuple[list[tuple[Unit, uuid.UUID]], Any]:
        # Off the event loop: a fact's entities and dates are found in pure Python (Chinese names
        # at ~20-40 us a character, up to 100 facts of 2,000 characters an item).
        pairs = to_units(group, parsed.facts)
        return pairs, memory_vectors(rt.embedder, [u.text for u, _ in pairs])

    pairs: list[tuple[Unit, uuid.UUID]] = []
    vectors: Any = []
    if parsed.facts:  # nothing to read or embed: no CPU slot to wait for
        pairs, vectors = await rt.cpu_slots.run(prepared)
    by_ref = {k.ref: k.id for ks in known.values() for k in ks}
    updates = [sorted({by_ref[u] for u in f.updates}) for f in parsed.facts]
    return await _store(rt, job.bank_id, pairs, vectors, [r["id"] for r in group], updates)


async def run_extraction(rt: Runtime, job: Job) -> dict:
    raw_ids = [uuid.UUID(x) for x in job.payload["raw_ids"]]
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(
            Q.extraction_raw_units,
            job.bank_id,
            raw_ids,
        )
    usage = Usage()
    groups = batches(list(rows), rt.settings.retain_llm_batch_tokens)
    done = await asyncio.gather(*(_extract_group(rt, job, g, usage) for g in groups), return_exceptions=True)
    errors = [d for d in done if isinstance(d, BaseException)]
    if errors:  # groups that succeeded are committed; a retry redoes only the rest
        # A failure of the work before a rate limit: the worker defers an operation whose only
        # trouble is the provider's rate limit, without counting the attempt.
        raise next((e for e in errors if not (isinstance(e, LLMError) and e.cause == "rate_limit")), errors[0])
    stored = [d for d in done if isinstance(d, dict)]
    async with rt.pool.acquire() as conn:
        # Everything this retain now contributes to recall: its facts, and raw units that gave none.
        visible = await conn.fetch(
            Q.extraction_visible,
            job.bank_id,
            raw_ids,
        )
    new_facts, merged_facts = sum(len(d["new"]) for d in stored), sum(d["merged"] for d in stored)
    result = {
        # "empty": the LLM found nothing worth a fact (the raw text stays in recall).
        "extraction": "succeeded" if new_facts + merged_facts else "empty",
        "memory_ids": sorted(str(r["id"]) for r in visible),
        "new_facts": new_facts,
        "merged_facts": merged_facts,
        "superseded": sum(d["superseded"] for d in stored),
        "items": len(rows),
        "llm_calls": usage.calls,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
    }
    superseded = result["superseded"]
    data = {
        "facts_created": new_facts,
        "facts_merged": merged_facts,
        "facts_superseded": superseded,
        "items": len(rows),
        # the same counts in the words of Hindsight's consolidation.completed
        "observations_created": new_facts,
        "observations_updated": merged_facts,
        "observations_deleted": superseded,
    }
    async with rt.pool.acquire() as conn:
        async with conn.transaction():  # done and announced together, or neither
            announced = await ops.mark_succeeded(conn, job, result) and await events.fire(
                rt, conn, job.bank_id, events.EXTRACTION_COMPLETED, data, job.id
            )
    if announced:
        rt.queue.poke()
    return result


class PreviewedFact(BaseModel):
    text: str
    type: Literal["world", "experience"]
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    entities: list[str]


class ExtractionPreview(BaseModel):
    """The facts a retain of some text would store now, stored nowhere."""

    facts: list[PreviewedFact]
    usage: dict[str, int]


class ExtractionPreviewRequest(RetainItem):
    """The text to preview, as retain takes it (only its content, context and timestamp matter)."""


async def preview_extraction(rt: Runtime, bank_id: str, req: ExtractionPreviewRequest) -> ExtractionPreview:
    """What fact extraction would make of `req`'s text: split into units and sent to the LLM as a
    retain's extraction sends them, nothing stored and no known facts shown (a preview does not
    say which stored facts the new ones would update). Without an LLM for retain there is nothing
    to preview: retain then stores the text as units, without facts."""
    if not rt.llm.configured("retain"):
        raise Conflict(
            "no LLM is configured for retain (HINDSIGHT_API_LLM_MODEL): offline, retain extracts no facts; "
            "it stores the text as memory units",
            "content",
        )
    if len(req.content) > rt.settings.max_content_chars:
        limit = rt.settings.max_content_chars
        raise InvalidArgument(f"content: {len(req.content)} characters exceed the limit of {limit}", "content")
    anchor = req.anchor or (None if req.timeless else datetime.now(UTC))
    pieces = await rt.cpu_slots.run(split_units, req.content, rt.settings.unit_max_chars)
    rows = [{"id": None, "text": p, "context": req.context, "mentioned_at": anchor} for p in pieces]
    usage = Usage()
    facts: list[PreviewedFact] = []
    for group in batches(rows, rt.settings.retain_llm_batch_tokens):

        def check(parsed: ExtractedFacts, size: int = len(group)) -> None:
            for i, f in enumerate(parsed.facts):
                if not 0 <= f.item < size:
                    raise ValueError(f"facts.{i} names item {f.item}, but items are 0..{size - 1}")

        parsed = await rt.llm.json(
            "retain", prompt_for(group), ExtractedFacts, bank_id=bank_id, operation="retain_preview", check=check,
            usage=usage,
        )  # fmt: skip
        for f in parsed.facts:
            start, end = _when(f.occurred_start), _when(f.occurred_end)
            if start is None:
                windows = find_time_windows(f.text, anchor, anchored=anchor is not None)
                start, end = (windows[0].start, windows[0].end) if windows else (None, None)
            facts.append(PreviewedFact(text=f.text.strip(), type=f.type, occurred_start=start, occurred_end=end,
                                       entities=list(f.entities)))  # fmt: skip
    return ExtractionPreview(
        facts=facts,
        usage={
            "prompt_tokens": usage.prompt_tokens,
            "completion_tokens": usage.completion_tokens,
            "calls": usage.calls,
        },
    )
