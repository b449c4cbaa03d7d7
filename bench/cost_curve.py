"""How recall's cost grows with a bank: sequential p50/p95 and 16-client throughput on one bank
grown step by step to each size (LoCoMo turns with perturbed embeddings, as bench/locomo.py's
100k bank), with the LoCoMo questions as queries. Every recall embeds its query (lb.Fresh: the same
questions are asked at every size), and the server's count of query vectors computed is printed
beside the recalls sent.

    .venv/bin/python bench/cost_curve.py                      # 1k, 10k, 100k (~5 min on 2 cores)
    .venv/bin/python bench/cost_curve.py --sizes 1000000      # 1M on its own (~15 min, ~6 GB disk)
    .venv/bin/python bench/cost_curve.py --workers 2          # served by HINDSIGHT_API_WORKERS=2
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo as lb  # noqa: E402  (bench/locomo.py: data, timing and reporting helpers)

from hindsight.engine.banks.sizes import TTL_SECONDS  # noqa: E402


async def measure(client, bank: str, questions: list[str], clients: int, rss) -> dict:
    for q in questions[:20]:  # warm the caches the way a serving bank is warm
        await lb.timed_recall(client, bank, q, None)
    seq = []
    for q in questions:
        dt, _ = await lb.timed_recall(client, bank, q, None)
        seq.append(dt)
    qps, lat = await lb.concurrent(client, [(bank, q, None) for q in questions for _ in lb.VARIANTS], clients, rss)
    return {
        "sequential": lb.latency(seq),
        f"clients_{clients}": {"per_s": round(qps, 1), **lb.latency(lat)},
    }


async def main(args) -> None:
    steal = lb.Steal()
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-curve-"))
    pg = lb.EmbeddedPostgres(tmp, cleanup="delete")
    pg_url = pg.start()
    env = {
        "HINDSIGHT_API_DATABASE_URL": pg_url,  # the pool as served, as bench/locomo.py
        "HINDSIGHT_API_LOG_LEVEL": "warning",
        "HINDSIGHT_API_WORKERS": str(args.workers),
    }
    server = lb.Server(env).start(timeout=180)
    rss = lb.RSS(server.proc.pid)
    sizes = sorted(int(x) for x in args.sizes.split(","))
    out: dict = {"machine": lb.machine(), "date": time.strftime("%Y-%m-%d"), "workers": args.workers, "curve": []}
    try:
        convs = list(lb.locomo.locomo_conversations())[: args.conversations]
        questions = [q["question"] for q in lb.locomo.locomo_questions() if q["category"] in lb.CATS and q["evidence"]][
            :: max(1, 1986 // args.queries)
        ][: args.queries]
        async with lb.Client(server.url) as client:
            print(f"retaining the LoCoMo turns the bank is grown from ({len(convs)} conversations) ...", flush=True)
            await lb.retain_all(client, convs, rss)
            mark = await lb.FRESH.mark(client) if args.workers == 1 else None
            have = 0
            for size in sizes:
                print(f"growing the bank to {size} memories ...", flush=True)
                await lb.synthesize(pg_url, "curve", size, [lb.bank_of(c) for c in convs], start=have)
                have = size
                # The server keeps a bank's size for TTL_SECONDS (engine/banks/sizes.py) to choose between
                # sorting its rows and walking the index; grown by COPY in less than that, the bank
                # would be ranked by its old size's plan for the first recalls.
                await asyncio.sleep(TTL_SECONDS)
                row = {"memories": size, **await measure(client, "curve", questions, args.clients, rss)}
                out["curve"].append(row)
                print(f"  {size:>9,}: {row}", flush=True)
            if qv := await lb.FRESH.since(client, mark):  # every recall should have embedded its query
                out["query_vectors"] = qv
        out["server_peak_rss_mb"] = round(rss.peak / 2**20)  # the largest server process (lb.RSS)
        out["cpu_steal_percent"] = steal.percent()
    finally:
        server.stop()
        pg.stop()
    print("\n== Hindsight recall cost curve ==", out["machine"], out["date"], f"workers={args.workers}")
    print(f"{'memories':>10} {'p50 ms':>8} {'p95 ms':>8} {f'{args.clients} clients/s':>14} {'p95 ms':>8}")
    for row in out["curve"]:
        c = row[f"clients_{args.clients}"]
        seq = row["sequential"]
        print(f"{row['memories']:>10,} {seq['ms_p50']:>8} {seq['ms_p95']:>8} {c['per_s']:>14} {c['ms_p95']:>8}")
    if "query_vectors" in out:
        print(lb.Fresh.line(out["query_vectors"]))
    print(f"CPU time taken by the hypervisor during the run (steal): {out['cpu_steal_percent']}%")
    name = "cost_curve" + ("" if args.workers == 1 else f"-workers{args.workers}")
    if max(sizes) > 100_000:
        name += f"-{max(sizes)}"
    dest = lb.ROOT / "bench" / "results"
    dest.mkdir(exist_ok=True)
    (dest / f"{name}.json").write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", default="1000,10000,100000", help="bank sizes, ascending, comma-separated")
    ap.add_argument("--workers", type=int, default=1, help="HINDSIGHT_API_WORKERS of the server")
    ap.add_argument("--clients", type=int, default=16)
    ap.add_argument("--queries", type=int, default=150, help="LoCoMo questions asked at each size")
    ap.add_argument("--conversations", type=int, default=10)
    asyncio.run(main(ap.parse_args()))
