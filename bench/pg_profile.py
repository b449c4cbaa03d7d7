"""Where a recall's time goes in PostgreSQL: pg_stat_statements over a run of LoCoMo recalls,
each statement named as in hindsight/sql/*.sql, beside the server's own per-arm timings
(hindsight_recall_arm_seconds from /metrics).

    .venv/bin/python bench/pg_profile.py               # LoCoMo banks, then a 100k bank (~6 min)
    .venv/bin/python bench/pg_profile.py --scale 0     # LoCoMo banks only
"""

from __future__ import annotations

import argparse
import asyncio
import re
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import asyncpg
import httpx

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo as lb  # noqa: E402  (bench/locomo.py: data, timing and reporting helpers)

from hindsight.db.sql import Q  # noqa: E402


def _key(sql: str) -> str:
    """Whitespace folded, and literals and parameters alike ("?"): pg_stat_statements stores
    a statement with its constants replaced by $n."""
    return re.sub(r"'[^']*'|\$\d+|\b\d+\b", "?", re.sub(r"\s+", " ", sql)).strip()


def namer():
    """A statement's name from its text: the longest of our statements (up to its first slot)
    that the executed text starts with."""
    known = [(name, _key(re.split(r"/\*[a-z_]+\*/", getattr(Q, name))[0])) for name in Q.names()]
    known.sort(key=lambda x: -len(x[1]))

    def name(query: str) -> str:
        text = _key(query)
        for n, prefix in known:
            if prefix and text.startswith(prefix):
                return n
        return "other: " + text[:60]

    return name


async def statements(pg_url: str) -> list[dict]:
    conn = await asyncpg.connect(pg_url)
    try:
        rows = await conn.fetch(
            "SELECT query, calls, total_exec_time, total_plan_time, rows FROM pg_stat_statements"
            " WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())"
        )
        await conn.execute("SELECT pg_stat_statements_reset()")
    finally:
        await conn.close()
    name, out = namer(), defaultdict(lambda: {"calls": 0, "exec_ms": 0.0, "plan_ms": 0.0, "rows": 0})
    for r in rows:
        s = out[name(r["query"])]
        s["calls"] += r["calls"]
        s["exec_ms"] += r["total_exec_time"]
        s["plan_ms"] += r["total_plan_time"]
        s["rows"] += r["rows"]
    return sorted(({"name": k, **v} for k, v in out.items()), key=lambda s: -(s["exec_ms"] + s["plan_ms"]))


def arms(metrics_text: str) -> dict[str, tuple[float, float]]:
    """Per arm: (count, sum of seconds) from the Prometheus text."""
    found: dict[str, list[float]] = defaultdict(lambda: [0.0, 0.0])
    for line in metrics_text.splitlines():
        m = re.match(r'hindsight_recall_arm_seconds_(count|sum)\{arm="([a-z_]+)"\} ([0-9.e+-]+)', line)
        if m:
            found[m.group(2)][0 if m.group(1) == "count" else 1] = float(m.group(3))
    return {k: (v[0], v[1]) for k, v in found.items()}


def report(title: str, recalls: int, stats: list[dict], before: dict, after: dict) -> None:
    print(f"\n-- {title}: {recalls} recalls --")
    total = sum(s["exec_ms"] + s["plan_ms"] for s in stats)
    print(f"PostgreSQL time per recall: {total / recalls:.2f} ms (execution and planning, all statements)")
    print(f"{'statement':34s} {'calls/recall':>12s} {'exec ms':>8s} {'plan ms':>8s} {'rows':>6s} {'share':>6s}")
    for s in stats[:12]:
        per = s["calls"] / recalls
        if per < 0.01:
            continue
        print(
            f"{s['name'][:34]:34s} {per:12.2f} {s['exec_ms'] / s['calls']:8.2f} {s['plan_ms'] / s['calls']:8.2f}"
            f" {s['rows'] / s['calls']:6.0f} {100 * (s['exec_ms'] + s['plan_ms']) / total:5.0f}%"
        )
    print("server-side arm time (mean ms per recall, the query and its await):")
    for arm, (count, secs) in sorted(after.items()):
        c0, s0 = before.get(arm, (0.0, 0.0))
        if count > c0:
            print(f"  {arm:10s} {1000 * (secs - s0) / (count - c0):6.2f}")


async def run_phase(client, pg_url, title, jobs):
    await statements(pg_url)  # reset
    before = arms((await client.get("/metrics")).text)
    for bank, q, when in jobs:
        await lb.timed_recall(client, bank, q, when)
    after = arms((await client.get("/metrics")).text)
    report(title, len(jobs), await statements(pg_url), before, after)


async def main(args) -> None:
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-pgprof-"))
    first = lb.EmbeddedPostgres(tmp, cleanup="stop")
    conn = await asyncpg.connect(first.start())
    await conn.execute("ALTER SYSTEM SET shared_preload_libraries = 'pg_stat_statements'")
    await conn.execute("ALTER SYSTEM SET pg_stat_statements.track_planning = on")
    await conn.close()
    first.stop()
    pg = lb.EmbeddedPostgres(tmp, cleanup="delete")  # the same server, with the extension loaded
    pg_url = pg.start()
    conn = await asyncpg.connect(pg_url)
    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
    await conn.close()
    server = lb.Server({"HINDSIGHT_API_DATABASE_URL": pg_url, "HINDSIGHT_API_LOG_LEVEL": "warning"}).start()
    print("== PostgreSQL profile of recall ==", lb.machine(), time.strftime("%Y-%m-%d"))
    try:
        convs = list(lb.locomo.locomo_conversations())[: args.conversations]
        questions, last = lb.asked(convs)
        questions = questions[:: max(1, 1986 // args.queries)][: args.queries]
        async with httpx.AsyncClient(base_url=server.url, timeout=300) as client:
            await lb.retain_all(client, convs, lb.RSS(server.proc.pid))
            jobs = [(lb.bank_of(q), q["question"], last[q["sample_id"]]) for q in questions]
            for job in jobs[:20]:
                await lb.timed_recall(client, *job)
            await run_phase(client, pg_url, "LoCoMo banks (~600 memories each)", jobs)
            if args.scale:
                await lb.synthesize(pg_url, "scale_bank", args.scale, [lb.bank_of(c) for c in convs])
                big = [("scale_bank", q, None) for _, q, _ in jobs]
                for job in big[:20]:
                    await lb.timed_recall(client, *job)
                await run_phase(client, pg_url, f"one bank of {args.scale:,} memories", big)
    finally:
        server.stop()
        pg.stop()


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=100_000, help="also profile a bank of this many memories (0: skip)")
    ap.add_argument("--queries", type=int, default=200)
    ap.add_argument("--conversations", type=int, default=10)
    asyncio.run(main(ap.parse_args()))
