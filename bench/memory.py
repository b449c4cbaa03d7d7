"""A server's resident memory through a LoCoMo run: when ready, after LoCoMo is retained, after
300 recalls one at a time, after every question sent by 16 clients (each sampled as
bench/locomo.py samples it), and the kernel's high-water mark (VmHWM) after each, which also
catches what a sample falls between (bench/README.md, "Where a server's memory goes").

    .venv/bin/python bench/memory.py                 # this tree
    .venv/bin/python bench/memory.py /tmp/old        # another tree (a git worktree), same database code

The server runs from `tree` (its `hindsight` first on the path) on a fresh embedded PostgreSQL.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import locomo as L  # noqa: E402

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.testing import Server, machine  # noqa: E402


def status(pid: int) -> dict:
    """VmRSS and VmHWM in MB."""
    with open(f"/proc/{pid}/status") as f:
        return {line.split(":")[0]: int(line.split()[1]) // 1024 for line in f if line.startswith(("VmRSS", "VmHWM"))}


async def main(a) -> None:
    pg = EmbeddedPostgres(Path(tempfile.mkdtemp(prefix="hindsight-bench-memory-")), cleanup="delete")
    url = pg.start()
    here = os.getcwd()
    os.chdir(a.tree)
    try:
        server = Server({"HINDSIGHT_API_DATABASE_URL": url, "HINDSIGHT_API_LOG_LEVEL": "warning"}).start(timeout=300)
    finally:
        os.chdir(here)
    out: dict = {"machine": machine(), "tree": str(Path(a.tree).resolve())}
    try:
        pid = server.proc.pid
        rss = L.RSS(pid)
        rss.sample()
        out["ready"] = {"sampled": rss.peak // 2**20, **status(pid)}
        convs = list(L.locomo.locomo_conversations())
        jobs = L.recall_jobs(convs)
        async with L.Client(server.url) as c:
            await L.retain_all(c, convs, rss)
            out["after_retain"] = {"sampled": rss.peak // 2**20, **status(pid)}
            for job in jobs[:300]:
                await L.timed_recall(c, *job)
                rss.sample()
            out["after_300_recalls"] = {"sampled": rss.peak // 2**20, **status(pid)}
            await L.concurrent(c, jobs, 16, rss)
            out["after_16_clients"] = {"sampled": rss.peak // 2**20, **status(pid)}
    finally:
        server.stop()
        pg.stop()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("tree", nargs="?", default=str(HERE.parent), help="the code tree whose server is measured")
    asyncio.run(main(ap.parse_args()))
