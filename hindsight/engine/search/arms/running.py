"""How an arm's statement runs: on a pooled connection of its own, so the arms run at once, and
timed for /metrics."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hindsight.db.pool import WALK_ROWS
from hindsight.db.sql import Q
from hindsight.metrics import RECALL_ARM_SECONDS

if TYPE_CHECKING:
    import asyncpg


async def fetch_ids(pool: asyncpg.Pool, sql: str, *params) -> list:
    """First column of a query on a connection of its own from `pool` (the runtime's shared,
    planned or fixed connections, db/pool.py, Pools), so several run concurrently."""
    async with pool.acquire() as conn:
        return [r[0] for r in await conn.fetch(sql, *params)]


async def fetch_walk_ids(planned: asyncpg.Pool, sql: str, *params) -> list:
    """First column of a walk of a vector index under a request's own conditions (tags, types, a
    filter expression, a user's documents), on a connection of `planned` (the runtime's planned
    pool), with pgvector's whole allowance of rows (db/pool.py, WALK_ROWS) for its transaction.

    Planned for its values each call: with a few hundred banks, PostgreSQL's generic plan of such a
    walk estimates a bank at the average bank's share of the table, reads the bank by its key and
    sorts it, and a shared connection keeps that plan from the sixth call (at 100,000 memories
    200-470 ms a call against 7-30 ms walked; bench/README.md, "A filtered walk planned for its
    values"). A condition's values still choose: a selective one makes sorting the few memories
    that pass it cheaper than a walk, and complete. The transaction costs three round trips a
    call, only for requests that name conditions."""
    async with planned.acquire() as conn, conn.transaction():
        await conn.execute(Q.walk_rows_this_transaction, WALK_ROWS)
        return [r[0] for r in await conn.fetch(sql, *params)]


async def timed(arms: str | tuple[str, ...], query):
    """One arm's query (or one statement serving several arms), its time observed for each arm in
    /metrics (hindsight_recall_arm_seconds)."""
    start = time.perf_counter()
    try:
        return await query
    finally:
        took = time.perf_counter() - start
        for arm in (arms,) if isinstance(arms, str) else arms:
            RECALL_ARM_SECONDS.labels(arm).observe(took)
