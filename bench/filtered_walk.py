"""A walk under a request's own conditions (its types) of a bank of 100,000 memories, as PostgreSQL
plans it on a shared connection and as recall runs it (a transaction of its own that plans it for
its values: engine/search/arms/running.py, fetch_walks), with the
planner's statistics as they are and as they would be beside a few hundred banks
(`n_distinct` of bank_id set to --banks, reset after). Prints each way's median and largest time
a call over --calls queries, and its backend's CPU a call (bench/README.md, "A filtered walk
planned for its values").

    .venv/bin/python bench/paired.py /tmp/old . --data /tmp/paired   # once: a database with the bank
    .venv/bin/python bench/filtered_walk.py /tmp/paired
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from pathlib import Path

import asyncpg
import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import paired  # noqa: E402

from hindsight.db.binder import Binder  # noqa: E402
from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.db.pool import create_pool  # noqa: E402
from hindsight.engine.search.arms.running import fetch_ids, fetch_walks  # noqa: E402
from hindsight.engine.search.arms.semantic import semantic_sql  # noqa: E402
from hindsight.engine.search.conditions import request_filters  # noqa: E402
from hindsight.engine.search.schemas import RecallRequest  # noqa: E402
from hindsight.testing import machine  # noqa: E402

BANK = paired.BIG  # bench/paired.py's big bank


async def measure(url: str, calls: int) -> None:
    shared, mine = await create_pool(url, 1, 1, "shared"), await create_pool(url, 1, 1, "shared")
    try:
        async with shared.acquire() as conn:
            vectors = [
                r[0]
                for r in await conn.fetch(
                    "SELECT embedding FROM memories WHERE bank_id = $1 ORDER BY id LIMIT $2", BANK, calls
                )
            ]
        f = request_filters(RecallRequest(query="x", types=["world", "experience"]))

        async def walks(pool, sql, *values):
            return (await fetch_walks(pool, [(sql, list(values))]))[0]

        for name, pool, run in (("shared connection", shared, fetch_ids), ("as recall runs it", mine, walks)):
            async with pool.acquire() as conn:
                pid = await conn.fetchval("SELECT pg_backend_pid()")
            backend = psutil.Process(pid)
            took, cpu = [], paired.cpu(backend)
            for v in vectors:
                p = Binder(BANK)
                sql = semantic_sql(p, p(v), f, sort=False)
                start = time.perf_counter()
                await run(pool, sql, *p.values)
                took.append((time.perf_counter() - start) * 1000)
            print(
                f"  {name:18s} median {statistics.median(took):7.1f} ms, largest {max(took):7.1f} ms,"
                f" backend CPU {(paired.cpu(backend) - cpu) / len(vectors) * 1000:7.1f} ms a call",
                flush=True,
            )
    finally:
        await shared.close()
        await mine.close()


async def main(a) -> None:
    pg = EmbeddedPostgres(Path(a.data), cleanup="stop")
    url = pg.start()
    print("== a filtered walk at 100,000 memories ==", machine(), time.strftime("%Y-%m-%d %H:%M"), flush=True)
    admin = await asyncpg.connect(url)
    try:
        if not await admin.fetchval("SELECT count(*) FROM memories WHERE bank_id = $1", BANK):
            raise SystemExit(f"{a.data} holds no bank {BANK}: make it with bench/paired.py --data {a.data}")
        print("statistics as they are:", flush=True)
        await measure(url, a.calls)
        await admin.execute(f"ALTER TABLE memories ALTER COLUMN bank_id SET (n_distinct = {int(a.banks)})")
        await admin.execute("ANALYZE memories")
        print(f"as beside {a.banks} banks (n_distinct of bank_id):", flush=True)
        await measure(url, a.calls)
    finally:
        await admin.execute("ALTER TABLE memories ALTER COLUMN bank_id RESET (n_distinct)")
        await admin.execute("ANALYZE memories")
        await admin.close()
        pg.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("data", help="a database directory bench/paired.py --data made (its 100,000-memory bank)")
    ap.add_argument("--calls", type=int, default=40, help="queries (the bank's own memories' vectors)")
    ap.add_argument("--banks", type=int, default=1000, help="the number of banks the statistics are set to")
    asyncio.run(main(ap.parse_args()))
