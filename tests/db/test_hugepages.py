"""The embedded PostgreSQL's shared memory on huge pages (db/hugepages.py): the server can't
reserve them (that takes root and is the machine's to decide), so it says at start-up whether the
buffer cache is on them and, if not, how many more the pool needs, as PostgreSQL computes it."""

from __future__ import annotations

import logging
import sys

import asyncpg
import pytest

from hindsight.db import hugepages
from hindsight.db.hugepages import advice


def test_the_advice_is_given_only_when_huge_pages_would_be_taken():
    assert "is on huge pages" in advice("on", "try", "1071", "2142MB")
    line = advice("off", "try", "1071", "2142MB")
    assert "raise vm.nr_hugepages by 1071" in line and "2142MB" in line
    assert advice("off", "off", "1071", "2142MB") is None  # the operator turned them off
    assert advice("off", "try", "-1", "2142MB") is None  # a kernel without huge pages
    assert advice("off", "try", "0", "2142MB") is None
    assert advice("unknown", "try", "1071", "2142MB") is None
    assert advice(None, None, None, None) is None  # PostgreSQL before 17: nothing to go by
    assert advice("off", "try", "", "2142MB") is None
    assert advice("off", "try", "²", "2142MB") is None  # digits int() refuses


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="huge pages as Linux reserves them")
async def test_the_start_up_line_says_what_postgresql_computes(pg_url, caplog):
    conn = await asyncpg.connect(pg_url)
    try:
        row = await conn.fetchrow(
            "SELECT current_setting('huge_pages_status') s, current_setting('huge_pages') h,"
            " current_setting('shared_memory_size_in_huge_pages') n, current_setting('shared_memory_size') z"
        )
    finally:
        await conn.close()
    with caplog.at_level(logging.INFO, logger="hindsight.db"):
        status = await hugepages.report(pg_url)
    assert status == row["s"]
    lines = [r.getMessage() for r in caplog.records if r.name == "hindsight.db"]
    expected = advice(row["s"], row["h"], row["n"], row["z"])
    assert lines == ([expected] if expected else [])


async def test_a_database_that_cannot_be_reached_is_not_an_error(caplog):
    with caplog.at_level(logging.DEBUG, logger="hindsight.db"):
        assert await hugepages.report("postgresql://postgres@/postgres?host=/nonexistent-dir") is None
    assert not [r for r in caplog.records if r.levelno >= logging.INFO]
