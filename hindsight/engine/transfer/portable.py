"""Bank export and import: one portable, gzip-compressed JSON Lines file.

Why this format: it streams both ways (a bank of any size exports with flat memory, from one
REPEATABLE READ snapshot), it is readable with `zcat | jq`, and rows travel as PostgreSQL's own
`to_jsonb` / `jsonb_populate_recordset` forms, so every column (vectors included, as text) keeps
its exact value without a hand-written codec per type.

Layout: a `header` line (format, version, bank settings, embedding model and dimension), then
`entity`, `memory`, `memory_entity`, `fact_source`, `memory_document` (version 2: the text
retained under a document_id), `document`, `chunk`, `mental_model`, `mental_model_version`,
`memory_version` (version 3: a memory's recorded changes) lines, then an `end` line with the
count of each kind. Version 1 and 2 files still import. A memory's `superseded_by` names a
memory of the file: it is linked once every memory is placed, to that memory's id here, or left
empty when the file does not hold it (never to another bank's memory). A file without its
`end` line, or whose counts differ, is truncated: the import fails and changes nothing (it runs in
one transaction).

Import rules (documented in docs/rest.md, "Export and import"):
- the same object (its id already in the target bank) is skipped, so re-importing a file is a
  no-op;
- an id taken in *another* bank gets a new id derived from (bank, old id), deterministically;
- a different object under a taken name (a document's source name, a mental model's id, the
  document_id grouping memories) follows `on_conflict`: `rename` (default; the imported one gets
  the suffix " (imported <UTC time>)", or "-imported-<time>" for model ids), `skip` (keep the
  existing one), or `replace` (delete the existing one first);
- a new bank takes the exported name, mission and disposition; an existing bank keeps its own;
- when the file's embedding model or dimension differs from this server's, every memory, chunk
  and mental model is re-embedded with this server's model.
"""

from __future__ import annotations

import gzip
import json
import re
import uuid
import zlib
from collections import Counter
from collections.abc import AsyncIterator
from datetime import UTC, datetime
from itertools import islice
from typing import IO, TYPE_CHECKING, Any, Literal

import asyncpg
from pydantic import BaseModel, Field, ValidationError

from hindsight.db.sql import Q, fill
from hindsight.embedding import vector_literal
from hindsight.engine.banks.registry import bank_config, ensure_bank
from hindsight.engine.banks.schemas import BankUpdate
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.memory.sources import delete_sources
from hindsight.engine.memory.vectors import memory_vectors
from hindsight.engine.rules.fields import METADATA_BYTES
from hindsight.engine.rules.text import instant_problem, problem

if TYPE_CHECKING:
    from hindsight.engine.cpu_slots import CpuSlots
    from hindsight.engine.runtime import Runtime


FORMAT = "hindsight-bank"
VERSION = 3
OnConflict = Literal["rename", "skip", "replace"]
BATCH = 500
# The highest version number a file may bring for a memory's history (each change adds one).
MAX_VERSION = 1_000_000
ID_NAMESPACE = uuid.UUID("5d1c0c6e-8a7f-4c3e-9b2a-1f0e3d2c4b5a")
# Columns computed from other rows (migration 012): an import leaves them NULL, read through the links.
DERIVED = {"memories": {"entity_names"}}

# kind -> SQL yielding one JSON text per row, in an order that puts referenced rows first.
EXPORTS = [
    ("entity", Q.export_entities),
    ("memory", Q.export_memories),
    ("memory_entity", Q.export_memory_entities),
    ("fact_source", Q.export_fact_sources),
    ("memory_document", Q.export_memory_documents),
    ("document", Q.export_documents),
    ("chunk", Q.export_chunks),
    ("mental_model", Q.export_mental_models),
    ("mental_model_version", Q.export_mental_model_versions),
    ("memory_version", Q.export_memory_versions),
]
KINDS = [k for k, _ in EXPORTS]


class ImportResult(BaseModel):
    bank_id: str
    created_bank: bool
    re_embedded: bool = Field(description="True when the file's embedding model differs from this server's.")
    source_model: str | None = None
    imported: dict[str, int]
    skipped: dict[str, int] = Field(description="Same objects already present, or conflicts with on_conflict=skip.")
    renamed: dict[str, int]
    replaced: dict[str, int]


