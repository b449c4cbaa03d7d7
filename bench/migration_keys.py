"""How long migration 021 (every key of a bank's rows includes bank_id) takes on a large database:
a database migrated to 020 and filled with `--memories` memories in one bank (random unit
vectors, text of a few words), three entity links each, a fact source for every fifth, finished
operations and LLM usage rows; then the migrations that follow, timed, with the tables' sizes
before and after. The migration holds its locks until it commits, so the time is how long a
rolling upgrade's servers wait on those tables.

    .venv/bin/python bench/migration_keys.py [--memories 100000]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
import uuid
from pathlib import Path

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.db.pool import ensure_vector_extension, migrate  # noqa: E402
from hindsight.engine.memory.retain import COPY_COLUMNS  # noqa: E402
from hindsight.testing import machine  # noqa: E402

BEFORE = 20
TABLES = ("memories", "memory_entities", "fact_sources", "entities", "operations", "llm_usage")
WORDS = "harbour lantern orchard ferry meadow glacier canyon market library bridge tower river".split()


async def fill(url: str, n: int) -> None:
    conn = await asyncpg.connect(url)
    await register_vector(conn)
    try:
        await conn.execute("INSERT INTO banks (id) VALUES ('big')")
        rng = np.random.default_rng(21)
        for start in range(0, n, 5000):
            recs = []
            for i in range(start, min(n, start + 5000)):
                v = rng.normal(0, 1, 384).astype(np.float32)
                text = f"Note {i}: the {WORDS[i % 12]} by the {WORDS[(i // 12) % 12]} at {i % 97}."
                recs.append(
                    (uuid.uuid4(), "big", text, "world", "general", v / np.linalg.norm(v), None, None, None, [], "{}",
                     None, f"syn:{i // 20}", i % 20, None, [])
                )  # fmt: skip
            await conn.copy_records_to_table("memories", records=recs, columns=COPY_COLUMNS)
        await conn.execute(
            "INSERT INTO entities (bank_id, name, canonical, mention_count)"
            " SELECT 'big', 'entity ' || g, 'entity ' || g, 0 FROM generate_series(1, $1::int) g",
            n // 10,
        )
        await conn.execute(
            "INSERT INTO memory_entities (entity_id, memory_id)"
            " SELECT e.id, m.id FROM (SELECT id, row_number() OVER () AS r FROM memories) m"
            " JOIN (SELECT id, row_number() OVER () AS r FROM entities) e ON e.r IN (m.r % ($1::int) + 1,"
            " (m.r * 7) % ($1::int) + 1, (m.r * 13) % ($1::int) + 1) ON CONFLICT DO NOTHING",
            n // 10,
        )
        await conn.execute(
            "INSERT INTO fact_sources (fact_id, raw_id) SELECT a.id, b.id FROM"
            " (SELECT id, row_number() OVER () AS r FROM memories) a JOIN"
            " (SELECT id, row_number() OVER () AS r FROM memories) b ON b.r = a.r + 1 WHERE a.r % 5 = 0"
        )
        await conn.execute(
            "INSERT INTO operations (id, bank_id, type, status) SELECT gen_random_uuid(), 'big', 'retain', 'succeeded'"
            " FROM generate_series(1, $1::int)",
            n // 10,
        )
        await conn.execute(
            "INSERT INTO llm_usage (bank_id, operation, model) SELECT 'big', 'reflect', 'm' FROM generate_series(1, $1::int)",
            n // 10,
        )
        await conn.execute("VACUUM ANALYZE")
        await conn.execute("CHECKPOINT")
    finally:
        await conn.close()


async def table_sizes(url: str) -> dict:
    conn = await asyncpg.connect(url)
    try:
        return {t: await conn.fetchval("SELECT pg_total_relation_size($1::regclass)", t) for t in TABLES}
    finally:
        await conn.close()


async def main(args) -> None:
    pg = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="hindsight-migration-")), cleanup="delete")
    url = pg.start()
    try:
        await ensure_vector_extension(url, update=True)
        await migrate(url, until=BEFORE)
        print(f"{machine()}; load average {os.getloadavg()}", flush=True)
        t0 = time.perf_counter()
        await fill(url, args.memories)
        print(f"filled {args.memories} memories in {time.perf_counter() - t0:.0f} s", flush=True)
        before = await table_sizes(url)
        t0 = time.perf_counter()
        applied = await migrate(url)
        took = time.perf_counter() - t0
        after = await table_sizes(url)
        print(f"applied {', '.join(applied)} in {took:.1f} s")
        for t in TABLES:
            print(f"  {t:16} {before[t] / 2**20:8.1f} MB -> {after[t] / 2**20:8.1f} MB")
    finally:
        pg.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--memories", type=int, default=100_000)
    asyncio.run(main(ap.parse_args()))
