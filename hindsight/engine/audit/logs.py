"""Reading the audit log: pages of records, counts by time, an export as JSON lines, and the
pruning of records older than the log keeps."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from hindsight.db.binder import Binder
from hindsight.db.sql import Q, fill
from hindsight.engine.audit.schemas import (
    AuditBucket,
    AuditEntry,
    AuditList,
    AuditQuery,
    AuditStats,
    AuditStatsQuery,
)

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

COLUMNS = Q.audit_columns
# Records an export reads from the database at a time.
EXPORT_BATCH = 1_000
# Records one pruning statement removes at most (it runs again until none is left).
PRUNE_BATCH = 10_000
PERIODS = {"1d": (timedelta(days=1), "hour"), "7d": (timedelta(days=7), "day"), "30d": (timedelta(days=30), "day")}


def to_entry(r) -> AuditEntry:
    detail = r["detail"]
    return AuditEntry(
        id=str(r["id"]),
        bank_id=r["bank_id"] or None,
        started_at=r["started_at"],
        ended_at=r["started_at"] + timedelta(milliseconds=r["duration_ms"]),
        duration_ms=r["duration_ms"],
        transport=r["transport"],
        action=r["action"],
        method=r["method"],
        route=r["route"],
        status=r["status"],
        outcome=r["outcome"],
        principal=r["principal"],
        request_id=r["request_id"],
        detail=json.loads(detail) if isinstance(detail, str) else detail,
    )


def _conditions(query: AuditQuery, p: Binder) -> str:
    where = []
    for column in ("action", "transport", "principal", "outcome"):
        value = getattr(query, column)
        if value is not None:
            where.append(f"{column} = {p(value)}")
    if query.start_date is not None:
        where.append(f"started_at >= {p(query.start_date, 'timestamptz')}")
    if query.end_date is not None:
        where.append(f"started_at < {p(query.end_date, 'timestamptz')}")
    return "".join(f" AND {w}" for w in where)


async def list_audit_logs(rt: Runtime, bank_id: str | None, query: AuditQuery) -> AuditList:
    """A page of one bank's records, or (bank_id None) of every bank's, newest first."""
    if bank_id is None:
        page, every = Binder(query.limit, query.offset), Binder()
        listing = fill(Q.audit_list_all, columns=COLUMNS, where=_conditions(query, page))
        counting = fill(Q.audit_count_all, where=_conditions(query, every))
    else:
        page, every = Binder(bank_id, query.limit, query.offset), Binder(bank_id)
        listing = fill(Q.audit_list, columns=COLUMNS, where=_conditions(query, page))
        counting = fill(Q.audit_count, where=_conditions(query, every))
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(listing, *page.values)
        total = await conn.fetchval(counting, *every.values)
    return AuditList(
        bank_id=bank_id, items=[to_entry(r) for r in rows], total=total, limit=query.limit, offset=query.offset
    )


async def audit_stats(rt: Runtime, bank_id: str, query: AuditStatsQuery) -> AuditStats:
    """One bank's records of the period counted by operation, by hour (1d) or day (7d, 30d)."""
    span, trunc = PERIODS[query.period]
    now = datetime.now(UTC)
    start = (now - span).replace(minute=0, second=0, microsecond=0)
    if trunc == "day":
        start = start.replace(hour=0)
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(Q.audit_stats, bank_id, trunc, start, query.action)
    buckets: dict[datetime, dict[str, int]] = {}
    for r in rows:
        buckets.setdefault(r["t"], {})[r["action"]] = r["n"]
    return AuditStats(
        bank_id=bank_id,
        period=query.period,
        trunc=trunc,
        start=start,
        buckets=[AuditBucket(time=t, actions=a, total=sum(a.values())) for t, a in sorted(buckets.items())],
    )


async def export_audit_logs(
    rt: Runtime, bank_id: str | None, start: datetime | None, end: datetime | None
) -> AsyncIterator[bytes]:
    """One bank's records (or every bank's), oldest first, one JSON object a line, read from one
    snapshot in batches."""
    args: tuple = (start, end) if bank_id is None else (bank_id, start, end)
    sql = fill(Q.audit_export_all if bank_id is None else Q.audit_export, columns=COLUMNS)
    async with rt.pool.acquire() as conn, conn.transaction(isolation="repeatable_read", readonly=True):
        buf: list[str] = []
        async for (row,) in conn.cursor(sql, *args, prefetch=EXPORT_BATCH):
            entry = to_entry(_row(row))
            buf.append(entry.model_dump_json() + "\n")
            if len(buf) >= EXPORT_BATCH:
                yield "".join(buf).encode()
                buf = []
        if buf:
            yield "".join(buf).encode()


def _row(text: str) -> dict:
    """A record as row_to_json wrote it, with the types to_entry reads."""
    r = json.loads(text)
    r["started_at"] = datetime.fromisoformat(r["started_at"])
    return r


async def prune_audit_logs(rt: Runtime, days: int) -> int:
    """Remove every bank's records older than `days`; returns how many went."""
    removed = 0
    while True:
        async with rt.pool.acquire() as conn:
            status = await conn.execute(Q.audit_prune, days, PRUNE_BATCH)
        n = int(status.split()[-1])
        removed += n
        if n < PRUNE_BATCH:
            return removed