async def export_bank(rt: Runtime, bank_id: str) -> AsyncIterator[bytes]:
    """Gzip bytes of the bank's archive, produced row by row from one consistent snapshot."""
    gz = zlib.compressobj(6, zlib.DEFLATED, 31)
    counts: Counter = Counter()
    async with rt.gates.export(bank_id), rt.pool.acquire() as conn:
        async with conn.transaction(isolation="repeatable_read", readonly=True):
            bank = await conn.fetchval(Q.export_bank, bank_id)
            header = {
                "kind": "header",
                "format": FORMAT,
                "version": VERSION,
                "bank_id": bank_id,
                "bank": json.loads(bank),
                "exported_at": datetime.now(UTC).isoformat(),
                "embedding": {"model": rt.embedder.name, "dim": rt.embedder.dim},
            }
            yield gz.compress((json.dumps(header) + "\n").encode())
            for kind, sql in EXPORTS:
                buf: list[str] = []
                async for (row,) in conn.cursor(sql, bank_id, prefetch=BATCH):
                    buf.append(f'{{"kind":"{kind}","row":{row}}}\n')
                    counts[kind] += 1
                    if len(buf) >= BATCH:
                        yield gz.compress("".join(buf).encode())
                        buf = []
                if buf:
                    yield gz.compress("".join(buf).encode())
    end = {"kind": "end", "counts": {k: counts[k] for k in KINDS}}
    yield gz.compress((json.dumps(end) + "\n").encode()) + gz.flush()


def _zero_vector(value: Any) -> bool:
    """Whether an exported vector (pgvector's text form) is all zeros. Such a vector has no
    direction: its cosine distance to every query is NaN, so it can't be ranked, and a result's
    relevance would be NaN. pgvector stores it (and refuses NaN and infinities itself); retain never
    makes one. Stops at the first non-zero component, so a real vector costs one float()."""
    if not isinstance(value, str):
        return False
    try:
        return all(float(x) == 0 for x in value.strip().strip("[]").split(","))
    except ValueError:
        return False  # not a vector at all: PostgreSQL's own error names it


def _bad(msg: str) -> InvalidArgument:
    return InvalidArgument(f"archive: {msg}", "archive")


# A row's times besides the `..._at` columns. PostgreSQL holds times Python cannot (before year 1,
# after 9999, BC): one such memory made every recall and listing of its bank fail.
_TIMES = frozenset({"at", "occurred_start", "occurred_end", "valid_from", "valid_to"})


def _time_problem(value: str) -> str | None:
    try:
        return instant_problem(datetime.fromisoformat(value))
    except ValueError:
        return "is not an ISO 8601 time between 0001-01-02 and 9999-12-30"


def _bank_profile(header: dict) -> BankUpdate:
    """The header's bank settings, held to the rules the API applies to them (a chunk size of -5
    taken as it came made the next document import loop forever)."""
    b = header.get("bank") or {}
    config = (b.get("config") or {}) if isinstance(b, dict) else None
    if not isinstance(b, dict) or not isinstance(config, dict):
        raise _bad("header: bank and its config must be objects")
    try:
        return BankUpdate.model_validate(
            {
                "name": b.get("name"),
                "mission": b.get("mission"),
                "disposition": b.get("disposition") or None,
                "document_chunk_size": config.get("document_chunk_size"),
                "client_settings": config.get("client_settings"),
            }
        )
    except ValidationError as exc:
        err = exc.errors()[0]
        where = ".".join(str(x) for x in err["loc"])
        raise _bad(f"header: bank {where}: {err['msg']}") from None


