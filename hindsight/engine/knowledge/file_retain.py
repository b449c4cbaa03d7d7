"""Files retained as memories (Hindsight's `POST .../files/retain`): each file kept as a file of the
bank with its own operation, then read in the background as a document import reads it (text,
Markdown, HTML, PDF, DOCX) and its text retained under a document_id (the file's name unless one
is given; retaining the same name again replaces what it held), with the tags, metadata, context
and time given for it. Not the knowledge base's import: that keeps a file as a searched document
of chunks; this makes memories of it, as a retain of its text would."""

from __future__ import annotations

import io
from dataclasses import dataclass
from datetime import datetime
from typing import IO, TYPE_CHECKING, Any

from pydantic import ConfigDict, Field

from hindsight.db.sql import Q
from hindsight.engine.banks.files import BankFile, file_key, file_parts, store_file
from hindsight.engine.banks.registry import ensure_bank
from hindsight.engine.errors import InvalidArgument, TooLarge
from hindsight.engine.memory.retain import retain
from hindsight.engine.memory.schemas import RetainItem
from hindsight.engine.queue import operations as ops
from hindsight.engine.rules.text import Strict
from hindsight.engine.rules.validation import parse
from hindsight.files.readers import UnreadableFile, detect_type, read

if TYPE_CHECKING:
    from hindsight.engine.queue.operations import Job
    from hindsight.engine.runtime import Runtime

RETAIN_FILE = "retain_file"


class FileMemory(Strict):
    """How one file is retained (Hindsight's FileRetainMetadata; its parser and strategy are the
    reference's own machinery and are not read)."""

    model_config = ConfigDict(extra="ignore")

    document_id: str | None = Field(None, min_length=1, max_length=256)
    context: str | None = Field(None, max_length=200)
    metadata: dict[str, Any] | None = None
    tags: list[str] | None = None
    timestamp: datetime | None = None


@dataclass
class Upload:
    name: str
    content_type: str | None
    data: IO[bytes]


def _item(meta: FileMemory, name: str, content: str) -> dict[str, Any]:
    out: dict[str, Any] = {"content": content, "document_id": meta.document_id or name[:256]}
    if meta.context:
        out["context"] = meta.context
    if meta.metadata:
        out["metadata"] = meta.metadata
    if meta.tags:
        out["tags"] = meta.tags
    if meta.timestamp:
        out["timestamp"] = meta.timestamp.isoformat()
    return out


async def request_file_retains(rt: Runtime, bank_id: str, uploads: list[Upload], metas: list[FileMemory]) -> list[str]:
    """Keep each file with an operation that retains it; returns the operations' ids, in the
    files' order. Everything is checked before anything is kept."""
    s = rt.settings
    if not uploads:
        raise InvalidArgument("files: at least one file is required", "files")
    if len(uploads) > s.max_import_files:
        raise InvalidArgument(f"files: {len(uploads)} files exceed the limit of {s.max_import_files}", "files")
    if metas and len(metas) != len(uploads):
        raise InvalidArgument(f"files_metadata: {len(metas)} entries for {len(uploads)} files", "files_metadata")
    metas = metas or [FileMemory() for _ in uploads]
    for i, (up, meta) in enumerate(zip(uploads, metas)):
        up.data.seek(0, io.SEEK_END)
        size = up.data.tell()
        up.data.seek(0)
        if size > s.max_document_bytes:
            raise TooLarge(f"files.{i}: {size} bytes exceed the limit of {s.max_document_bytes}", "files")
        parse(RetainItem, _item(meta, up.name or f"file-{i}", "-"), f"files_metadata.{i}.")
    ids = []
    for i, (up, meta) in enumerate(zip(uploads, metas)):
        name = (up.name or f"file-{i}")[:200]
        key = file_key(bank_id, "retain", "upload")
        async with rt.pool.acquire() as conn, conn.transaction():
            await ensure_bank(conn, bank_id)
            payload = {"key": key, "name": name, "content_type": up.content_type, "meta": meta.model_dump(mode="json")}
            op_id = await ops.enqueue_operation(
                conn, bank_id, RETAIN_FILE, payload, max_attempts=s.operation_max_attempts
            )
            await store_file(
                conn, bank_id, key, up.data, name=name, media_type=up.content_type or "application/octet-stream",
                operation_id=op_id,
            )  # fmt: skip
        ids.append(str(op_id))
    rt.queue.poke()
    return ids


def _text(name: str, content_type: str | None, data: bytes) -> str:
    blocks, _ = read(name, detect_type(name, content_type, data), data)
    return "\n\n".join(b.text for b in blocks if b.text.strip())


async def run_file_retain(rt: Runtime, job: Job) -> dict:
    p = job.payload
    async with rt.pool.acquire() as conn:
        head = await conn.fetchrow(Q.bank_file_head, job.bank_id, p["key"])
    if head is None:
        raise ops.Cancelled("its file is gone (the bank or the operation was deleted)")
    f = BankFile(
        bank_id=job.bank_id, key=p["key"], name=head["name"], media_type=head["media_type"], size=head["size"],
        parts=head["parts"],
    )  # fmt: skip
    data = b"".join([chunk async for chunk in file_parts(rt, f)])
    try:
        text = await rt.cpu_slots.run(_text, p["name"], p.get("content_type"), data)
    except UnreadableFile as exc:
        raise InvalidArgument(exc.message, "files") from None
    if not text.strip():
        raise InvalidArgument(f"{p['name']}: no text could be read from it", "files")
    meta = FileMemory.model_validate(p["meta"])
    limit = rt.settings.max_content_chars
    items = [parse(RetainItem, _item(meta, p["name"], text[i : i + limit])) for i in range(0, len(text), limit)]
    done: dict = {}

    async def finish(conn, result) -> None:
        done.update(result.model_dump(mode="json"), file=p["name"])
        await conn.execute(Q.bank_file_delete, job.bank_id, p["key"])
        await ops.mark_succeeded(conn, job, done)

    await retain(rt, job.bank_id, items, on_commit=finish, actor="retain")
    return done
