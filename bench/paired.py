"""Recall speed of two code trees served side by side on one embedded PostgreSQL, alternated in short
chunks so that a shared machine's load falls on both alike (bench/README.md, "Recall as cheap as
before").

    git worktree add /tmp/old <commit>                       # the code to compare against
    .venv/bin/python bench/paired.py /tmp/old .              # LoCoMo banks and a bank of 100k
    .venv/bin/python bench/paired.py /tmp/old . --scale 0    # the LoCoMo banks only
    .venv/bin/python bench/paired.py /tmp/old . --data /tmp/paired   # keep the database for the next run
    .venv/bin/python bench/paired.py /tmp/old . --new-env HINDSIGHT_API_AUDIT_ENABLED=false   # NEW without a feature

Each tree's server runs on this Python from the tree's own directory, so it imports that tree's
`hindsight`; both must accept the same database (NEW starts first and migrates it). A server that
finds vectors recorded as another embedding model's re-embeds them all before it serves (a model
name changes with the code, e.g. the Chinese gloss): keep a database (--data) only between trees of
one model name; a fresh one is made empty, before either server starts, so neither has any to
redo. The LoCoMo conversations are retained through a server of NEW, stopped before the two are
started, and a bank is grown to --scale memories beside them (bench/locomo.py's synthesis). Then, on the LoCoMo banks and on the big bank: every question goes
to each server in chunks of --chunk, which server goes first alternating, for the sequential p50
and p95, each chunk's p50 and p95 as a ratio to OLD's (the median is printed), and the server's and
PostgreSQL's CPU a recall; 16-client phases of --per-round recalls alternate, --rounds each, for the
recalls a second and the median of NEW / OLD over the pairs; and each server's peak RSS. Every
query text is new to the server that gets it (locomo.Fresh), so every recall embeds its query.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

import asyncpg
import psutil

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))
sys.path.insert(0, str(HERE))
import locomo as L  # noqa: E402

from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.testing import Server, machine  # noqa: E402

BIG = "scale_bank"


def serve(tree: Path, url: str, env: dict | None = None) -> Server:
    """A server of the code in `tree` (the current directory is first on `python -m`'s path), with
    the settings `env` beside the database's."""
    here = os.getcwd()
    os.chdir(tree)
    try:
        settings = {"HINDSIGHT_API_DATABASE_URL": url, "HINDSIGHT_API_LOG_LEVEL": "warning", **(env or {})}
        return Server(settings).start(timeout=300)
    finally:
        os.chdir(here)


def cpu(proc: psutil.Process) -> float:
    """CPU seconds of a process and of its children that have ended."""
    t = proc.cpu_times()
    return t.user + t.system + t.children_user + t.children_system


def cluster_cpu(postmaster: int) -> float:
    """CPU seconds of the PostgreSQL cluster: the postmaster, its backends and those that ended."""
    root = psutil.Process(postmaster)
    total = 0.0
    for p in [root, *root.children(recursive=True)]:
        try:
            total += cpu(p)
        except psutil.Error:  # a backend that ended since; the postmaster counts it
            pass
    return total


def ms(seconds: float) -> float:
    return round(seconds * 1000, 2)


async def sequential(names, servers, clients, rss, postmaster, jobs, chunk) -> dict:
    lat: dict = {k: [] for k in names}
    used = {k: [0.0, 0.0, 0] for k in names}  # server CPU, PostgreSQL CPU, recalls
    chunks = []
    for i in range(0, len(jobs), chunk):
        part = jobs[i : i + chunk]
        got = {}
        for k in names if (i // chunk) % 2 == 0 else names[::-1]:
            proc = psutil.Process(servers[k].proc.pid)
            s0, p0 = cpu(proc), cluster_cpu(postmaster)
            xs = [(await L.timed_recall(clients[k], b, q, w))[0] for b, q, w in part]
            used[k][0] += cpu(proc) - s0
            used[k][1] += cluster_cpu(postmaster) - p0
            used[k][2] += len(part)
            rss[k].sample()
            lat[k] += xs
            got[k] = (L.pct(xs, 50), L.pct(xs, 95))
        chunks.append(got)
    old = names[0]
    out = {}
    for k in names:
        out[k] = {
            "p50_ms": ms(L.pct(lat[k], 50)),
            "p95_ms": ms(L.pct(lat[k], 95)),
            "server_cpu_ms": ms(used[k][0] / used[k][2]),
            "postgres_cpu_ms": ms(used[k][1] / used[k][2]),
        }
        if k != old:
            out[k]["chunk_ratio_p50"] = round(statistics.median(c[k][0] / c[old][0] for c in chunks), 3)
            out[k]["chunk_ratio_p95"] = round(statistics.median(c[k][1] / c[old][1] for c in chunks), 3)
    return out


async def concurrent(names, clients, rss, jobs, rounds, per_round) -> dict:
    per_s: dict = {k: [] for k in names}
    for r in range(rounds):
        part = [jobs[(r * per_round + j) % len(jobs)] for j in range(per_round)]
        for k in names if r % 2 == 0 else names[::-1]:
            qps, _ = await L.concurrent(clients[k], part, 16, rss[k])
            per_s[k].append(round(qps, 1))
    old = names[0]
    out = {k: {"per_s": v, "median_per_s": round(statistics.median(v), 1)} for k, v in per_s.items()}
    for k in names[1:]:
        out[k]["median_ratio"] = round(statistics.median(a / b for a, b in zip(per_s[k], per_s[old])), 3)
    return out


async def prepare(url: str, new: Server, scale: int, convs: list) -> None:
    """The LoCoMo banks retained through NEW and the big bank grown, unless the database has them."""
    conn = await asyncpg.connect(url)
    try:
        have = await conn.fetchval("SELECT count(*) FROM banks WHERE id = ANY($1::text[])", [L.bank_of(convs[0]), BIG])
    finally:
        await conn.close()
    if have < 1:
        async with L.Client(new.url) as c:
            n, dt = await L.retain_all(c, convs, L.RSS(new.proc.pid))
        print(f"retained {n} turns in {dt:.0f} s", flush=True)
    if scale and have < 2:
        await L.synthesize(url, BIG, scale, [L.bank_of(c) for c in convs])


async def main(a) -> None:
    names, trees = ["old", "new"], {"old": Path(a.old).resolve(), "new": Path(a.new).resolve()}
    data = Path(a.data) if a.data else Path(tempfile.mkdtemp(prefix="hindsight-bench-paired-"))
    pg = EmbeddedPostgres(data, cleanup="stop" if a.data else "delete")
    url = pg.start()
    out: dict = {
        "machine": machine(),
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "trees": {k: str(v) for k, v in trees.items()},
    }
    out["load_average_before"] = [round(x, 2) for x in os.getloadavg()]
    servers: dict = {}
    try:
        env = dict(kv.split("=", 1) for kv in a.new_env)
        convs = list(L.locomo.locomo_conversations())
        # A server of NEW migrates the database and retains the conversations, then stops: the two
        # servers measured both start on the data as it is. Measured by the one that retained, NEW
        # was ~5% more CPU a recall and ~1% fewer recalls a second than the same code beside it
        # (bench/README.md, "One plan for the walk and the word counts").
        # OLD starts before any memory is stored, so a tree of another model name re-embeds none.
        first = serve(trees["new"], url, env)
        try:
            servers["old"] = serve(trees["old"], url)
            await prepare(url, first, a.scale, convs)
        finally:
            first.stop()
        servers["new"] = serve(trees["new"], url, env)
        questions, last = L.asked(convs)
        jobs = [(L.bank_of(q), q["question"], last[q["sample_id"]]) for q in questions]
        big = [(BIG, q["question"], None) for q in questions[:: max(1, len(questions) // 300)]]
        rss = {k: L.RSS(servers[k].proc.pid) for k in names}
        clients = {k: await L.Client(servers[k].url).__aenter__() for k in names}
        try:
            for b, q, w in jobs[:30] + (big[:20] if a.scale else []):  # warm both alike
                for k in names:
                    await L.timed_recall(clients[k], b, q, w)
            phases = [("locomo", jobs, jobs)]
            if a.scale:
                phases.append((f"at_{a.scale}", big, [j for j in big for _ in L.VARIANTS]))
            for name, seq_jobs, conc_jobs in phases:
                out[f"{name}_sequential"] = await sequential(names, servers, clients, rss, pg.pid, seq_jobs, a.chunk)
                print(name, "sequential", json.dumps(out[f"{name}_sequential"]), flush=True)
                out[f"{name}_16_clients"] = await concurrent(names, clients, rss, conc_jobs, a.rounds, a.per_round)
                print(name, "16 clients", json.dumps(out[f"{name}_16_clients"]), flush=True)
        finally:
            for c in clients.values():
                await c.__aexit__(None, None, None)
        for r in rss.values():
            r.sample()
        out["peak_rss_mb"] = {k: round(r.peak / 2**20) for k, r in rss.items()}
        out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    finally:
        for s in servers.values():
            s.stop()
        pg.stop()
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("old", help="the code tree to compare against")
    ap.add_argument("new", help="the code tree measured")
    ap.add_argument("--scale", type=int, default=100_000, help="grow a bank to this many memories (0: skip)")
    ap.add_argument("--chunk", type=int, default=20, help="recalls each server answers in turn, sequentially")
    ap.add_argument("--rounds", type=int, default=6, help="16-client phases of each server")
    ap.add_argument("--per-round", type=int, default=200, help="recalls in a 16-client phase")
    ap.add_argument(
        "--new-env",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="a setting of NEW's server (repeatable), e.g. HINDSIGHT_API_AUDIT_ENABLED=false to leave out a"
        " feature OLD did not have",
    )
    ap.add_argument("--data", default="", help="keep the database here (reused by the next run)")
    asyncio.run(main(ap.parse_args()))
