"""Whether the embedded PostgreSQL's buffer cache sits on huge pages, said at start-up.

A recall on a large bank touches ~1,000 pages of the buffer cache at random (the keyword arm's
candidate rows, the vector index's neighbours, the details), and on regular pages nearly each touch
is a TLB miss as well as a cache miss; in a virtual machine a TLB miss walks two page tables. With
the buffer cache on 2 MB pages PostgreSQL spends less CPU a recall on a large bank (measured in
bench/README.md, "Huge pages for the buffer cache").

PostgreSQL uses them by itself (`huge_pages = try`, its default) when the kernel has enough
reserved, which takes root (`sysctl vm.nr_hugepages`), so the server cannot and does not do it:
it says how many pages would do (PostgreSQL computes that: shared_memory_size_in_huge_pages), on
Linux, for the embedded PostgreSQL it started. An external PostgreSQL is its operator's to tune.
Each server process says it (HINDSIGHT_API_WORKERS), at INFO.
"""

from __future__ import annotations

import logging
import sys

import asyncpg

from hindsight.db.sql import Q

log = logging.getLogger("hindsight.db")


def advice(status: str | None, setting: str | None, needed: str | None, size: str | None) -> str | None:
    """The start-up line for PostgreSQL's huge_pages_status, huge_pages, the huge pages its
    shared memory would take and that memory's size; None when there is nothing to say (no status
    before PostgreSQL 17, "unknown", huge pages turned off by the operator, or a kernel without
    them: -1 pages)."""
    if status == "on":
        return f"the embedded PostgreSQL's shared memory ({size}, mostly its buffer cache) is on huge pages"
    try:
        pages = int(needed or "")
    except ValueError:
        return None
    if status != "off" or setting != "try" or pages <= 0:
        return None
    return (
        f"the embedded PostgreSQL's shared memory ({size}, mostly its buffer cache) is on regular pages: "
        f"{pages} huge pages more in the machine's pool (as root: raise vm.nr_hugepages by {pages}, then "
        "restart every hindsight process on this data directory, which share one PostgreSQL) cut its CPU "
        "a recall on a large bank by 7-9% (docs/running.md, 'Huge pages')"
    )


async def report(url: str) -> str | None:
    """Log whether the shared memory is on huge pages; returns PostgreSQL's `huge_pages_status`
    ("on", "off", "unknown"), or None when it was not read (not Linux, PostgreSQL before 17, or
    the statement failed: this is advice, never a reason to fail start-up)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        conn = await asyncpg.connect(url)
        try:
            row = await conn.fetchrow(Q.huge_pages_status)
        finally:
            await conn.close()
        line = advice(row["status"], row["setting"], row["needed"], row["size"])
    except Exception as exc:  # advice only: never a reason to fail start-up
        log.debug("huge pages status not read: %s: %s", type(exc).__name__, exc)
        return None
    if line:
        log.info("%s", line)
    return row["status"]
