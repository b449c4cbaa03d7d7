"""The embedded PostgreSQL's buffer cache on huge pages (db/hugepages.py): the server can't
reserve them (that takes root and is the machine's to decide), so it says at start-up whether the
cache is on them and, if not, how many would do, as PostgreSQL itself computes it."""

from __future__ import annotations

import logging
import sys
from pathlib import Path

import asyncpg
import pytest

from hindsight.db import hugepages

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="huge pages as Linux reserves them")


def reserved() -> int:
    return int(Path("/proc/sys/vm/nr_hugepages").read_text())


async def test_the_start_up_line_says_how_many_pages_would_hold_the_cache(pg_url, caplog):
    conn = await asyncpg.connect(pg_url)
    try:
        needed = await conn.fetchval("SHOW shared_memory_size_in_huge_pages")
        actual = await conn.fetchval("SHOW huge_pages_status")
    finally:
        await conn.close()
    with caplog.at_level(logging.INFO, logger="hindsight.db"):
        status = await hugepages.report(pg_url)
    assert status == actual
    lines = [r.getMessage() for r in caplog.records if r.name == "hindsight.db"]
    if actual == "off":
        assert int(needed) > 0
        assert any(f"sysctl vm.nr_hugepages={needed}" in line and "4 kB pages" in line for line in lines), lines
    else:  # a machine that reserved them for this test run's database
        assert reserved() > 0
        assert any("is on huge pages" in line for line in lines), lines


async def test_a_database_that_cannot_be_reached_is_not_an_error(caplog):
    with caplog.at_level(logging.INFO, logger="hindsight.db"):
        assert await hugepages.report("postgresql://postgres@/postgres?host=/nonexistent-dir") is None
    assert not [r for r in caplog.records if r.levelno >= logging.WARNING]
