"""Mixed MCP load: N clients of the official MCP SDK, each on its own bank URL (`/mcp/<bank>/`),
each looping recall, recall, retain for a fixed time, as agents do. Prints calls per second,
latency (p50/p95/p99 by tool) and errors. Every recall is a text the server has not seen (lb.Fresh),
so each embeds its query; with one server process the server's count of query vectors computed is
printed beside the recalls sent.

    .venv/bin/python bench/mcp_load.py                       # 16 and 64 clients, 60 s each
    .venv/bin/python bench/mcp_load.py --clients 64 --workers 2
    .venv/bin/python bench/mcp_load.py --client raw          # JSON-RPC over plain HTTP, no SDK client

One process drives every client: with 64 of them the driver takes a share of the two cores too,
so the figures are the server's throughput under that competition, as on the machine in the issue.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import random
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import httpx
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

sys.path.insert(0, str(Path(__file__).resolve().parent))
import locomo as lb  # noqa: E402  (bench/locomo.py: data, timing and reporting helpers)


class RawClient:
    """JSON-RPC `tools/call` POSTs over plain HTTP, as the seed documents' curl calls send them:
    the server's share of the load without the SDK client's own work (it checks every result
    against the tool's output schema, more CPU than the server spends answering)."""

    HEADERS = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}

    def __init__(self, url: str, http: httpx.AsyncClient):
        self.url, self.http, self.ids = url, http, 0

    async def call_tool(self, name: str, args: dict) -> bool:
        """True when the call succeeded; a JSON-RPC error raises."""
        self.ids += 1
        call = {"jsonrpc": "2.0", "id": self.ids, "method": "tools/call", "params": {"name": name, "arguments": args}}
        r = (await self.http.post(self.url, headers=self.HEADERS, json=call)).json()
        if "error" in r:
            raise RuntimeError(r["error"].get("message"))
        return not r["result"].get("isError")


@contextlib.asynccontextmanager
async def connect(url: str, kind: str):
    """A function that calls a tool and says whether it succeeded (a JSON-RPC error raises)."""
    async with httpx.AsyncClient(timeout=120) as http:
        if kind == "raw":
            yield RawClient(url, http).call_tool
            return
        async with Client(streamable_http_client(url, http_client=http)) as c:

            async def call_tool(name: str, args: dict) -> bool:
                return not (await c.call_tool(name, args)).is_error

            yield call_tool


async def client_loop(
    url: str, kind: str, texts: list[str], questions: list[str], until: float, lat, errors, seed: int
):
    rng = random.Random(seed)
    async with connect(url, kind) as call_tool:
        i = 0
        while time.perf_counter() < until:
            tool = "retain" if i % 3 == 2 else "recall"
            # lb.FRESH: a question asked again is a new text for the server's query cache
            args = {"content": rng.choice(texts)} if tool == "retain" else {"query": lb.FRESH(rng.choice(questions))}
            t0 = time.perf_counter()
            try:
                if await call_tool(tool, args):
                    lat[tool].append(time.perf_counter() - t0)
                else:
                    errors[tool] += 1
            except Exception as exc:  # a transport error or a JSON-RPC error: counted, the loop goes on
                errors[f"{tool}: {type(exc).__name__}"] += 1
            i += 1


async def phase(server_url: str, kind: str, clients: int, seconds: float, texts, questions, cpu: lb.CpuSplit) -> dict:
    lat: dict = defaultdict(list)
    errors: dict = defaultdict(int)
    cpu.per_call(1)
    until = time.perf_counter() + seconds
    t0 = time.perf_counter()
    await asyncio.gather(
        *(
            client_loop(f"{server_url}/mcp/load_{i % 16}/", kind, texts, questions, until, lat, errors, i)
            for i in range(clients)
        )
    )
    took = time.perf_counter() - t0
    every = [x for xs in lat.values() for x in xs]
    return {
        "clients": clients,
        "calls_per_s": round(len(every) / took, 1),
        "all": lb.latency(every) | {"ms_p99": round(lb.pct(every, 99) * 1000, 1)},
        **{tool: {"calls": len(xs), **lb.latency(xs)} for tool, xs in sorted(lat.items())},
        "errors": dict(errors),
        **cpu.per_call(len(every)),
    }