class _Reader:
    """Lines of the gzip file, read a batch at a time on a CPU slot (engine/cpu_slots.py): inflating,
    parsing and checking a batch is a core's work, which an import of a large file kept up beside
    the embedding and document reading the slots bound."""

    def __init__(self, fileobj: IO[bytes], slots: CpuSlots):
        self.f = gzip.open(fileobj, "rt", encoding="utf-8")
        self.slots = slots
        self.line_no = 0

    def _next(self, n: int) -> list[dict]:
        out = []
        try:
            for line in islice(self.f, n):
                self.line_no += 1
                if line.strip():
                    out.append(self._checked(json.loads(line)))
        except (OSError, EOFError, zlib.error) as exc:
            raise _bad(f"not a readable gzip file ({exc})") from None
        except RecursionError:
            raise _bad(f"line {self.line_no} is nested too deeply") from None
        except ValueError:
            raise _bad(f"line {self.line_no} is not JSON") from None
        return out

    def _checked(self, line: Any) -> Any:
        """A line whose values could be stored and answered back: free JSON (metadata) nested
        about as deep as clients may send it (strict.MAX_DEPTH), no NUL or unpaired surrogate.
        A memory with metadata nested ~200 levels deep made every recall and listing of its bank
        fail. One line is `{"kind": ..., "row": {field: value}}`, and a history row holds a
        field's before and after two levels further down (`changes: {field: [before, after]}`),
        hence four levels of slack."""
        if p := problem(line, depth=-4):
            raise _bad(f"line {self.line_no}: {p[:200]}")
        row = line.get("row") if isinstance(line, dict) else None
        meta = row.get("metadata", {}) if isinstance(row, dict) else {}
        if not isinstance(meta, dict) or len(json.dumps(meta)) > METADATA_BYTES:
            raise _bad(f"line {self.line_no}: metadata must be an object of at most 16 KiB, as clients send it")
        for field, value in row.items() if isinstance(row, dict) else ():
            if isinstance(value, str) and (field in _TIMES or field.endswith("_at")) and (p := _time_problem(value)):
                raise _bad(f"line {self.line_no}: {field} {p}")
        if isinstance(row, dict) and _zero_vector(row.get("embedding")):
            raise _bad(f"line {self.line_no}: embedding is all zeros, which no similarity can rank")
        return line

    async def batch(self, n: int = BATCH) -> list[dict]:
        return await self.slots.run(self._next, n)


