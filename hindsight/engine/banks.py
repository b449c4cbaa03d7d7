"""Bank life cycle. Banks are cheap rows; deleting one cascades to everything in it."""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Callable

import asyncpg

from ..config import BANK_ID_RULE, valid_bank_id
from ..db.sql import Q
from .errors import InvalidArgument, NotFound
from .models import Bank, BankCreate, BankUpdate


def check_bank_id(bank_id: object, field: str = "bank_id") -> str:
    if not valid_bank_id(bank_id):
        raise InvalidArgument(f"{field}: invalid bank id {bank_id!r}; use {BANK_ID_RULE}", field)
    return bank_id


def _bank(row: asyncpg.Record, stats: asyncpg.Record | None = None) -> Bank:
    b = Bank(
        bank_id=row["id"],
        name=row["name"],
        mission=row["mission"],
        disposition=json.loads(row["disposition"]) if isinstance(row["disposition"], str) else row["disposition"],
        document_chunk_size=(json.loads(row["config"]) if isinstance(row["config"], str) else row["config"]).get(
            "document_chunk_size"
        ),
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )
    if stats is not None:
        b.memory_count = stats["memories"]
        b.entity_count = stats["entities"]
        b.document_count = stats["documents"]
        b.last_memory_at = stats["last_memory_at"]
    return b


def _config(chunk_size: int | None) -> dict:
    """Per-bank settings kept in banks.config (JSON, so new ones need no migration)."""
    return {"document_chunk_size": chunk_size} if chunk_size else {}


async def ensure_bank(conn: asyncpg.Connection, bank_id: str) -> None:
    """Implicit creation on first retain."""
    await conn.execute(Q.bank_ensure, bank_id)


async def lock_writes(conn: asyncpg.Connection, bank_id: str) -> None:
    """Serialise the transactions that add or remove a bank's memories, and those that write
    several of its tables at once (mental models with their operations, deleting the bank). The
    memory writers all update the bank's lexeme counts (migration 004) and entity counts; holding
    this lock first means such row locks are always taken by one writer at a time, so they
    cannot deadlock. Writers already queue on the bank's memory-count row, so the lock costs
    little concurrency: the CPU work (splitting, embedding) happens before it is taken."""
    await conn.execute(Q.bank_lock_writes, f"bank-writes/{bank_id}")


class BankWrites:
    """The one way into a transaction that writes a bank: this process's writers of a bank queue
    here, in memory, and only the first takes a pooled connection and the bank's write lock.

    Why: writers that queued on the database lock each held a pooled connection while they
    waited, so a dozen writers behind one bulk import on one bank took the whole pool, and a
    recall on a quiet bank waited seconds for a connection (8.2 s with the default pool of 10).
    Queued here, a bank's writers hold at most one connection per process; other processes'
    writers still meet at the database lock."""

    def __init__(self, pool: Callable[[], asyncpg.Pool]):
        self._pool = pool
        self._queues: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def open(self, bank_id: str) -> AsyncIterator[asyncpg.Connection]:
        lock, waiting = self._queues.get(bank_id) or (asyncio.Lock(), 0)
        self._queues[bank_id] = (lock, waiting + 1)
        try:
            async with lock, self._pool().acquire() as conn, conn.transaction():
                await lock_writes(conn, bank_id)
                yield conn
        finally:
            lock, waiting = self._queues[bank_id]
            if waiting == 1:
                del self._queues[bank_id]
            else:
                self._queues[bank_id] = (lock, waiting - 1)


async def create_bank(pool: asyncpg.Pool, req: BankCreate) -> tuple[Bank, bool]:
    """Create, or return the existing bank unchanged (create_bank is idempotent, like the
    reference's 'create or retrieve'); a name or mission given for a new bank is stored."""
    async with pool.acquire() as conn:
        row = await conn.fetchrow(
            Q.bank_create,
            req.bank_id,
            req.name,
            req.mission,
            json.dumps(_config(req.document_chunk_size)),
        )
        if row is not None:
            return _bank(row), True
        row = await conn.fetchrow(Q.bank_get, req.bank_id)
        return _bank(row), False


async def get_bank(pool: asyncpg.Pool, bank_id: str) -> Bank:
    async with pool.acquire() as conn:
        row = await conn.fetchrow(Q.bank_get, bank_id)
        if row is None:
            raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
        stats = await conn.fetchrow(Q.bank_stats, bank_id)
        return _bank(row, stats)


async def list_banks(pool: asyncpg.Pool, only: set[str] | None = None) -> list[Bank]:
    async with pool.acquire() as conn:
        rows = await conn.fetch(Q.bank_list) if only is None else await conn.fetch(Q.bank_list_some, list(only))
        ids = [r["id"] for r in rows]
        memories = {r["bank_id"]: r for r in await conn.fetch(Q.bank_memory_counts, ids)}
        entities = {r["bank_id"]: r["n"] for r in await conn.fetch(Q.bank_entity_counts, ids)}
    out = []
    for r in rows:
        b = _bank(r)
        m = memories.get(r["id"])
        b.memory_count = m["n"] if m else 0
        b.last_memory_at = m["last"] if m else None
        b.entity_count = entities.get(r["id"], 0)
        out.append(b)
    return out


async def update_bank(pool: asyncpg.Pool, bank_id: str, req: BankUpdate) -> Bank:
    fields = req.model_dump(exclude_unset=True)
    async with pool.acquire() as conn:
        row = await conn.fetchrow(
            Q.bank_update,
            bank_id,
            "name" in fields,
            fields.get("name"),
            "mission" in fields,
            fields.get("mission"),
            "disposition" in fields and fields["disposition"] is not None,
            json.dumps(fields.get("disposition") or {}),
            json.dumps(_config(fields.get("document_chunk_size"))),
        )
    if row is None:
        raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
    return _bank(row)


async def delete_bank(writes: BankWrites, bank_id: str) -> int:
    """Delete a bank; its rows go by cascade. Writers that hold the bank's write lock are waited
    for; one that cannot take it (a document import's foreign-key checks lock the bank row after
    its own rows) may still meet the cascade in the other order, so a deadlock that PostgreSQL
    resolves against this transaction is retried."""
    for attempt in range(3):
        try:
            async with writes.open(bank_id) as conn:
                n = await conn.fetchval(Q.bank_memory_count, bank_id)
                deleted = await conn.fetchval(Q.bank_delete, bank_id)
            break
        except asyncpg.DeadlockDetectedError:
            if attempt == 2:
                raise
    if deleted is None:
        raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
    return n
