"""The audit log's writer: records kept in memory and written in batches by COPY, off the
request's path.

Why buffered: an INSERT per request cost every recall a round trip and a commit (a WAL flush);
a list append costs microseconds, and one COPY a flush interval writes hundreds of records in one
transaction (bench/README.md, "Audit log: on and off"). The price: a process that dies (a crash,
SIGKILL, the machine) loses the records of its last HINDSIGHT_API_AUDIT_FLUSH_SECONDS; a clean
stop writes them (docs/privacy.md says so). While the database cannot be written, records wait
for the next flush, up to MAX_BUFFERED; past that, new ones are dropped and counted
(hindsight_audit_records_total{outcome="dropped"}) rather than growing without bound.
"""

from __future__ import annotations

import asyncio
import json
import logging
import uuid
from datetime import UTC, datetime
from typing import Any

import asyncpg

from hindsight.metrics import AUDIT_RECORDS

log = logging.getLogger("hindsight.audit")

# Records waiting in memory at most (about 300 bytes each: ~30 MB).
MAX_BUFFERED = 100_000
COLUMNS = [
    "bank_id",
    "id",
    "started_at",
    "duration_ms",
    "transport",
    "action",
    "method",
    "route",
    "status",
    "outcome",
    "principal",
    "request_id",
    "detail",
]


class AuditTrail:
    def __init__(self, pool: asyncpg.Pool | None, enabled: bool, flush_seconds: float):
        self.pool = pool
        self.enabled = enabled
        self.flush_seconds = flush_seconds
        self._rows: list[tuple] = []
        self._task: asyncio.Task | None = None
        self._lock = asyncio.Lock()
        self._dropped_logged = False

    def record(
        self,
        bank_id: str | None,
        transport: str,
        action: str,
        method: str | None,
        route: str | None,
        status: int,
        outcome: str,
        principal: str | None,
        request_id: str,
        started_at: float,
        seconds: float,
        detail: dict[str, Any] | None = None,
    ) -> None:
        """Keep one record for the next flush (no I/O: called at the end of every audited request).
        `started_at` is a Unix time, `seconds` how long the request took."""
        if not self.enabled:
            return
        if len(self._rows) >= MAX_BUFFERED:
            AUDIT_RECORDS.labels("dropped").inc()
            if not self._dropped_logged:
                log.error(
                    "audit records are being dropped: %d wait for a database that cannot be written", MAX_BUFFERED
                )
                self._dropped_logged = True
            return
        self._rows.append(
            (
                bank_id or "",
                started_at,
                max(0, round(seconds * 1000)),
                transport,
                action,
                method,
                route,
                status,
                outcome,
                principal,
                request_id,
                None if detail is None else json.dumps(detail),
            )
        )

    def start(self) -> None:
        if self.enabled and self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._flushing(), name="audit log writer")

    async def _flushing(self) -> None:
        while True:
            await asyncio.sleep(self.flush_seconds)
            await self.flush()

    async def flush(self) -> int:
        """Write what is waiting; returns how many records were written. On a failure they wait
        for the next flush (at most MAX_BUFFERED in all)."""
        async with self._lock:
            rows, self._rows = self._rows, []
            if not rows or self.pool is None:
                return 0
            records = [(r[0], uuid.uuid4(), datetime.fromtimestamp(r[1], UTC), *r[2:]) for r in rows]
            try:
                async with self.pool.acquire() as conn:
                    await conn.copy_records_to_table("audit_logs", records=records, columns=COLUMNS)
            except Exception as exc:
                self._rows[:0] = rows[: max(0, MAX_BUFFERED - len(self._rows))]
                log.warning(
                    "audit log not written yet (%d records wait): %s: %s", len(self._rows), type(exc).__name__, exc
                )
                return 0
            AUDIT_RECORDS.labels("written").inc(len(records))
            self._dropped_logged = False
            return len(records)

    @property
    def waiting(self) -> int:
        return len(self._rows)

    async def close(self) -> None:
        """Stop the periodic flush and write what is left (a clean stop loses nothing)."""
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        await self.flush()