class _Importer:
    def __init__(self, rt: Runtime, conn, bank_id: str, on_conflict: OnConflict, header: dict):
        self.rt, self.conn, self.bank_id, self.policy = rt, conn, bank_id, on_conflict
        emb = header.get("embedding") or {}
        self.source_model = emb.get("model")
        self.re_embed = emb.get("model") != rt.embedder.name or emb.get("dim") != rt.embedder.dim
        stamp = datetime.now(UTC)
        self.suffix = f" (imported {stamp:%Y-%m-%d %H:%M:%S} UTC)"
        self.id_suffix = f"-imported-{stamp:%Y%m%d%H%M%S}"
        self.ids: dict[str, dict] = {k: {} for k in ("entity", "memory", "document", "mental_model")}
        self.imported: Counter[str] = Counter()
        self.skipped: Counter[str] = Counter()
        self.renamed: Counter[str] = Counter()
        self.replaced: Counter[str] = Counter()
        self.seen: Counter = Counter()
        self.columns: dict[str, list[str]] = {}
        self.memory_docs: set[str] = set()
        self.doc_renames: dict[str, str | None] = {}
        self.successors: list[tuple[str, str]] = []  # (memory here, its successor's id in the file)

    async def prepare(self) -> None:
        self.memory_docs = {r[0] for r in await self.conn.fetch(Q.import_memory_document_ids, self.bank_id)}

    async def _columns(self, table: str, row: dict) -> list[str]:
        """Insertable columns of `table` present in the file (names from the catalogue, never
        from the file, so they are safe to quote into SQL); newer columns take their defaults.
        Derived columns are never taken from a file: a memory's entity names follow its links."""
        if table not in self.columns:
            derived = DERIVED.get(table, set())
            rows = await self.conn.fetch(Q.import_columns, table)
            self.columns[table] = [r[0] for r in rows if r[0] not in derived]
        return [c for c in self.columns[table] if c in row]

    async def _insert(self, table: str, rows: list[dict], conflict: str = "") -> None:
        if not rows:
            return
        cols = await self._columns(table, rows[0])
        names = ", ".join(f'"{c}"' for c in cols)
        sql = fill(Q.import_rows, table=table, columns=names, conflict=conflict)
        await self.conn.execute(sql, self.bank_id, json.dumps(rows))

    def _remember(self, kind: str, olds: list[str], rows: list[dict], inserted: list[dict]) -> None:
        """Map the file's ids of the inserted rows to their ids here (rows may have been renumbered)."""
        kept = {id(r) for r in inserted}
        for old, r in zip(olds, rows):
            if id(r) in kept:
                self.ids[kind][old] = r["id"]
        self.imported[kind] += len(inserted)

    def _new_id(self, old: str) -> str:
        return str(uuid.uuid5(ID_NAMESPACE, f"{self.bank_id}/{old}"))

    async def _place(self, table: str, rows: list[dict]) -> tuple[list[dict], dict[str, str]]:
        """Split rows into new ones (ids renumbered where another bank holds them) and those
        already here, as file id -> the id they have in this bank: their own, or the one an
        earlier import of the same file gave them. Never another bank's id: a file naming a
        memory of another bank must not reach it (its links would be written to that memory)."""
        derived = {r["id"]: self._new_id(r["id"]) for r in rows}
        found = {
            str(r["id"]): r["bank_id"]
            for r in await self.conn.fetch(fill(Q.import_ids_taken, table=table), [*derived, *derived.values()])
        }
        here: dict[str, str] = {}
        fresh = []
        for r in rows:
            old, new = r["id"], derived[r["id"]]
            if found.get(old) == self.bank_id:
                here[old] = old
                continue
            if old in found and found.get(new) == self.bank_id:
                here[old] = new
                continue
            if old in found:
                r["id"] = new
            fresh.append(r)
        return fresh, here

    async def _vectors(self, texts: list[str], query: bool = False, memories: bool = False) -> list[str]:
        def run():
            if query:
                return [self.rt.embedder.embed_query(t) for t in texts]
            if memories:  # as retain stores them
                return memory_vectors(self.rt.embedder, texts)
            return self.rt.embedder.embed(texts)

        vecs = await self.rt.cpu_slots.run(run)
        return [vector_literal(v) for v in vecs]

    # ---- one handler per kind -----------------------------------------------------------
    async def entity(self, rows: list[dict]) -> None:
        got = await self.conn.fetch(Q.import_entities, self.bank_id, json.dumps(rows))
        new = {r["canonical"]: r["id"] for r in got}
        for r in rows:
            self.ids["entity"][r["id"]] = new[r["canonical"]]
        self.imported["entity"] += len(rows)

    async def memory(self, rows: list[dict]) -> None:
        olds = [r["id"] for r in rows]
        fresh, here = await self._place("memories", rows)
        self.ids["memory"].update(here)
        self.skipped["memory"] += len(here)
        keep = []
        for r in fresh:
            doc = r.get("document_id")
            if doc is not None and doc in self.memory_docs:
                target = await self._memory_doc_conflict(doc)
                if target is None:
                    self.skipped["memory"] += 1
                    continue
                if target != doc:
                    r["document_id"], r["source_id"] = target, f"{r['source_id']}{self.id_suffix}"
            keep.append(r)
        for r in keep:  # linked in finish(), once the successor has its id here
            if successor := r.pop("superseded_by", None):
                self.successors.append((r["id"], str(successor)))
        if self.re_embed and keep:
            for r, v in zip(keep, await self._vectors([r["text"] for r in keep], memories=True)):
                r["embedding"] = v
        await self._insert("memories", keep)
        self._remember("memory", olds, rows, keep)

    async def _memory_doc_conflict(self, doc: str) -> str | None:
        """What a memory document_id already used in this bank becomes (None: skip its units)."""
        if doc not in self.doc_renames:
            if self.policy == "skip":
                self.doc_renames[doc] = None
            elif self.policy == "replace":
                await delete_sources(self.conn, self.bank_id, [doc])
                self.replaced["memory_document"] += 1
                self.doc_renames[doc] = doc
            else:
                self.doc_renames[doc] = (doc + self.suffix)[-256:]
                self.renamed["memory_document"] += 1
        return self.doc_renames[doc]

    async def memory_entity(self, rows: list[dict]) -> None:
        pairs = [(self.ids["entity"].get(r["entity_id"]), self.ids["memory"].get(r["memory_id"])) for r in rows]
        pairs = [p for p in pairs if None not in p]
        if pairs:
            await self.conn.execute(Q.memory_entities_link, [p[0] for p in pairs], [p[1] for p in pairs], self.bank_id)
            await self.conn.execute(Q.import_entity_names_clear, self.bank_id, list({p[1] for p in pairs}))

    async def fact_source(self, rows: list[dict]) -> None:
        pairs = [(self.ids["memory"].get(r["fact_id"]), self.ids["memory"].get(r["raw_id"])) for r in rows]
        pairs = [p for p in pairs if None not in p]
        if pairs:
            await self.conn.execute(Q.fact_sources_link, [p[0] for p in pairs], [p[1] for p in pairs], self.bank_id)

    async def memory_document(self, rows: list[dict]) -> None:
        """A retained document's text follows its memories: renamed, skipped or replaced as they were."""
        keep = []
        for r in rows:
            target = self.doc_renames.get(r["id"], r["id"])
            if target is None:
                self.skipped["memory_document"] += 1
                continue
            r["id"] = target
            keep.append(r)
        await self._insert("memory_documents", keep, "ON CONFLICT (bank_id, id) DO NOTHING")
        self.imported["memory_document"] += len(keep)

    async def document(self, rows: list[dict]) -> None:
        olds = [r["id"] for r in rows]
        fresh, here = await self._place("documents", rows)
        self.skipped["document"] += len(here)
        existing = {
            r["source_name"]: r["id"]
            for r in await self.conn.fetch(Q.import_documents_named, self.bank_id, [r["source_name"] for r in fresh])
        }
        keep = []
        for r in fresh:
            if r["source_name"] in existing:
                if self.policy == "skip":
                    self.skipped["document"] += 1
                    continue
                if self.policy == "replace":
                    await self.conn.execute(Q.import_document_replace, self.bank_id, existing[r["source_name"]])
                    self.replaced["document"] += 1
                else:
                    r["source_name"] += self.suffix
                    self.renamed["document"] += 1
            keep.append(r)
        await self._insert("documents", keep)
        self._remember("document", olds, rows, keep)

    async def chunk(self, rows: list[dict]) -> None:
        rows = [r for r in rows if r["document_id"] in self.ids["document"]]
        for r in rows:
            r["document_id"] = self.ids["document"][r["document_id"]]
        if not rows:
            return
        fresh, _ = await self._place("chunks", rows)
        if self.re_embed and fresh:
            texts = [f"{r.get('headline') or ''}\n{r['text']}" for r in fresh]
            for r, v in zip(fresh, await self._vectors(texts)):
                r["embedding"] = v
        await self._insert("chunks", fresh)
        self.imported["chunk"] += len(fresh)

    async def mental_model(self, rows: list[dict]) -> None:
        existing = {
            r["id"]: r["source_query"]
            for r in await self.conn.fetch(Q.import_mental_models_named, self.bank_id, [r["id"] for r in rows])
        }
        keep = []
        for r in rows:
            old = r["id"]
            if old in existing:
                if existing[old] == r["source_query"] or self.policy == "skip":
                    self.skipped["mental_model"] += 1
                    continue
                if self.policy == "replace":
                    await self.conn.execute(Q.import_mental_model_replace, self.bank_id, old)
                    self.replaced["mental_model"] += 1
                else:
                    r["id"] = re.sub(r"-+$", "", old[: 64 - len(self.id_suffix)]) + self.id_suffix
                    self.renamed["mental_model"] += 1
            self.ids["mental_model"][old] = r["id"]
            keep.append(r)
        if self.re_embed:
            with_vec = [r for r in keep if r.get("embedding") is not None]
            for r, v in zip(with_vec, await self._vectors([r["source_query"] for r in with_vec], query=True)):
                r["embedding"] = v
        await self._insert("mental_models", keep)
        self.imported["mental_model"] += len(keep)

    async def _versions(self, table: str, of: str, key: str, rows: list[dict]) -> int:
        """Insert the version rows whose object (`key`, a file id of kind `of`) was placed here,
        under its id here; returns how many."""
        keep = []
        for r in rows:
            if r[key] in self.ids[of]:
                r[key] = self.ids[of][r[key]]
                keep.append(r)
        await self._insert(table, keep, "ON CONFLICT DO NOTHING")
        return len(keep)

    async def memory_version(self, rows: list[dict]) -> None:
        for r in rows:  # history a hand-edited file brings must read back, and leave room for more
            version, changes = r.get("version"), r.get("changes")
            if not isinstance(version, int) or isinstance(version, bool) or not 1 <= version <= MAX_VERSION:
                raise ValueError(f"version must be 1-{MAX_VERSION}")
            if not isinstance(changes, dict) or any(not isinstance(v, list) or len(v) != 2 for v in changes.values()):
                raise ValueError("changes must map each field to [before, after]")
            if not isinstance(r.get("actor"), str) or not 1 <= len(r["actor"]) <= 200:
                raise ValueError("actor must be 1-200 characters")
            if r.get("reason") is not None and (not isinstance(r["reason"], str) or len(r["reason"]) > 1_000):
                raise ValueError("reason must be at most 1,000 characters")
        self.imported["memory_version"] += await self._versions("memory_versions", "memory", "memory_id", rows)

    async def finish(self) -> None:
        """Link superseded memories to their successors, both this bank's."""
        pairs = [(m, self.ids["memory"][s]) for m, s in self.successors if s in self.ids["memory"]]
        if pairs:
            await self.conn.execute(Q.import_successors, self.bank_id, [m for m, _ in pairs], [s for _, s in pairs])

    async def mental_model_version(self, rows: list[dict]) -> None:
        await self._versions("mental_model_versions", "mental_model", "model_id", rows)


