"""Document imports (files and URLs) as operations, and listing / deleting documents.

An import call stores the uploaded bytes and queues one `document_import` operation in one
transaction, then returns its id (or waits for it). The operation reads, chunks and embeds each
file in turn, recording progress; a file that fails is reported in the result without failing the
others. A document is identified by its source name within the bank: unchanged content (same hash
and chunk size) is a no-op, changed content or a new chunk size replaces its chunks.
"""

from __future__ import annotations

import hashlib
import json
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Annotated, Literal
from urllib.parse import urlparse

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, field_validator

from hindsight.db.sql import Q
from hindsight.engine.banks.registry import ensure_bank
from hindsight.engine.errors import InvalidArgument, NotFound, parse_uuid
from hindsight.engine.queue import operations as ops
from hindsight.engine.rules.fields import Offset, clean_tags, confirmation
from hindsight.engine.rules.text import Strict
from hindsight.files.chunking import chunk_blocks
from hindsight.files.fetch import fetch
from hindsight.files.readers import UnreadableFile, detect_type, read

if TYPE_CHECKING:
    from hindsight.engine.queue.operations import Job
    from hindsight.engine.runtime import Runtime


IMPORT = "document_import"
MAX_USERS = 256


def http_url(u: str) -> str:
    """An import fetches http(s) URLs only (which hosts it may reach is checked when fetching)."""
    p = urlparse(u)
    if p.scheme not in ("http", "https") or not p.hostname:
        raise ValueError(f"{u!r} is not an http(s) URL")
    return u


class FileIn(Strict):
    model_config = ConfigDict(extra="forbid")

    name: str = Field(min_length=1, max_length=512, description="File name; its extension gives the type.")
    content_base64: str | None = Field(None, description="The file's bytes, base64-encoded.")
    text: str | None = Field(None, description="Plain text instead of bytes.")
    type: str | None = Field(None, description="txt, md, html, pdf or docx when the name has no extension.")


class ImportRequest(Strict):
    model_config = ConfigDict(extra="forbid")

    files: list[FileIn] = Field(default_factory=list)
    urls: list[str] = Field(default_factory=list, description="Public http(s) URLs to fetch and import.")
    tags: list[str] = Field(
        default_factory=list, description="Access tags: callers need one in common (x-session-tags)."
    )
    allowed_users: list[str] = Field(
        default_factory=list, max_length=MAX_USERS, description="User ids (x-user-id) that may always see it."
    )
    chunk_size: int | None = Field(
        None,
        ge=200,
        le=20_000,
        description="Characters per chunk; default: the bank's document_chunk_size, else the server's.",
    )

    _tags = field_validator("tags", mode="before")(clean_tags)

    @field_validator("urls")
    @classmethod
    def _http_urls(cls, urls: list[str]) -> list[str]:
        return [http_url(u) for u in urls]


class ImportDocumentsRequest(ImportRequest):
    """import_documents' arguments: an import, and whether to wait for it."""

    wait: bool = Field(False, description="Return when the import is done, with each file's outcome.")


class DocumentListQuery(Strict):
    model_config = ConfigDict(extra="forbid")

    limit: int = Field(100, ge=1, le=1000, description="At most this many documents (1-1,000), by name.")
    offset: int = Offset


def _document_uuid(v: str) -> str:
    try:
        uuid.UUID(v)
    except ValueError:
        raise ValueError(f"{v!r} is not a document id (a UUID)") from None
    return v


DocumentUuid = Annotated[str, AfterValidator(_document_uuid)]


class DocumentRef(Strict):
    model_config = ConfigDict(extra="forbid")

    doc_id: DocumentUuid = Field(description="The document's id, as list_documents or import_documents returned it.")


class DocumentDelete(DocumentRef):
    confirm: confirmation("a document") = False  # type: ignore[valid-type]


class DocumentDeleted(BaseModel):
    deleted: bool
    document_id: str
    bank_id: str = Field(description="The bank (collection) the document was in.")


class Document(BaseModel):
    document_id: str
    bank_id: str
    source_name: str
    source_type: str
    source_url: str | None
    content_hash: str
    size_bytes: int
    tags: list[str]
    allowed_users: list[str]
    chunk_size: int
    chunk_count: int
    page_count: int | None
    created_at: datetime
    updated_at: datetime


class DocumentList(BaseModel):
    documents: list[Document]
    count: int = Field(description="Documents in this page.")


class ImportAccepted(BaseModel):
    operation_id: str
    status: str
    files: int
    urls: int
    result: dict | None = None


