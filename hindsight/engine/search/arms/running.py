"""How an arm's statement runs: on a pooled connection of its own, so the arms run at once, and
timed for /metrics."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hindsight.db.sql import Q
from hindsight.metrics import RECALL_ARM_SECONDS

if TYPE_CHECKING:
    import asyncpg


async def fetch_ids(pool: asyncpg.Pool, sql: str, *params) -> list:
    """First column of a query on a connection of its own from `pool` (the runtime's shared,
    planned or fixed connections, db/pool.py, Pools), so several run concurrently."""
    async with pool.acquire() as conn:
        return [r[0] for r in await conn.fetch(sql, *params)]


async def fetch_walks(pool: asyncpg.Pool, statements: list[tuple[str, list]]) -> list[list]:
    """First column of each walk of a vector index under a request's own conditions (tags, types,
    a filter expression, a user's documents), in turn on one connection of `pool` (the runtime's
    shared pool), each planned for its values: in one transaction that plans every statement so.

    With a few hundred banks, PostgreSQL's generic plan of such a walk estimates a bank at the
    average bank's share of the table, reads the bank by its key and sorts it, and a connection
    left to choose keeps that plan from the sixth call: a big bank's walk becomes a sort of its
    rows, several times slower (bench/README.md, "A filtered walk planned for its values"). A
    condition's values still choose: a selective one makes sorting the few memories that pass it
    cheaper than a walk, and complete. Not the planned pool: its connections stop a walk at the
    time arm's 3,000 rows, and its few connections would queue document search's walks (one a
    phrase) behind the keyword arms. The transaction costs three round trips; none, no walks."""
    if not statements:
        return []
    async with pool.acquire() as conn, conn.transaction():
        await conn.execute(Q.plan_each_call_this_transaction)
        return [[r[0] for r in await conn.fetch(sql, *params)] for sql, params in statements]


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
