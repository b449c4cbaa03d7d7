"""The capacity model of docs/scaling.md, measured: CPU per recall and per retained turn in the
server process and in PostgreSQL, memory per server process, database bytes per memory and per
bank, and connections per process; each in three set-ups alternated round by round on one
primary and its streaming standby (hindsight/testing.py, StreamingPair):

- `direct`: the server on the primary, as one machine runs it;
- `replica`: the same with HINDSIGHT_API_READ_DATABASE_URL on the standby (reads go there once it
  has replayed the bank's last write; each read looks the position up on the primary first);
- `pooled`: through PgBouncer in transaction pooling mode (no statement kept prepared).

    .venv/bin/python bench/capacity.py [--rounds 2] [--recalls 400] [--turns 300] [--clients 8]

A retained turn is one LoCoMo turn in a request of its own, as an agent retains a conversation;
recalls are LoCoMo questions, each embedded afresh (locomo.Fresh), by `--clients` clients.
PostgreSQL's CPU is its postmasters' and their backends' (this pair's only), split by node.
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
import uuid
from pathlib import Path

import asyncpg
import psutil

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "bench"))
import locomo as lb  # noqa: E402  (bench/locomo.py: data, client, timing helpers)

from hindsight.testing import PgBouncer, Server, StreamingPair, machine  # noqa: E402

SETUPS = ("direct", "replica", "pooled")
TABLES_OF_A_BANK = (
    "memories",
    "memory_terms",
    "memory_documents",
    "entities",
    "memory_entities",
    "bank_lexemes",
    "banks",
    "bank_positions",
)


class PostgresCpu:
    """CPU seconds of one PostgreSQL (its postmaster, the children it reaped, its live children)."""

    def __init__(self, data: Path):
        self.postmaster = psutil.Process(int((data / "postmaster.pid").read_text().split()[0]))

    def seconds(self) -> float:
        t = self.postmaster.cpu_times()
        total = t.user + t.system + t.children_user + t.children_system
        for child in self.postmaster.children():
            try:
                c = child.cpu_times()
                total += c.user + c.system
            except psutil.Error:
                pass
        return total


def process_cpu(pid: int) -> float:
    t = psutil.Process(pid).cpu_times()
    return t.user + t.system


async def connections(url: str) -> dict:
    conn = await asyncpg.connect(url)
    try:
        rows = await conn.fetch(
            "SELECT client_addr IS NULL AND client_port IS NULL AS local, count(*) AS n FROM pg_stat_activity "
            "WHERE datname = 'hindsight' AND pid <> pg_backend_pid() GROUP BY 1"
        )
    finally:
        await conn.close()
    return {"backends": sum(r["n"] for r in rows)}


async def sizes(url: str) -> dict:
    """Bytes of the tables (with indexes and TOAST) that grow with memories and banks."""
    conn = await asyncpg.connect(url)
    try:
        out = {t: await conn.fetchval("SELECT pg_total_relation_size($1::regclass)", t) for t in TABLES_OF_A_BANK}
        out["memories_rows"] = await conn.fetchval("SELECT count(*) FROM memories")
        out["banks_rows"] = await conn.fetchval("SELECT count(*) FROM banks")
    finally:
        await conn.close()
    return out


def env_for(setup: str, pair: StreamingPair, bouncer: PgBouncer) -> dict:
    env = {
        "HINDSIGHT_API_LOG_LEVEL": "warning",
        "HINDSIGHT_API_DATABASE_URL": pair.url("primary"),
        "HINDSIGHT_API_WORKER_CONCURRENCY": "0",  # retains here are synchronous; nothing queued
    }
    if setup == "replica":
        env["HINDSIGHT_API_READ_DATABASE_URL"] = pair.url("standby")
    if setup == "pooled":
        env.update(
            HINDSIGHT_API_DATABASE_URL=bouncer.url(),
            HINDSIGHT_API_MIGRATION_DATABASE_URL=pair.url("primary"),
            HINDSIGHT_API_DB_POOL_MODE="transaction",
        )
    return env


async def measure(setup: str, server: Server, pair: StreamingPair, args, turns: list, questions: list) -> dict:
    primary, standby = PostgresCpu(pair.folder / "primary"), PostgresCpu(pair.folder / "standby")
    pid = server.proc.pid
    out: dict = {"setup": setup}
    async with lb.Client(server.url) as client:
        bank = f"cap_{setup}_{uuid.uuid4().hex[:6]}"
        # Retain: one turn a request, `clients` at a time.
        queue = list(turns)
        c0, p0, s0, t0 = process_cpu(pid), primary.seconds(), standby.seconds(), time.perf_counter()

        async def retainer():
            while queue:
                item = queue.pop()
                (await client.post(f"/v1/banks/{bank}/memories", json=item)).raise_for_status()

        await asyncio.gather(*(retainer() for _ in range(args.clients)))
        n = len(turns)
        out["retain"] = {
            "turns": n,
            "per_s": round(n / (time.perf_counter() - t0), 1),
            "server_cpu_ms": round((process_cpu(pid) - c0) * 1000 / n, 2),
            "primary_cpu_ms": round((primary.seconds() - p0) * 1000 / n, 2),
            "standby_cpu_ms": round((standby.seconds() - s0) * 1000 / n, 2),
        }
        # Recall: LoCoMo questions on the conversation banks, each embedded afresh.
        jobs = [(b, q, None) for b, q in questions]
        for bank_id, q, _ in jobs[:20]:  # warm: pools opened, plans cached
            (await client.post(f"/v1/banks/{bank_id}/recall", json={"query": lb.FRESH(q)})).raise_for_status()
        c0, p0, s0 = process_cpu(pid), primary.seconds(), standby.seconds()
        qps, lat = await lb.concurrent(client, jobs, args.clients)
        n = len(jobs)
        out["recall"] = {
            "recalls": n,
            "per_s": round(qps, 1),
            "p50_ms": round(statistics.median(lat) * 1000, 1),
            "server_cpu_ms": round((process_cpu(pid) - c0) * 1000 / n, 2),
            "primary_cpu_ms": round((primary.seconds() - p0) * 1000 / n, 2),
            "standby_cpu_ms": round((standby.seconds() - s0) * 1000 / n, 2),
        }
        metrics = (await client.get("/metrics")).content.decode()
        out["reads"] = {
            line.split("{")[1].split("}")[0]: float(line.split()[-1])
            for line in metrics.splitlines()
            if line.startswith(("hindsight_db_reads_total{", "hindsight_db_read_fallbacks_total{"))
        }
    out["server_rss_mb"] = round(psutil.Process(pid).memory_info().rss / 2**20)
    out["connections"] = {
        "primary": await connections(pair.url("primary")),
        "standby": await connections(pair.url("standby")),
    }
    return out


async def per_bank(server: Server, pair: StreamingPair, banks: int) -> dict:
    """Database bytes a bank costs: `banks` banks of one short memory each."""
    before = await sizes(pair.url("primary"))
    async with lb.Client(server.url) as client:
        prefix = uuid.uuid4().hex[:6]
        queue = list(range(banks))

        async def one():
            while queue:
                i = queue.pop()
                item = {"content": f"Note {i}: the tide turned at noon."}
                (await client.post(f"/v1/banks/b{prefix}_{i}/memories", json=item)).raise_for_status()

        await asyncio.gather(*(one() for _ in range(8)))
    after = await sizes(pair.url("primary"))
    grown = {t: after[t] - before[t] for t in TABLES_OF_A_BANK}
    return {"banks": banks, "bytes_per_bank": round(sum(grown.values()) / banks), "by_table": grown}


async def main(args) -> None:
    steal = lb.Steal()
    folder = Path(tempfile.mkdtemp(prefix="hindsight-capacity-"))
    pair = StreamingPair(folder).start()
    bouncer = PgBouncer(pair, pool_size=20).start()
    out: dict = {"machine": machine(), "date": time.strftime("%Y-%m-%d"), "load_before": os.getloadavg(), "runs": []}
    try:
        convs = list(lb.locomo.locomo_conversations())
        questions = [
            (lb.bank_of(q), q["question"])
            for q in lb.locomo.locomo_questions()
            if q["category"] in lb.CATS and q["evidence"]
        ][:: max(1, 1986 // args.recalls)][: args.recalls]
        turns = [
            {k: v for k, v in item.items() if k != "document_id"}
            for conv in convs[1:3]
            for session in lb.turn_items(conv)
            for item in session
        ][: args.turns]
        # The conversation banks recalls read, retained once (batches), and what they weigh.
        server = Server(env_for("direct", pair, bouncer)).start(timeout=300)
        try:
            async with lb.Client(server.url) as client:
                print("retaining LoCoMo's conversations ...", flush=True)
                await lb.retain_all(client, convs, lb.RSS(server.proc.pid))
            out["database"] = await sizes(pair.url("primary"))
            out["per_bank"] = await per_bank(server, pair, args.banks)
        finally:
            server.stop()
        for r in range(args.rounds):
            for setup in SETUPS:
                server = Server(env_for(setup, pair, bouncer)).start(timeout=300)
                try:
                    row = await measure(setup, server, pair, args, turns, questions)
                finally:
                    server.stop()
                row["round"] = r + 1
                out["runs"].append(row)
                print(json.dumps(row), flush=True)
        out["cpu_steal_percent"] = steal.percent()
        out["load_after"] = os.getloadavg()
    finally:
        bouncer.stop()
        pair.stop()
    db = out["database"]
    per_memory = sum(db[t] for t in TABLES_OF_A_BANK) / db["memories_rows"]
    out["bytes_per_memory"] = round(per_memory)
    print(f"\n{out['machine']}; load average {out['load_before']} before, {out.get('load_after')} after")
    print(
        f"database: {per_memory:.0f} bytes a memory ({per_memory * 100_000 / 2**20:.0f} MB per 100k memories), "
        f"a bank of one short memory {out['per_bank']['bytes_per_bank']} bytes"
    )
    for setup in SETUPS:
        rows = [r for r in out["runs"] if r["setup"] == setup]

        def med(part: str, key: str, rows=rows) -> float:
            return round(statistics.median(r[part][key] for r in rows), 2)

        print(
            f"{setup:8} recall: server {med('recall', 'server_cpu_ms')} ms CPU, primary {med('recall', 'primary_cpu_ms')}, "
            f"standby {med('recall', 'standby_cpu_ms')}, {med('recall', 'per_s')}/s, p50 {med('recall', 'p50_ms')} ms | "
            f"retained turn: server {med('retain', 'server_cpu_ms')} ms, primary {med('retain', 'primary_cpu_ms')}, "
            f"standby {med('retain', 'standby_cpu_ms')}, {med('retain', 'per_s')}/s | RSS {rows[-1]['server_rss_mb']} MB, "
            f"backends {rows[-1]['connections']}"
        )
    results = ROOT / "bench" / "results"
    results.mkdir(exist_ok=True)
    path = results / f"capacity-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(out, indent=2))
    print(f"saved {path}")


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--recalls", type=int, default=400)
    ap.add_argument("--turns", type=int, default=300)
    ap.add_argument("--clients", type=int, default=8)
    ap.add_argument("--banks", type=int, default=500)
    asyncio.run(main(ap.parse_args()))