class FileOutcome(BaseModel):
    name: str
    status: Literal["imported", "replaced", "unchanged", "failed"]
    document_id: str | None = None
    chunks: int = 0
    pages: int | None = None
    error: str | None = None


def to_document(r) -> Document:
    return Document(
        document_id=str(r["id"]),
        bank_id=r["bank_id"],
        source_name=r["source_name"],
        source_type=r["source_type"],
        source_url=r["source_url"],
        content_hash=r["content_hash"],
        size_bytes=r["size_bytes"],
        tags=list(r["tags"]),
        allowed_users=list(r["allowed_users"]),
        chunk_size=r["chunk_size"],
        chunk_count=r["chunk_count"],
        page_count=r["page_count"],
        created_at=r["created_at"],
        updated_at=r["updated_at"],
    )


def _decode_files(req: ImportRequest, max_bytes: int) -> list[tuple[str, bytes, str | None]]:
    import base64
    import binascii

    out = []
    for i, f in enumerate(req.files):
        where = f"files[{i}]"
        if (f.content_base64 is None) == (f.text is None):
            raise InvalidArgument(f"{where}: give exactly one of content_base64 or text", where)
        if f.text is not None:
            data = f.text.encode("utf-8")
        else:
            try:
                data = base64.b64decode(f.content_base64 or "", validate=True)
            except (binascii.Error, ValueError):
                raise InvalidArgument(f"{where}.content_base64: not valid base64", where) from None
        if len(data) > max_bytes:
            raise InvalidArgument(f"{where}: {len(data)} bytes exceed the limit of {max_bytes}", where)
        if not data.strip():
            raise InvalidArgument(f"{where}: the file is empty", where)
        out.append((f.name, data, f.type))
    return out


async def import_documents(rt: Runtime, bank_id: str, req: ImportRequest, wait: bool) -> ImportAccepted:
    s = rt.settings
    if not req.files and not req.urls:
        raise InvalidArgument("files: give at least one file or URL", "files")
    if len(req.files) + len(req.urls) > s.max_import_files:
        raise InvalidArgument(f"files: at most {s.max_import_files} files and URLs per import", "files")
    files = _decode_files(req, s.max_document_bytes)
    payload = {
        "urls": req.urls,
        "tags": req.tags,
        "allowed_users": req.allowed_users,
        "chunk_size": req.chunk_size,
        "types": {name: t for name, _, t in files if t},
    }
    async with rt.pool.acquire() as conn:
        async with conn.transaction():
            await ensure_bank(conn, bank_id)
            op_id = await ops.enqueue_operation(conn, bank_id, IMPORT, payload, max_attempts=s.operation_max_attempts)
            if files:
                await conn.executemany(
                    Q.document_upload_add,
                    [(uuid.uuid4(), op_id, name, data, bank_id) for name, data, _ in files],
                )
    rt.queue.poke()
    accepted = ImportAccepted(operation_id=str(op_id), status="queued", files=len(files), urls=len(req.urls))
    if wait:
        op = await rt.queue.wait(bank_id, str(op_id), s.retain_wait_timeout)
        accepted.status, accepted.result = op.status, op.result
    return accepted


async def ingest(
    rt: Runtime, bank_id: str, name: str, data: bytes, source_type: str, url: str | None, payload: dict
) -> FileOutcome:
    chunk_size = payload.get("chunk_size") or payload.get("bank_chunk_size") or rt.settings.document_chunk_chars
    digest = hashlib.sha256(data).hexdigest()
    async with rt.pool.acquire() as conn:
        old = await conn.fetchrow(
            Q.document_by_name,
            bank_id,
            name,
        )
        if old is not None and old["content_hash"] == digest and old["chunk_size"] == chunk_size:
            # Access may change without new content, if the content is still this one.
            chunks = await conn.fetchval(
                Q.document_set_access, bank_id, old["id"], payload["tags"], payload["allowed_users"], digest, chunk_size
            )
            if chunks is not None:
                return FileOutcome(name=name, status="unchanged", document_id=str(old["id"]), chunks=chunks)

    def cpu():
        blocks, pages = read(name, source_type, data)
        chunks = chunk_blocks(blocks, chunk_size)
        if not chunks:
            raise UnreadableFile(f"{name}: no text could be extracted", "files")
        return chunks, pages, rt.embedder.embed([f"{c.headline}\n{c.text}" for c in chunks])

    chunks, pages, vectors = await rt.cpu_slots.run(cpu)
    doc_id = old["id"] if old is not None else uuid.uuid4()
    # The bank's write lock first (rt.writes): replacing chunks updates the bank's lexeme counts
    # (migration 014), whose row locks must be taken by one writer of the bank at a time.
    async with rt.writes.open(bank_id) as conn:
        await conn.execute(Q.document_lock_name, f"doc/{bank_id}/{name}")
        doc_id = await conn.fetchval(
            Q.document_upsert,
            doc_id,
            bank_id,
            name,
            source_type,
            url,
            digest,
            len(data),
            payload["tags"],
            payload["allowed_users"],
            chunk_size,
            len(chunks),
            pages,
        )
        await conn.execute(Q.document_clear_chunks, bank_id, doc_id)
        await conn.copy_records_to_table(
            "chunks",
            columns=[
                "id",
                "bank_id",
                "document_id",
                "position",
                "headline",
                "text",
                "page_start",
                "page_end",
                "embedding",
            ],
            records=[
                (uuid.uuid4(), bank_id, doc_id, i, c.headline, c.text, c.page_start, c.page_end, v)
                for i, (c, v) in enumerate(zip(chunks, vectors))
            ],
        )
    return FileOutcome(
        name=name,
        status="replaced" if old is not None else "imported",
        document_id=str(doc_id),
        chunks=len(chunks),
        pages=pages,
    )


