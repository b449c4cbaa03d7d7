"""What the concept modules run on: one small handle, built once by the engine when it starts.

Why one handle: concept functions used to take the whole Engine, a pool, or a connection, each
by its author's habit, so the same kind of work had three call shapes and a function could reach
anything the engine held (its own operations included). The rule now (CONTRIBUTING.md): a
concept function takes `rt: Runtime` when it opens its own connections or uses the embedder, the
LLM, the settings or the operation queue, and `conn` when it is one step of a caller's
transaction. Nothing below the engine's own methods sees the Engine.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

import asyncpg

from ..config import Settings
from ..db.sql import Q
from .cpu_slots import CpuSlots

if TYPE_CHECKING:
    from ..embedding import Embedder
    from ..llm import LLM
    from .models import Operation
    from .sizes import BankSizes


async def lock_writes(conn: asyncpg.Connection, bank_id: str) -> None:
    """Serialise the transactions that add or remove a bank's memories or document chunks, and
    those that write several of its tables at once (mental models with their operations, deleting
    the bank). The memory writers all update the bank's lexeme counts (migration 004) and entity
    counts, the chunk writers its chunk lexeme counts (migration 014); holding this lock first
    means such row locks are always taken by one writer at a time, so they cannot deadlock.
    Writers already queue on the bank's memory-count row, so the lock costs little concurrency:
    the CPU work (splitting, embedding) happens before it is taken."""
    await conn.execute(Q.bank_lock_writes, f"bank-writes/{bank_id}")


class BankWrites:
    """The one way into a transaction that writes a bank: this process's writers of a bank queue
    here, in memory, and only the first takes a pooled connection and the bank's write lock.

    Why: writers that queued on the database lock each held a pooled connection while they
    waited, so a dozen writers behind one bulk import on one bank took the whole pool, and a
    recall on a quiet bank waited seconds for a connection (8.2 s with the default pool of 10).
    Queued here, a bank's writers hold at most one connection per process; other processes'
    writers still meet at the database lock."""

    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool
        self._queues: dict[str, tuple[asyncio.Lock, int]] = {}

    @contextlib.asynccontextmanager
    async def open(self, bank_id: str) -> AsyncIterator[asyncpg.Connection]:
        lock, waiting = self._queues.get(bank_id) or (asyncio.Lock(), 0)
        self._queues[bank_id] = (lock, waiting + 1)
        try:
            async with lock, self.pool.acquire() as conn, conn.transaction():
                await lock_writes(conn, bank_id)
                yield conn
        finally:
            lock, waiting = self._queues[bank_id]
            if waiting == 1:
                del self._queues[bank_id]
            else:
                self._queues[bank_id] = (lock, waiting - 1)


class Queue(Protocol):
    """The operation queue as concept modules see it: queued work is started at once rather than
    at the next scheduler tick, and a caller may wait for an operation to finish."""

    def poke(self) -> None: ...

    async def wait(self, bank_id: str, operation_id: str, timeout: float) -> Operation: ...


@dataclass
class Runtime:
    settings: Settings
    pool: asyncpg.Pool
    # Connections that plan each statement for its own parameters (db/pool.py, Pools): the
    # recall arms whose best plan depends on them.
    planned: asyncpg.Pool
    writes: BankWrites  # the way into a transaction that writes a bank
    embedder: Embedder
    llm: LLM
    queue: Queue
    # Embedding batches saturate the cores; more than two at once only adds queueing.
    cpu_slots: CpuSlots
    sizes: BankSizes  # each bank's memory count beside all banks', for recall's semantic and time arms