async def main(args) -> None:
    steal = lb.Steal()
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-mcpload-"))
    pg = lb.EmbeddedPostgres(tmp, cleanup="delete")
    env = {
        "HINDSIGHT_API_DATABASE_URL": pg.start(),
        "HINDSIGHT_API_DB_POOL_MAX": "40",
        "HINDSIGHT_API_LOG_LEVEL": "warning",
        "HINDSIGHT_API_WORKERS": str(args.workers),
    }
    server = lb.Server(env).start(timeout=180)
    out = {
        "machine": lb.machine(),
        "date": time.strftime("%Y-%m-%d"),
        "workers": args.workers,
        "client": args.client,
        "phases": [],
    }
    try:
        convs = list(lb.locomo.locomo_conversations())[:2]
        texts = [it["content"] for c in convs for s in lb.turn_items(c) for it in s]
        questions = [q["question"] for q in lb.locomo.locomo_questions() if q["category"] in lb.CATS][:400]
        async with httpx.AsyncClient(base_url=server.url, timeout=300) as rest:
            for b in range(16):  # each bank starts with a conversation's worth of turns
                items = [{"content": t} for t in texts[b * 40 : b * 40 + 400]]
                (await rest.post(f"/v1/banks/load_{b}/memories", json={"items": items})).raise_for_status()
        cpu = lb.CpuSplit(server.proc.pid)
        for n in (int(x) for x in args.clients.split(",")):
            async with lb.Client(server.url) as rest:
                mark = await lb.FRESH.mark(rest) if args.workers == 1 else None
                row = await phase(server.url, args.client, n, args.seconds, texts, questions, cpu)
                if qv := await lb.FRESH.since(rest, mark):  # no recall should have hit the cache
                    row["query_vectors"] = qv
            out["phases"].append(row)
            print(f"  {n} clients: {row}", flush=True)
        out["cpu_steal_percent"] = steal.percent()
    finally:
        server.stop()
        pg.stop()
    print(
        "\n== Hindsight mixed MCP load ==",
        out["machine"],
        out["date"],
        f"workers={args.workers}",
        f"client={args.client}",
    )
    print(
        f"{'clients':>8} {'calls/s':>8} {'p50 ms':>8} {'p95 ms':>8} {'p99 ms':>8}  p50 / p95 ms recall, retain"
        "  CPU ms a call: driver / server / PostgreSQL  errors"
    )
    for row in out["phases"]:
        a = row["all"]
        split = f"{row['driver_cpu_ms']} / {row['server_cpu_ms']} / {row['postgres_cpu_ms']}"
        tools = ", ".join(f"{row[t]['ms_p50']} / {row[t]['ms_p95']}" for t in ("recall", "retain") if t in row)
        print(
            f"{row['clients']:>8} {row['calls_per_s']:>8} {a['ms_p50']:>8} {a['ms_p95']:>8} {a['ms_p99']:>8}"
            f"  {tools:>28}  {split:>40}  {row['errors'] or 0}"
        )
    print(f"CPU time taken by the hypervisor during the run (steal): {out['cpu_steal_percent']}%")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--clients", default="16,64", help="client counts, one phase each")
    ap.add_argument("--seconds", type=float, default=60)
    ap.add_argument("--workers", type=int, default=1, help="HINDSIGHT_API_WORKERS of the server")
    ap.add_argument(
        "--client",
        choices=("sdk", "raw"),
        default="sdk",
        help="sdk: the official MCP SDK client; raw: JSON-RPC POSTs over plain HTTP, as curl sends them",
    )
    asyncio.run(main(ap.parse_args()))