async def run_import(rt: Runtime, job: Job) -> dict:
    p = job.payload
    async with rt.pool.acquire() as conn:
        uploads = await conn.fetch(Q.document_uploads_of, job.bank_id, job.id)
        p["bank_chunk_size"] = await conn.fetchval(Q.bank_chunk_size, job.bank_id)
    total = len(uploads) + len(p["urls"])
    outcomes: list[FileOutcome] = []

    async def progress():
        async with rt.pool.acquire() as conn:
            await conn.execute(
                Q.operation_set_progress,
                job.bank_id,
                job.id,
                json.dumps({"done": len(outcomes), "total": total}),
            )

    for up in uploads:
        try:
            async with rt.pool.acquire() as conn:
                data = await conn.fetchval(Q.document_upload_data, job.bank_id, up["id"])
            if data is None:
                # Uploads go with their operation: deleting the bank (or the operation) took it.
                raise ops.Cancelled(f"the upload of {up['name']} is gone: its bank or this import was deleted")
            t = p["types"].get(up["name"]) or detect_type(up["name"], None, data)
            outcomes.append(await ingest(rt, job.bank_id, up["name"], data, t, None, p))
        except UnreadableFile as exc:
            outcomes.append(FileOutcome(name=up["name"], status="failed", error=exc.message))
        await progress()
    for url in p["urls"]:
        try:
            data, ctype = await fetch(
                url, max_bytes=rt.settings.max_document_bytes, allow_private=rt.settings.allow_private_urls
            )
            outcomes.append(await ingest(rt, job.bank_id, url, data, detect_type(url, ctype, data), url, p))
        except UnreadableFile as exc:
            outcomes.append(FileOutcome(name=url, status="failed", error=exc.message))
        await progress()
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.document_uploads_drop, job.bank_id, job.id)
    return {
        "files": [o.model_dump() for o in outcomes],
        "failed": sum(o.status == "failed" for o in outcomes),
        "total": total,
    }


async def list_documents(rt: Runtime, bank_id: str, req: DocumentListQuery) -> DocumentList:
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(
            Q.document_list,
            bank_id,
            req.limit,
            req.offset,
        )
    return DocumentList(documents=[to_document(r) for r in rows], count=len(rows))


def parse_document_id(document_id: str) -> uuid.UUID:
    return parse_uuid(document_id, "document_id", "a document")


async def get_document(rt: Runtime, bank_id: str, document_id: str) -> Document:
    did = parse_document_id(document_id)
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.document_get, bank_id, did)
    if r is None:
        raise NotFound(f"document {document_id} does not exist in bank {bank_id!r}", "document_id")
    return to_document(r)


async def find_document_bank(rt: Runtime, document_id: str, only: set[str] | None) -> str | None:
    did = parse_document_id(document_id)
    async with rt.pool.acquire() as conn:
        return await conn.fetchval(
            Q.document_find_bank,
            did,
            None if only is None else sorted(only),
        )


async def count_documents(rt: Runtime, bank_ids: list[str]) -> dict[str, int]:
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(Q.document_counts, bank_ids)
    return {r["bank_id"]: r["n"] for r in rows}


async def delete_document(rt: Runtime, bank_id: str, document_id: str) -> None:
    did = parse_document_id(document_id)
    async with rt.writes.open(bank_id) as conn:  # its chunks leave the lexeme counts (migration 014)
        done = await conn.fetchval(Q.document_delete, bank_id, did)
    if done is None:
        raise NotFound(f"document {document_id} does not exist in bank {bank_id!r}", "document_id")
