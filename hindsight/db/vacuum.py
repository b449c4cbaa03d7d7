"""VACUUM after an erasure: the database's own copies of what a person asked to forget (dead row
versions, their index entries, the planner's sampled statistics) go within a bounded time, not
whenever autovacuum gets to them.

Why not autovacuum alone: it visits a table once a fifth of its rows changed (PostgreSQL's
default scale factor), so on a large shared `memories` table a forgotten memory's dead row, its
entries in the indexes and its words in the statistics stayed for days. Why not at once, in the
request: VACUUM cannot run inside a transaction, and on a large table (its vector index read
whole) it takes seconds; one request forgetting many memories, or a retention sweep, is followed
by one.

What plain VACUUM leaves: a removed row's bytes stay in its page's free space until PostgreSQL
writes over them, and a GIN index keeps a word as a key with no rows; neither is reachable by
SQL. HINDSIGHT_API_ERASURE_VACUUM_FULL rewrites the tables instead (no trace in the data files,
at the price of locking each table while it is rewritten). docs/privacy.md says both.

A process that erased asks for one (`request`); it runs HINDSIGHT_API_ERASURE_VACUUM_DELAY seconds
after the first request of a quiet period, so that a burst of erasures shares one run and the
tables are vacuumed at most once a delay. It runs on one pooled connection; a failure is logged
and retried at the next request. A process that stops before its run leaves it to autovacuum
(docs/privacy.md says so)."""

from __future__ import annotations

import asyncio
import logging
import time

import asyncpg

from hindsight.db.sql import Q

log = logging.getLogger("hindsight.vacuum")

# The tables an erasure touches: those sql/forgetting.sql's VACUUM statements name.
ERASED_TABLES = (
    "memories",
    "memory_terms",
    "bank_lexemes",
    "memory_versions",
    "memory_entities",
    "entities",
    "fact_sources",
    "memory_documents",
    "mental_models",
    "mental_model_versions",
    "operations",
    "chunks",
    "chunk_lexemes",
    "documents",
    "document_uploads",
)


class Vacuum:
    def __init__(self, pool: asyncpg.Pool, delay: float, enabled: bool = True, full: bool = False):
        self.pool = pool
        self.delay = delay
        self.enabled = enabled
        self.full = full
        self._stats_note_logged = False
        self._task: asyncio.Task | None = None
        self._again = False  # requested while a run was under way: one more after it
        self.runs = 0  # completed runs, for tests and the log
        self.last_run_at: float | None = None

    def request(self) -> None:
        """An erasure committed: its tables are vacuumed within `delay` seconds (plus the run)."""
        if not self.enabled:
            return
        if self._task is not None and not self._task.done():
            self._again = True
            return
        self._task = asyncio.get_running_loop().create_task(self._after_delay(), name="vacuum after erasure")

    async def _after_delay(self) -> None:
        while True:
            self._again = False
            await asyncio.sleep(self.delay)
            await self.run()
            if not self._again:
                return

    async def run(self) -> None:
        """Vacuum the tables an erasure touches, now (tests and the delay's end)."""
        started = time.monotonic()
        try:
            async with self.pool.acquire() as conn:
                await conn.execute(Q.vacuum_full_after_erasure if self.full else Q.vacuum_after_erasure, timeout=None)
                try:
                    await conn.fetchval(Q.vacuum_clear_emptied_stats, list(ERASED_TABLES))
                except asyncpg.UndefinedFunctionError:  # before PostgreSQL 18
                    if not self._stats_note_logged:
                        log.info("PostgreSQL before 18 keeps the last statistics of a table emptied by an erasure")
                        self._stats_note_logged = True
                await conn.execute(Q.vacuum_full_statistics if self.full else Q.vacuum_statistics, timeout=None)
        except Exception as exc:  # the next erasure asks again; autovacuum runs meanwhile
            log.warning("vacuum after erasure failed: %s: %s", type(exc).__name__, exc)
            return
        self.runs += 1
        self.last_run_at = time.time()
        log.info("vacuumed the tables an erasure touched in %.2f s", time.monotonic() - started)

    async def close(self) -> None:
        if self._task is not None and not self._task.done():
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
        self._task = None
