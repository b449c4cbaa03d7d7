"""Whether recall ranks a bank by sorting its own rows or by walking the vector index all banks
share, from how many memories it holds beside all banks together.

Why: a walk of the shared HNSW index filtered to one bank reads about 60 / (the bank's share of
the index) entries, and PostgreSQL's planner prices it as if the filter cost nothing, so it walks
a small bank beside a big one where sorting the bank's rows is several times cheaper (bench/README.md,
"Semantic arm: a small bank beside a big one" and "Time arm: a small bank sorted"). The counts move slowly next to how often
a bank is recalled, so each bank's are kept for a few seconds: a recall pays no round trip for
them. The two plans do not return quite the same memories: the sort returns the exact nearest,
the walk (an approximate index) most of them, ~50-59 of 60. So a bank's results can shift a
little when it, or the other banks, grow across the line; a count seconds old only delays that.
"""

from __future__ import annotations

import time

import asyncpg

from hindsight.db.sql import Q

# Sorted when the bank holds at most EXACT_BANK_ROWS memories and rows^2 <= EXACT_SHARE x all.
# A sort reads at most EXACT_READ_ROWS of the bank's rows, in case it grew past the line since its
# count was read (an import of 100,000 memories within TTL_SECONDS).
EXACT_BANK_ROWS = 10_000
EXACT_READ_ROWS = 2 * EXACT_BANK_ROWS
EXACT_SHARE = 500
TTL_SECONDS = 10.0
# Banks whose counts are kept at once; past this the least recently used are forgotten (re-read
# when asked).
MAX_BANKS = 4_096


def ranks_exactly(bank_rows: int, all_rows: int) -> bool:
    """Whether a bank of `bank_rows` memories among `all_rows` is sorted rather than walked. A walk
    filtered to one bank reads about 60 / share entries of the index (share = bank_rows /
    all_rows), each a graph step and a visit to its row, ~10 us; reading and ranking a row costs
    ~1 us, so the sort is cheaper while bank_rows^2 < ~600 x all_rows (EXACT_SHARE is a little
    under: a walk's cost varies with the query). So a bank of 5,000 beside 137,000 memories is
    sorted, one of 10,000 there is walked, and so is any bank alone in the index (measured in
    bench/README.md, "Semantic arm: a small bank beside a big one"). EXACT_BANK_ROWS bounds the
    sort."""
    return bank_rows <= EXACT_BANK_ROWS and bank_rows * bank_rows <= EXACT_SHARE * all_rows


class BankSizes:
    def __init__(self, pool: asyncpg.Pool):
        self.pool = pool
        self._kept: dict[str, tuple[float, int, int]] = {}  # bank -> (read at, bank, every)

    async def get(self, bank_id: str) -> tuple[int, int]:
        """(the bank's memories, all banks' memories); the second is PostgreSQL's count
        (recall_bank_sizes), never below the first."""
        now = time.monotonic()
        kept = self._kept.pop(bank_id, None)  # put back last: the dict's order is the use order
        if kept is None or now - kept[0] >= TTL_SECONDS:
            async with self.pool.acquire() as conn:
                row = await conn.fetchrow(Q.recall_bank_sizes, bank_id)
            kept = (now, int(row["bank"]), max(int(row["every"] or 0), int(row["bank"])))
            self._kept.pop(bank_id, None)  # another call's read, made while this one waited
            if len(self._kept) >= MAX_BANKS:
                del self._kept[next(iter(self._kept))]  # the least recently used
        self._kept[bank_id] = kept
        return kept[1], kept[2]

    async def sorts(self, bank_id: str, at_most: int | None = None) -> bool:
        """Whether recall sorts this bank's rows rather than walk the shared index (ranks_exactly),
        and, given `at_most`, the bank holds no more than that (what a sort can read whole)."""
        bank, every = await self.get(bank_id)
        return ranks_exactly(bank, every) and (at_most is None or bank <= at_most)
