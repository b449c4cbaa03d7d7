"""Documents in Hindsight's transfer archive (its document-transfer export and import, schema 1):
a ZIP of `manifest.json` and one `documents/NNNNNN.json` per document, each with its text, its
chunks and the facts extracted from it (text, type, times, tags, metadata, entity names), without
embeddings or database ids. The reference's servers write and read it; so does this one, so that
documents move between the two with each side's own tools, and `hindsight migrate` brings a bank
over in it.

How our memories map onto it. A document is the text retained under a document_id (a retained
source); memories retained without one are grouped by the item they came from, a document each
(id `item:<uuid>`, so nothing is left behind). Its chunks are its raw units, in order. Its facts
are the memories recall returns from it: the facts an LLM extracted (each pointing at the chunk of
its first source unit) and the raw units that yielded none (pointing at their own chunk). What is
no longer true (superseded or invalidated) is history here and is not exported: the reference has
no such notion and would make it current again.

Importing: each document is stored in its own transaction under the bank's write lock, as retain
stores (its chunks as raw units, split to this server's unit size; its facts as facts linked to
the units of their chunk, which recall then leaves out), every text embedded with this server's
model, entities resolved by name against the bank's own, no LLM called. What the schema has and
this server does not keep is counted as skipped, never silently dropped: observations, causal
links, facts of other types. A document id already in the bank follows `on_conflict`: skip (the
default: importing an archive twice changes nothing), replace (its memories and text are replaced)
or new-id (it is imported under a new id derived from the operation and the old id, so that a
retried operation finds its own). Ids of what is stored are derived from the bank, document and
place, so a retried import cannot store anything twice.
"""

from __future__ import annotations

import hashlib
import json
import tempfile
import uuid
import zipfile
import zlib
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import IO, TYPE_CHECKING, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from hindsight.db.sql import Q, fill
from hindsight.engine.banks.files import BankFile, copy_file, file_key, store_file
from hindsight.engine.banks.registry import ensure_bank
from hindsight.engine.errors import InvalidArgument, NotFound
from hindsight.engine.memory.records import LINKED_NAMES
from hindsight.engine.memory.retain import Unit, memory_type, store_units
from hindsight.engine.memory.schemas import RetainItem
from hindsight.engine.memory.sources import delete_sources
from hindsight.engine.queue import operations as ops
from hindsight.engine.rules.fields import METADATA_BYTES
from hindsight.engine.rules.text import Strict
from hindsight.engine.rules.validation import parse
from hindsight.language.chinese_names import Budget
from hindsight.language.entities import extract_entities, merge_entities
from hindsight.text import split_units

if TYPE_CHECKING:
    from hindsight.engine.queue.operations import Job
    from hindsight.engine.runtime import Runtime

SCHEMA_VERSION = 1
EXPORT = "export_documents"
IMPORT = "import_documents_archive"
OnConflict = Literal["skip", "replace", "new-id"]
ID_NAMESPACE = uuid.UUID("0e7a1d52-4b1f-4c8e-9a3d-52b0c0ffee52")
# Bounds on what an archive may hold, checked from its directory before anything is read: a small
# ZIP can inflate to terabytes, and every document is read whole.
MAX_DOCUMENT_BYTES = 256 * 2**20
MAX_DOCUMENTS = 1_000_000
MAX_FACTS_PER_DOCUMENT = 100_000
BATCH = 200  # documents read from the database per statement, when exporting
# Documents prepared and embedded together when importing: at most this many, or this much text.
GROUP_DOCUMENTS = 32
GROUP_CHARS = 2_000_000
# The fact types this server keeps; the reference's observations are its own consolidation's.
KEPT_TYPES = ("world", "experience")


# ---- the archive's shapes (the reference's TransferDocument, read leniently, checked strictly) ----
class ArchiveChunk(Strict):
    model_config = ConfigDict(extra="ignore")

    chunk_index: int = Field(ge=0, le=10_000_000)
    chunk_text: str = Field(max_length=1_000_000)


