"""Per-bank gates: how many of a bank's requests may be at work at once in this process, so that
a flood on one bank queues at its own gate instead of ahead of every other bank's requests.

`Gates` names each gate by the work it bounds, and every holder takes its gate through it:
- `reading`: a recall, a listing, document search, reflect's reading of the bank, a small
  retain's model work (its vectors, on the query threads recalls use); lanes as wide as
  HINDSIGHT_API_BANK_CONCURRENCY (lane_width);
- `bulk`: a large retain's batches at the CPU slots, as many as there are slots;
- `export`: a bank's exports, one at a time (an export holds a pooled connection at its reader's
  pace, and a handful of slow readers would hold the whole pool);
and `BankWrites` is the one way into a transaction that writes a bank (its write queue). None is
held while another is waited for: a retain's lane is let go before it queues to write."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator

import asyncpg

from hindsight.config import Settings
from hindsight.cpus import cores
from hindsight.db.sql import Q


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


class Gates:
    """The bank gates of one process (module docstring), built from the settings."""

    def __init__(self, settings: Settings):
        self._lanes = BankGates(lane_width(settings))
        self._bulk = BankGates(CPU_SLOTS)
        self._exports = BankGates(1)

    def reading(self, bank_id: str):
        return self._lanes.hold(bank_id)

    def bulk(self, bank_id: str):
        return self._bulk.hold(bank_id)

    def export(self, bank_id: str):
        return self._exports.hold(bank_id)

    @property
    def lanes(self) -> BankGates:
        """The reading lanes, for what they say of a bank's waiters (tests, metrics)."""
        return self._lanes

    @property
    def exports(self) -> BankGates:
        return self._exports
