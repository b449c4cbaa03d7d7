"""Whether the embedded PostgreSQL's buffer cache sits on huge pages, said once at start-up.

A recall on a large bank touches ~1,000 pages of the buffer cache at random (the keyword arm's
candidate rows, the vector index's neighbours, the details), and on 4 kB pages nearly each touch
is a TLB miss as well as a cache miss; in a virtual machine a TLB miss walks two page tables. With
the buffer cache on 2 MB pages PostgreSQL spent 7-9% less CPU a recall on a 100,000-memory bank,
and one server process served 4% more recalls a second (bench/README.md, "Huge pages for the
buffer cache").

PostgreSQL uses them by itself (`huge_pages = try`, its default) when the kernel has enough
reserved, which takes root (`sysctl vm.nr_hugepages`), so the server cannot and does not do it:
it says how many pages would do (PostgreSQL computes that: shared_memory_size_in_huge_pages), on
Linux, for the embedded PostgreSQL it started. An external PostgreSQL is its operator's to tune.
"""

from __future__ import annotations

import logging
import sys

import asyncpg

from .sql import Q

log = logging.getLogger("hindsight.db")


async def report(url: str) -> str | None:
    """Log whether the buffer cache is on huge pages; returns PostgreSQL's `huge_pages_status`
    ("on", "off", or None when it does not say: before PostgreSQL 17, or the check failed)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        conn = await asyncpg.connect(url)
        try:
            row = await conn.fetchrow(Q.huge_pages_status)
        finally:
            await conn.close()
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        log.debug("huge pages status not read: %s", exc)
        return None
    status, needed, size = row["status"], row["needed"], row["size"]
    if status == "on":
        log.info("the embedded PostgreSQL's buffer cache (%s) is on huge pages", size)
    elif status == "off" and needed and needed.isdigit() and int(needed) > 0:
        log.info(
            "the embedded PostgreSQL's buffer cache (%s) is on 4 kB pages: reserving %s huge pages "
            "(as root: sysctl vm.nr_hugepages=%s, before the server starts) cuts its CPU a recall on a "
            "large bank by 7-9%% (docs/running.md, 'Huge pages')",
            size,
            needed,
            needed,
        )
    return status