class ArchiveFact(Strict):
    model_config = ConfigDict(extra="ignore")

    text: str = Field(min_length=1, max_length=100_000)
    fact_type: str = Field(max_length=64)
    context: str | None = Field(None, max_length=200)
    event_date: datetime | None = None
    occurred_start: datetime | None = None
    occurred_end: datetime | None = None
    mentioned_at: datetime | None = None
    metadata: dict[str, Any] = Field(default_factory=dict)
    tags: list[str] = Field(default_factory=list, max_length=1000)
    chunk_index: int | None = Field(None, ge=0, le=10_000_000)
    entities: list[str] = Field(default_factory=list, max_length=1000)
    causal_relations: list[dict[str, Any]] = Field(default_factory=list)

    @field_validator("text")
    @classmethod
    def _text(cls, v: str) -> str:
        if not v.strip():
            raise ValueError("is blank")
        return v

    @field_validator("metadata")
    @classmethod
    def _small(cls, v: dict[str, Any]) -> dict[str, Any]:
        if len(json.dumps(v, default=str)) > METADATA_BYTES:
            raise ValueError("metadata is larger than 16 KiB")
        return v


class ArchiveDocument(Strict):
    model_config = ConfigDict(extra="ignore")

    id: str = Field(min_length=1, max_length=256)
    original_text: str | None = Field(None, max_length=100_000_000)
    tags: list[str] = Field(default_factory=list, max_length=1000)
    created_at: datetime | None = None
    chunks: list[ArchiveChunk] = Field(default_factory=list)
    facts: list[ArchiveFact] = Field(default_factory=list, max_length=MAX_FACTS_PER_DOCUMENT)


class Manifest(Strict):
    model_config = ConfigDict(extra="ignore")

    schema_version: int = Field(SCHEMA_VERSION, ge=1)
    source_bank_id: str = Field("", max_length=256)
    archive_type: str = Field("documents", max_length=32)
    document_count: int = Field(0, ge=0)
    mental_model_count: int = Field(0, ge=0)
    directive_count: int = Field(0, ge=0)
    observation_count: int = Field(0, ge=0)


class ArchiveImported(BaseModel):
    """An import's outcome: the reference's counts, and ours for what it has that this server
    does not keep."""

    documents_imported: int = 0
    documents_skipped: int = 0
    facts_imported: int = 0
    observations_imported: int = 0
    observations_skipped: int = 0
    skipped_document_ids: list[str] = Field(default_factory=list)
    remapped_document_ids: dict[str, str] = Field(default_factory=dict)
    chunks_imported: int = 0
    facts_skipped: int = Field(0, description="Facts of types this server does not keep.")
    causal_links_skipped: int = Field(0, description="This server keeps no causal links between facts.")
    not_imported: list[str] = Field(
        default_factory=list, description="Parts of a whole-bank archive this import does not read, with why."
    )


class ArchiveExported(BaseModel):
    storage_key: str
    byte_size: int
    filename: str
    documents: int
    facts: int


# ---- export ------------------------------------------------------------------------------------
def _stringify(meta: dict[str, Any]) -> dict[str, str]:
    """The schema's metadata holds strings; other JSON values travel as their JSON text."""
    return {k: v if isinstance(v, str) else json.dumps(v) for k, v in meta.items()}


def _iso(value: datetime | None) -> str | None:
    return value.isoformat() if value is not None else None


def _document(doc_id: str, text: str | None, tags: list[str], created: datetime | None, rows: list) -> dict:
    """One document of the archive from its memories' rows (in order: source, position)."""
    chunk_of: dict[uuid.UUID, int] = {}
    chunks: list[dict] = []
    for r in rows:
        if not r["is_fact"]:
            chunk_of[r["id"]] = len(chunks)
            chunks.append({"chunk_index": len(chunks), "chunk_text": r["text"]})
    facts = []
    for r in rows:
        current = r["valid_to"] is None and r["invalidated_at"] is None
        if not current or (not r["is_fact"] and r["superseded"]):
            continue  # history, or a raw unit its facts replace
        index = chunk_of.get(r["source_unit"] if r["is_fact"] else r["id"])
        facts.append(
            {
                "text": r["text"],
                "fact_type": r["kind"],
                "context": r["context"],
                "event_date": _iso(r["occurred_start"] or r["mentioned_at"] or r["created_at"]),
                "occurred_start": _iso(r["occurred_start"]),
                "occurred_end": _iso(r["occurred_end"]),
                "mentioned_at": _iso(r["mentioned_at"]),
                "metadata": _stringify(json.loads(r["metadata"])),
                "tags": list(r["tags"]),
                "chunk_index": index,
                "entities": list(r["entities"]),
                "causal_relations": [],
                "created_at": _iso(r["created_at"]),
            }
        )
    return {
        "id": doc_id,
        "original_text": text if text is not None else "\n\n".join(c["chunk_text"] for c in chunks),
        "retain_params": None,
        "tags": tags,
        "created_at": _iso(created),
        "chunks": chunks,
        "facts": facts,
    }


