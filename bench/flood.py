"""One bank's flood: a client's recalls on a quiet bank, alone and while N clients recall from
another bank as fast as they can (every query new, lb.Fresh). Prints the quiet bank's p50/p95
and the flooded bank's recalls per second; the server's per-bank gate
(HINDSIGHT_API_BANK_CONCURRENCY) is what keeps the first low.

    .venv/bin/python bench/flood.py                        # 64 clients, 15 s a phase
    .venv/bin/python bench/flood.py --bank-concurrency 1024   # the gate as good as off
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sys
import tempfile
import time
from pathlib import Path

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo as lb  # noqa: E402  (bench/locomo.py: data, timing and reporting helpers)


async def quiet_client(url: str, questions: list[str], until: float, lat: list[float]) -> None:
    """Recalls on bank `quiet`, one at a time with a short pause, as an agent asks."""
    async with httpx.AsyncClient(base_url=url, timeout=300) as c:
        while time.perf_counter() < until:
            t0 = time.perf_counter()
            r = await c.post("/v1/banks/quiet/recall", json={"query": lb.FRESH(random.choice(questions))})
            r.raise_for_status()
            lat.append(time.perf_counter() - t0)
            await asyncio.sleep(0.02)


async def flood_client(url: str, questions: list[str], until: float, done: list[int]) -> None:
    async with httpx.AsyncClient(base_url=url, timeout=300) as c:
        while time.perf_counter() < until:
            r = await c.post("/v1/banks/busy/recall", json={"query": lb.FRESH(random.choice(questions))})
            r.raise_for_status()
            done.append(1)


async def main(args) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-flood-"))
    pg = lb.EmbeddedPostgres(tmp, cleanup="delete")
    env = {
        "HINDSIGHT_API_DATABASE_URL": pg.start(),
        "HINDSIGHT_API_DB_POOL_MAX": "40",
        "HINDSIGHT_API_LOG_LEVEL": "warning",
        "HINDSIGHT_API_BANK_CONCURRENCY": str(args.bank_concurrency),
    }
    server = lb.Server(env).start(timeout=180)
    rows = []
    try:
        convs = list(lb.locomo.locomo_conversations())[:2]
        texts = [it["content"] for c in convs for s in lb.turn_items(c) for it in s][:400]
        questions = [q["question"] for q in lb.locomo.locomo_questions() if q["category"] in lb.CATS][:400]
        async with httpx.AsyncClient(base_url=server.url, timeout=300) as rest:
            for bank in ("busy", "quiet"):
                r = await rest.post(f"/v1/banks/{bank}/memories", json={"items": [{"content": t} for t in texts]})
                r.raise_for_status()
        for flood in (0, args.clients):
            lat: list[float] = []
            done: list[int] = []
            until = time.perf_counter() + args.seconds
            await asyncio.gather(
                quiet_client(server.url, questions, until, lat),
                *(flood_client(server.url, questions, until, done) for _ in range(flood)),
            )
            rows.append((flood, len(done) / args.seconds, lb.latency(lat), len(lat)))
    finally:
        server.stop()
        pg.stop()
    print(
        "\n== Hindsight: one bank's flood ==",
        lb.machine(),
        time.strftime("%Y-%m-%d"),
        f"bank_concurrency={args.bank_concurrency}",
    )
    print(
        f"{'flooding clients':>16} {'flooded bank recalls/s':>23} {'quiet bank p50 ms':>18} {'p95 ms':>7} {'recalls':>8}"
    )
    for flood, per_s, lat, n in rows:
        print(f"{flood:>16} {per_s:>23.1f} {lat['ms_p50']:>18} {lat['ms_p95']:>7} {n:>8}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", type=int, default=64, help="clients flooding the busy bank")
    ap.add_argument("--seconds", type=float, default=15, help="length of each phase")
    ap.add_argument(
        "--bank-concurrency", type=int, default=0, help="HINDSIGHT_API_BANK_CONCURRENCY of the server (0: four a core)"
    )
    asyncio.run(main(ap.parse_args()))