async def import_bank(
    rt: Runtime, bank_id: str, fileobj: IO[bytes], on_conflict: OnConflict = "rename"
) -> ImportResult:
    reader = _Reader(fileobj, rt.cpu_slots)
    first = await reader.batch(1)
    if (
        not first
        or not isinstance(first[0], dict)
        or first[0].get("kind") != "header"
        or first[0].get("format") != FORMAT
    ):
        raise _bad("not a Hindsight bank export (no header line)")
    header = first[0]
    if not isinstance(header.get("version"), int) or header["version"] > VERSION:
        raise _bad(f"format version {header.get('version')!r} is newer than this server reads ({VERSION})")
    if not isinstance(header.get("embedding") or {}, dict):
        raise _bad("header: embedding must be an object")
    profile = _bank_profile(header)
    end = None
    async with rt.writes.open(bank_id) as conn:
        created = await conn.fetchval(Q.import_bank_is_new, bank_id)
        await ensure_bank(conn, bank_id)
        if created:
            config = bank_config(profile.document_chunk_size, profile.client_settings)
            await conn.execute(
                Q.import_bank_profile,
                bank_id,
                profile.name,
                profile.mission,
                json.dumps(profile.disposition) if profile.disposition else None,
                json.dumps(config) if config else None,
            )
        imp = _Importer(rt, conn, bank_id, on_conflict, header)
        await imp.prepare()
        while True:
            lines = await reader.batch()
            if not lines:
                break
            groups: list[tuple[str, list[dict]]] = []
            for rec in lines:
                kind = rec.get("kind") if isinstance(rec, dict) else None
                if end is not None:
                    raise _bad("data after the end line")
                if kind == "end":
                    end = rec
                    continue
                if kind not in KINDS or not isinstance(rec.get("row"), dict):
                    raise _bad(f"line {reader.line_no}: unknown record kind {kind!r}")
                imp.seen[kind] += 1
                if groups and groups[-1][0] == kind:
                    groups[-1][1].append(rec["row"])
                else:
                    groups.append((kind, [rec["row"]]))
            for kind, rows in groups:
                try:
                    await getattr(imp, kind)(rows)
                except (
                    asyncpg.PostgresError,
                    asyncpg.DataError,
                    KeyError,
                    TypeError,
                    ValueError,
                    AttributeError,
                ) as exc:
                    # a hand-edited or damaged file: say where, roll everything back
                    detail = f"missing field {exc}" if isinstance(exc, KeyError) else str(exc).splitlines()[0]
                    raise _bad(f"invalid {kind} record before line {reader.line_no}: {detail}") from None
        if end is None:
            raise _bad("truncated (no end line); nothing was imported")
        await imp.finish()
        counts = end.get("counts") or {}
        if not isinstance(counts, dict) or not all(isinstance(v, int) for v in counts.values()):
            raise _bad("the end line's counts must be an object of whole numbers")
        expected = dict(counts)
        if any(expected.get(k, 0) != imp.seen[k] for k in KINDS):
            raise _bad(f"counts differ from the end line ({dict(imp.seen)} vs {expected}); nothing was imported")
    return ImportResult(
        bank_id=bank_id,
        created_bank=bool(created),
        re_embedded=imp.re_embed,
        source_model=imp.source_model,
        imported=dict(imp.imported),
        skipped=dict(imp.skipped),
        renamed=dict(imp.renamed),
        replaced=dict(imp.replaced),
    )