_UNITS = fill(Q.archive_units, linked_names=LINKED_NAMES)
_LOOSE_UNITS = fill(Q.archive_loose_units, linked_names=LINKED_NAMES)


async def _write_documents(
    rt: Runtime, bank_id: str, zf: zipfile.ZipFile, document_ids: list[str] | None
) -> tuple[int, int]:
    """Every document of the bank (or those named) into `zf`; returns (documents, facts)."""
    written = facts = 0

    async def put(docs: list[dict]) -> None:
        nonlocal written, facts
        first = written

        def write() -> None:
            for i, d in enumerate(docs):
                zf.writestr(f"documents/{first + i:06d}.json", json.dumps(d, ensure_ascii=False))

        await rt.cpu_slots.run(write)
        written += len(docs)
        facts += sum(len(d["facts"]) for d in docs)

    after = ""
    while True:
        async with rt.pool.acquire() as conn:
            sources = await conn.fetch(Q.archive_sources, bank_id, document_ids, after, BATCH)
            if not sources:
                break
            rows = await conn.fetch(_UNITS, bank_id, [s["id"] for s in sources])
        by_doc: dict[str, list] = {}
        for r in rows:
            by_doc.setdefault(r["document_id"], []).append(r)
        await put(
            [
                _document(s["id"], s["original_text"], list(s["tags"]), s["created_at"], by_doc.get(s["id"], []))
                for s in sources
            ]
        )
        after = sources[-1]["id"]
    if document_ids is None:  # memories retained without a document_id: a document per item
        after = ""
        while True:
            async with rt.pool.acquire() as conn:
                groups = await conn.fetch(Q.archive_loose_sources, bank_id, after, BATCH)
                if not groups:
                    break
                rows = await conn.fetch(_LOOSE_UNITS, bank_id, [g["source_id"] for g in groups])
            by_source: dict[str, list] = {}
            for r in rows:
                by_source.setdefault(r["source_id"], []).append(r)
            docs = []
            for g in groups:
                units = by_source.get(g["source_id"], [])
                tags = sorted({t for r in units for t in r["tags"]})
                docs.append(_document(g["source_id"], None, tags, g["created_at"], units))
            await put(docs)
            after = groups[-1]["source_id"]
    return written, facts


async def request_export(rt: Runtime, bank_id: str, document_ids: list[str] | None) -> str:
    """Queue an export of the bank's documents (all, or those named); returns its operation id."""
    async with rt.pool.acquire() as conn, conn.transaction():
        if not await conn.fetchval(Q.bank_exists, bank_id):
            raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
        op_id = await ops.enqueue_operation(
            conn, bank_id, EXPORT, {"document_ids": document_ids}, max_attempts=rt.settings.operation_max_attempts
        )
    rt.queue.poke()
    return str(op_id)


