"""How many memories a bank holds beside all banks together, as recall's semantic arm needs it.

Why: every bank's vectors share one HNSW index, and a walk of it filtered to one bank reads about
ARM_LIMIT / (the bank's share of the index) entries, while ranking the bank's own rows costs
about its size. Which is cheaper follows from the two counts (recall.ranks_exactly). They move
slowly next to how often a bank is recalled, so each bank's are kept for a few seconds: a
recall pays no round trip for them, and a figure seconds old can only pick the slower of two
correct plans, never change a result.
"""

from __future__ import annotations

import time

import asyncpg

from ..db.sql import Q

TTL_SECONDS = 10.0
# Banks whose counts are kept at once; past this the oldest are forgotten (re-read when asked).
MAX_BANKS = 4_096


class BankSizes:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool
        self._kept: dict[str, tuple[float, int, int]] = {}  # bank -> (read at, bank, every)

    async def get(self, bank_id: str) -> tuple[int, int]:
        """(the bank's memories, all banks' memories); the second is PostgreSQL's count
        (recall_bank_sizes), never below the first."""
        now = time.monotonic()
        kept = self._kept.get(bank_id)
        if kept is not None and now - kept[0] < TTL_SECONDS:
            return kept[1], kept[2]
        async with self.pool.acquire() as conn:
            row = await conn.fetchrow(Q.recall_bank_sizes, bank_id)
        bank, every = int(row["bank"]), max(int(row["every"] or 0), int(row["bank"]))
        self._kept.pop(bank_id, None)  # re-inserted last: the dict's order is the age order
        if len(self._kept) >= MAX_BANKS:
            del self._kept[next(iter(self._kept))]
        self._kept[bank_id] = (now, bank, every)
        return bank, every
