"""How an arm's statement runs: on a pooled connection of its own, so the arms run at once, and
timed for /metrics."""

from __future__ import annotations

import time
from typing import TYPE_CHECKING

from hindsight.metrics import RECALL_ARM_SECONDS

if TYPE_CHECKING:
    import asyncpg


async def fetch_ids(pool: asyncpg.Pool, sql: str, *params) -> list:
    """First column of a query on a connection of its own from `pool` (the runtime's shared,
    planned or fixed connections, db/pool.py, Pools), so several run concurrently."""
    async with pool.acquire() as conn:
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