async def run_export(rt: Runtime, job: Job) -> dict:
    """Write the archive to a temporary file, then keep it as a file of the bank, with the
    operation that made it (deleting the operation deletes it)."""
    with tempfile.SpooledTemporaryFile(max_size=16 * 2**20) as spool:
        with zipfile.ZipFile(spool, "w", compression=zipfile.ZIP_DEFLATED, compresslevel=6) as zf:
            documents, facts = await _write_documents(rt, job.bank_id, zf, job.payload.get("document_ids"))
            manifest = {
                "schema_version": SCHEMA_VERSION,
                "source_bank_id": job.bank_id,
                "exported_at": datetime.now(UTC).isoformat(),
                "document_count": documents,
                "fact_count": facts,
                "observation_count": 0,
                "archive_type": "documents",
            }
            zf.writestr("manifest.json", json.dumps(manifest))
        spool.seek(0)
        key = f"banks/{job.bank_id}/exports/{job.id}/transfer.zip"
        async with rt.pool.acquire() as conn, conn.transaction():
            size = await store_file(
                conn, job.bank_id, key, spool, name=f"{job.bank_id}-documents.zip", media_type="application/zip",
                operation_id=job.id,
            )  # fmt: skip
    return ArchiveExported(
        storage_key=key, byte_size=size, filename=f"{job.bank_id}-documents.zip", documents=documents, facts=facts
    ).model_dump()


# ---- import ------------------------------------------------------------------------------------
def _bad(msg: str) -> InvalidArgument:
    return InvalidArgument(f"file: {msg}", "file")


def open_archive(source: IO[bytes]) -> tuple[zipfile.ZipFile, Manifest, list[str]]:
    """The archive, its manifest and its documents' member names, in order; errors a client can
    act on for what is not such an archive, or holds more than it may."""
    try:
        zf = zipfile.ZipFile(source)
    except (zipfile.BadZipFile, ValueError, OSError):
        raise _bad("not a ZIP archive (a transfer archive from a document export)") from None
    names = {i.filename: i for i in zf.infolist()}
    if "manifest.json" not in names:
        raise _bad("no manifest.json: not a transfer archive")
    docs = sorted(n for n in names if n.startswith("documents/") and n.endswith(".json"))
    if len(docs) > MAX_DOCUMENTS:
        raise _bad(f"{len(docs)} documents; an import takes at most {MAX_DOCUMENTS}")
    for n in ("manifest.json", *docs):
        if names[n].file_size > MAX_DOCUMENT_BYTES:
            raise _bad(f"{n} inflates to {names[n].file_size} bytes; at most {MAX_DOCUMENT_BYTES}")
    manifest = parse(Manifest, _read_json(zf, "manifest.json"), "manifest.")
    if manifest.schema_version > SCHEMA_VERSION:
        raise _bad(f"schema version {manifest.schema_version} is newer than this server reads ({SCHEMA_VERSION})")
    return zf, manifest, docs


def _read_json(zf: zipfile.ZipFile, name: str) -> Any:
    try:
        return json.loads(zf.read(name))
    except (zipfile.BadZipFile, zlib.error, OSError, EOFError):
        raise _bad(f"{name} cannot be read from the archive") from None
    except (ValueError, RecursionError):
        raise _bad(f"{name} is not JSON") from None


async def request_import(rt: Runtime, bank_id: str, source: IO[bytes], name: str, on_conflict: OnConflict) -> str:
    """Check the archive, keep it as a file of the bank with its import operation, and queue the
    operation; returns its id. A file that is not such an archive is refused here, before it is
    kept."""
    if on_conflict not in ("skip", "replace", "new-id"):
        raise InvalidArgument("on_conflict: must be skip, replace or new-id", "on_conflict")
    await rt.cpu_slots.run(open_archive, source)
    source.seek(0)
    key = file_key(bank_id, "imports", "transfer.zip")
    async with rt.pool.acquire() as conn, conn.transaction():
        await ensure_bank(conn, bank_id)
        op_id = await ops.enqueue_operation(
            conn, bank_id, IMPORT, {"key": key, "on_conflict": on_conflict, "name": name[:200]},
            max_attempts=rt.settings.operation_max_attempts,
        )  # fmt: skip
        await store_file(
            conn,
            bank_id,
            key,
            source,
            name=name[:200] or "transfer.zip",
            media_type="application/zip",
            operation_id=op_id,
        )
    rt.queue.poke()
    return str(op_id)


def _derived(bank_id: str, *parts: object) -> uuid.UUID:
    return uuid.uuid5(ID_NAMESPACE, "/".join([bank_id, *map(str, parts)]))


@dataclass
class _Prepared:
    """A document's units as retain would store them, ready for its transaction."""

    raw: list[Unit]
    facts: list[Unit]
    links: list[tuple[uuid.UUID, uuid.UUID]]  # (fact, raw unit of its chunk)
    skipped: int
    causal: int


