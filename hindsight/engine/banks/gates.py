"""GATES"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import asyncpg

from hindsight.config import Settings
from hindsight.cpus import cores
from hindsight.db.sql import Q

if TYPE_CHECKING:
    pass


async def lock_writes(conn: asyncpg.Connection, bank_id: str) -> None:
    """Serialise the transactions that add or remove a bank's memories or document chunks, and
    those that write several of its tables at once (mental models with their operations, deleting
    the bank). The memory writers all update the bank's lexeme counts (migration 004) and entity
    counts, the chunk writers its chunk lexeme counts (migration 014); holding this lock first
    means such row locks are always taken by one writer at a time, so they cannot deadlock.
    Writers already queue on the bank's memory-count row, so the lock costs little concurrency:
    the CPU work (splitting, embedding) happens before it is taken."""
    await conn.execute(Q.bank_lock_writes, f"bank-writes/{bank_id}")


# Embedding batches saturate the cores; more than two at once only adds queueing.
CPU_SLOTS = 2


def lane_width(s: Settings) -> int:
    """Lanes a bank has in this process: HINDSIGHT_API_BANK_CONCURRENCY (0: four a core, which
    keeps the cores busy for one busy bank), shared evenly by the server's processes."""
    width = s.bank_concurrency or 4 * cores()
    return max(1, width // max(1, s.workers))


class BankGates:
    """At most `width` holders per bank at once in this process; the others wait their turn,
    first come first served. A bank's gate is made when first asked for and dropped when no one
    holds it or waits, so idle banks cost nothing."""

    def __init__(self, width: int):
        self.width = width
        self._gates: dict[str, tuple[asyncio.Semaphore, int]] = {}

    @contextlib.asynccontextmanager
    async def hold(self, bank_id: str) -> AsyncIterator[None]:
        gate, users = self._gates.get(bank_id) or (asyncio.Semaphore(self.width), 0)
        self._gates[bank_id] = (gate, users + 1)
        try:
            async with gate:
                yield
        finally:
            gate, users = self._gates[bank_id]
            if users == 1:
                del self._gates[bank_id]
            else:
                self._gates[bank_id] = (gate, users - 1)

    def waiting(self, bank_id: str) -> int:
        """Holders and waiters of a bank's gate."""
        return self._gates.get(bank_id, (None, 0))[1]


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
        self._queues = BankGates(1)

    @contextlib.asynccontextmanager
    async def open(self, bank_id: str) -> AsyncIterator[asyncpg.Connection]:
        async with self._queues.hold(bank_id), self.pool.acquire() as conn, conn.transaction():
            await lock_writes(conn, bank_id)
            yield conn
