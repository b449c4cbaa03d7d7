"""Files kept for a bank (migration 019): a transfer archive an export wrote, or what an import or
a file retain reads, staged until its operation runs. Stored in PostgreSQL like everything else
of a bank (it goes with the bank, and with the operation that made or reads it), in parts of
PART_BYTES, so that writing or reading one holds a part in memory at a time, not the file.

A key names its bank: `banks/{bank_id}/...` (the reference's layout), so a download by key alone
(`/v1/default/files/download/{key}`) knows which bank to check the caller against."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import IO, TYPE_CHECKING

import asyncpg
from pydantic import BaseModel

from hindsight.bank_ids import valid_bank_id
from hindsight.db.sql import Q
from hindsight.engine.errors import NotFound

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

PART_BYTES = 4 * 2**20
KEY_PREFIX = "banks/"


class BankFile(BaseModel):
    bank_id: str
    key: str
    name: str
    media_type: str
    size: int
    parts: int


def file_key(bank_id: str, kind: str, name: str) -> str:
    """A new key for a file of the bank: `banks/{bank_id}/{kind}/{uuid}/{name}`."""
    return f"{KEY_PREFIX}{bank_id}/{kind}/{uuid.uuid4()}/{name}"


def bank_of_key(key: str) -> str:
    """The bank a key names; NotFound for a key that names none (no file has it)."""
    rest = key.removeprefix(KEY_PREFIX) if key.startswith(KEY_PREFIX) else ""
    bank_id = rest.split("/", 1)[0]
    if not valid_bank_id(bank_id) or "/" not in rest:
        raise NotFound(f"file {key[:300]!r} does not exist", "key")
    return bank_id


async def store_file(
    conn: asyncpg.Connection,
    bank_id: str,
    key: str,
    source: IO[bytes],
    *,
    name: str,
    media_type: str,
    operation_id: uuid.UUID | None = None,
) -> int:
    """Write `source` (read from where it stands) as the file `key` of the bank, in the caller's
    transaction; returns its size in bytes."""
    size, part = 0, 0
    while True:
        chunk = source.read(PART_BYTES)
        if not chunk and part:
            break
        await conn.execute(Q.bank_file_part_add, bank_id, key, part, operation_id, media_type, name, chunk)
        size += len(chunk)
        part += 1
        if not chunk:
            break
    return size


async def file_head(rt: Runtime, bank_id: str, key: str) -> BankFile:
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.bank_file_head, bank_id, key)
    if r is None:
        raise NotFound(f"file {key[:300]!r} does not exist", "key")
    return BankFile(
        bank_id=bank_id, key=key, name=r["name"], media_type=r["media_type"], size=r["size"], parts=r["parts"]
    )


async def file_parts(rt: Runtime, f: BankFile) -> AsyncIterator[bytes]:
    """The file's bytes, a part at a time."""
    for part in range(f.parts):
        async with rt.pool.acquire() as conn:
            chunk = await conn.fetchval(Q.bank_file_part, f.bank_id, f.key, part)
        if chunk is None:  # deleted while read (its bank or operation went)
            raise NotFound(f"file {f.key[:300]!r} does not exist", "key")
        yield chunk


async def copy_file(rt: Runtime, f: BankFile, dest: IO[bytes]) -> None:
    async for chunk in file_parts(rt, f):
        dest.write(chunk)
    dest.seek(0)


async def delete_file(rt: Runtime, bank_id: str, key: str) -> None:
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.bank_file_delete, bank_id, key)