def _units(bank_id: str, doc: ArchiveDocument, doc_id: str, unit_chars: int) -> _Prepared:
    """The document's raw units (its chunks, split to this server's unit size) and facts as retain
    would store them: ids derived from where they stand, entities found in their text (and a
    fact's named ones), each fact linked to the units of its chunk."""
    source = f"doc:{doc_id}"
    budget = Budget(sum(len(c.chunk_text) for c in doc.chunks) + sum(len(f.text) for f in doc.facts))
    first_fact = next((f for f in doc.facts), None)
    context = first_fact.context if first_fact and first_fact.context else "general"
    when = (first_fact.mentioned_at or first_fact.event_date) if first_fact else None
    raw: list[Unit] = []
    by_chunk: dict[int, list[Unit]] = {}
    for chunk in sorted(doc.chunks, key=lambda c: c.chunk_index):
        item = RetainItem.model_construct(
            content=chunk.chunk_text, context=context, timestamp=when or "unset", tags=doc.tags, metadata={},
            document_id=doc_id, entities=None, supersedes=None,
        )  # fmt: skip
        for n, piece in enumerate(split_units(chunk.chunk_text, unit_chars) if chunk.chunk_text.strip() else []):
            unit = Unit(
                id=_derived(bank_id, doc_id, "chunk", chunk.chunk_index, n), text=piece, kind=memory_type(piece),
                item=item, source_id=source, position=len(raw), occurred=None, entities=extract_entities(piece, budget),
            )  # fmt: skip
            raw.append(unit)
            by_chunk.setdefault(chunk.chunk_index, []).append(unit)
    facts: list[Unit] = []
    links: list[tuple[uuid.UUID, uuid.UUID]] = []
    skipped = causal = 0
    for i, f in enumerate(doc.facts):
        causal += len(f.causal_relations)
        if f.fact_type not in KEPT_TYPES:
            skipped += 1
            continue
        said = f.mentioned_at or f.event_date
        item = RetainItem.model_construct(
            content=f.text, context=f.context or "general", timestamp=said or "unset", tags=f.tags, metadata=f.metadata,
            document_id=doc_id, entities=None, supersedes=None,
        )  # fmt: skip
        start, end = f.occurred_start, f.occurred_end
        if start is not None and (end is None or end < start):
            end = start
        chunk_units = by_chunk.get(f.chunk_index, []) if f.chunk_index is not None else []
        fact = Unit(
            id=_derived(bank_id, doc_id, "fact", i), text=f.text, kind=f.fact_type, item=item,
            source_id=source, position=chunk_units[0].position if chunk_units else 0,
            occurred=(start, end) if start is not None and end is not None else None,
            entities=merge_entities([(n, "name") for n in f.entities if n.strip()], extract_entities(f.text, budget)),
        )  # fmt: skip
        facts.append(fact)
        links += [(fact.id, u.id) for u in chunk_units]
    return _Prepared(raw=raw, facts=facts, links=links, skipped=skipped, causal=causal)


@dataclass
class _Placed:
    """A document of the archive and where it goes here: its id, and whether that id is taken."""

    doc: ArchiveDocument
    doc_id: str
    taken: bool


async def _place(
    rt: Runtime, job: Job, doc: ArchiveDocument, policy: OnConflict, out: ArchiveImported
) -> _Placed | None:
    """The document's id here under `policy`, or None when it is skipped (counted in `out`)."""
    bank_id, doc_id = job.bank_id, doc.id
    async with rt.pool.acquire() as conn:
        taken = bool(await conn.fetchval(Q.archive_document_taken, bank_id, doc_id))
        if taken and policy == "new-id":
            doc_id = f"{doc.id[:200]}-{hashlib.sha256(f'{job.id}/{doc.id}'.encode()).hexdigest()[:12]}"
            out.remapped_document_ids[doc.id] = doc_id
            taken = bool(await conn.fetchval(Q.archive_document_taken, bank_id, doc_id))  # a retried import's own
    if taken and policy != "replace":
        out.documents_skipped += 1
        if len(out.skipped_document_ids) < 1000:
            out.skipped_document_ids.append(doc.id)
        return None
    return _Placed(doc, doc_id, taken)


async def _import_documents(rt: Runtime, job: Job, placed: list[_Placed], out: ArchiveImported) -> None:
    """Documents prepared and embedded together (the model's work is cheaper a batch at a time),
    then each stored in its own transaction under the bank's write lock."""
    bank_id, unit_chars = job.bank_id, rt.settings.unit_max_chars

    def prepare() -> list[_Prepared]:
        return [_units(bank_id, p.doc, p.doc_id, unit_chars) for p in placed]

    prepared = await rt.cpu_slots.run(prepare)
    texts = [u.text for pr in prepared for u in pr.raw + pr.facts]
    vectors: Any = await rt.cpu_slots.run(rt.embedder.embed, texts) if texts else []
    at = 0
    for p, pr in zip(placed, prepared):
        units = pr.raw + pr.facts
        own, at = vectors[at : at + len(units)], at + len(units)
        doc = p.doc
        text = doc.original_text if doc.original_text is not None else "\n\n".join(c.chunk_text for c in doc.chunks)
        async with rt.writes.open(bank_id) as conn:
            if p.taken:
                await delete_sources(conn, bank_id, [p.doc_id])
            digest = hashlib.sha256(text.encode()).hexdigest()
            await conn.execute(Q.source_add, bank_id, p.doc_id, text, digest, sorted(set(doc.tags)), "{}")
            if units:
                await store_units(conn, bank_id, units, own)
            if pr.links:
                await conn.execute(Q.fact_sources_link, [a for a, _ in pr.links], [b for _, b in pr.links], bank_id)
                await conn.execute(Q.raw_units_supersede, bank_id, sorted({b for _, b in pr.links}))
        out.documents_imported += 1
        out.chunks_imported += len(doc.chunks)
        out.facts_imported += len(pr.facts)
        out.facts_skipped += pr.skipped
        out.causal_links_skipped += pr.causal


async def run_import(rt: Runtime, job: Job) -> dict:
    """Read the staged archive document by document, each stored on its own (see the module
    docstring); the staged file goes once the import has finished."""
    key = job.payload["key"]
    policy: OnConflict = job.payload.get("on_conflict", "skip")
    out = ArchiveImported()
    async with rt.pool.acquire() as conn:
        head = await conn.fetchrow(Q.bank_file_head, job.bank_id, key)
    if head is None:
        raise ops.Cancelled("its archive is gone (the bank or the file was deleted)")
    f = BankFile(
        bank_id=job.bank_id,
        key=key,
        name=head["name"],
        media_type=head["media_type"],
        size=head["size"],
        parts=head["parts"],
    )
    with tempfile.TemporaryFile() as spool:
        await copy_file(rt, f, spool)
        zf, manifest, names = await rt.cpu_slots.run(open_archive, spool)
        if manifest.archive_type != "documents":
            out.not_imported.append(
                f"a whole-bank archive's bank settings, {manifest.mental_model_count} mental models and "
                f"{manifest.directive_count} directives: this import reads its documents only (hindsight migrate "
                "brings the rest)"
            )
        if "observations.json" in {i.filename for i in zf.infolist()}:
            observations = _read_json(zf, "observations.json")
            out.observations_skipped = len(observations) if isinstance(observations, list) else 0
        group: list[_Placed] = []
        size = 0
        for i, n in enumerate(names):
            try:
                doc = ArchiveDocument.model_validate(_read_json(zf, n))
            except ValidationError as exc:
                err = exc.errors()[0]
                where = ".".join(str(x) for x in err["loc"])
                raise _bad(f"{n}: {where}: {err['msg']}") from None
            if (placed := await _place(rt, job, doc, policy, out)) is not None:
                group.append(placed)
                size += sum(len(c.chunk_text) for c in doc.chunks) + sum(len(f.text) for f in doc.facts)
            if group and (len(group) >= GROUP_DOCUMENTS or size >= GROUP_CHARS or i == len(names) - 1):
                await _import_documents(rt, job, group, out)
                group, size = [], 0
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.bank_file_delete, job.bank_id, key)
    return out.model_dump()
