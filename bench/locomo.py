"""LoCoMo retrieval benchmark: evidence recall@5/10/20 per category, recall latency and retain
throughput, next to a pure-vector baseline computed in the same run, plus latency on a bank grown
to --scale memories (synthesised from the LoCoMo turns with perturbed embeddings).

    .venv/bin/python bench/locomo.py            # full run (about 15 minutes on 2 cores)
    .venv/bin/python bench/locomo.py --scale 0  # skip the large-bank part
    .venv/bin/python bench/locomo.py --scale 0 --model multilingual  # another embedding model
    .venv/bin/python bench/locomo.py --workers 2  # served by HINDSIGHT_API_WORKERS=2
    .venv/bin/python bench/locomo.py --cpu avx2   # server and PostgreSQL as on an AVX2-only CPU
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import os
import re
import statistics
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from pathlib import Path

import aiohttp
import asyncpg
import numpy as np
import psutil
from pgvector.asyncpg import register_vector

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from hindsight.db.embedded import EmbeddedPostgres  # noqa: E402
from hindsight.db.sql import Q  # noqa: E402
from hindsight.embedding import load_embedder  # noqa: E402
from hindsight.engine.memory.retain import COPY_COLUMNS  # noqa: E402
from hindsight.testing import Server, machine  # noqa: E402

LOCOMO = Path(os.environ.get("LOCOMO_DIR", ROOT.parent / "shared" / "bench" / "locomo"))
sys.path.insert(0, str(LOCOMO))
import load as locomo  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import cpumask  # noqa: E402

KS = (5, 10, 20)
CATS = ("single-hop", "multi-hop", "temporal", "open-domain")


def pct(xs, p):
    return float(np.percentile(np.array(xs), p)) if xs else float("nan")


class RSS:
    """The peak resident memory of the largest server process: the server itself, or with
    HINDSIGHT_API_WORKERS each worker (the supervisor that only watches them is smaller)."""

    def __init__(self, pid):
        self.proc = psutil.Process(pid)
        self.peak = 0

    def sample(self):
        procs = [self.proc]
        with contextlib.suppress(psutil.Error):
            procs += self.proc.children(recursive=True)
        for pr in procs:
            with contextlib.suppress(psutil.Error):  # a worker may be between lives
                self.peak = max(self.peak, pr.memory_info().rss)


def bank_of(record) -> str:
    """The bank of a LoCoMo conversation, or of one of its questions."""
    return "locomo_" + record["sample_id"].replace("-", "_")


def asked(convs) -> tuple[list, dict]:
    """The questions of `convs` the benchmark asks (categories CATS, with evidence), and each
    conversation's last session time (its questions' query_timestamp) by sample id."""
    last = {c["sample_id"]: max(s["timestamp"] for s in c["sessions"] if s["timestamp"]) + "Z" for c in convs}
    questions = [
        q for q in locomo.locomo_questions() if q["sample_id"] in last and q["category"] in CATS and q["evidence"]
    ]
    return questions, last


def recall_jobs(convs) -> list[tuple[str, str, str]]:
    """(bank, question, query_timestamp) for each question asked of `convs`."""
    questions, last = asked(convs)
    return [(bank_of(q), q["question"], last[q["sample_id"]]) for q in questions]


def turn_items(conv):
    for s in conv["sessions"]:
        items = []
        for t in s["turns"]:
            text = f"{t['speaker']}: {t['text']}"
            if t["image_caption"]:
                text += f" [shares image: {t['image_caption']}]"
            items.append(
                {
                    "content": text,
                    "timestamp": (t["timestamp"] + "Z") if t["timestamp"] else None,
                    "metadata": {"turn_id": t["turn_id"]},
                    "document_id": f"{conv['sample_id']}:{s['session_id']}",
                }
            )
        yield [{k: v for k, v in it.items() if v is not None} for it in items]


class Reply:
    """A response as the benchmarks read it (httpx's names, which the other scripts' clients have)."""

    def __init__(self, status_code: int, content: bytes):
        self.status_code, self.content = status_code, content

    def raise_for_status(self) -> None:
        if self.status_code >= 400:
            raise RuntimeError(f"HTTP {self.status_code}: {self.content[:500]!r}")

    def json(self):
        return json.loads(self.content)


class Client:
    """The benchmark's HTTP client: aiohttp, the transport of hindsight-client (Hindsight's own
    Python client), on up to 64 kept-alive connections. The driver shares the two cores with the
    server: httpx (its HTTP/1.1 parser is Python) took 1.4-1.7 ms of the driver's CPU a recall,
    this 0.7-0.8 (bench/README.md, "The benchmark's client and pool")."""

    def __init__(self, base_url: str, timeout: float = 300):
        self.base_url, self.timeout = base_url, timeout

    async def __aenter__(self) -> Client:
        self.session = aiohttp.ClientSession(
            self.base_url,
            connector=aiohttp.TCPConnector(limit=64),
            timeout=aiohttp.ClientTimeout(total=self.timeout),
        )
        return self

    async def __aexit__(self, *exc) -> None:
        await self.session.close()

    async def post(self, path: str, json) -> Reply:
        async with self.session.post(path, json=json) as r:
            return Reply(r.status, await r.read())

    async def get(self, path: str) -> Reply:
        async with self.session.get(path) as r:
            return Reply(r.status, await r.read())


async def retain_all(client, convs, rss):
    n, t0 = 0, time.perf_counter()
    for conv in convs:
        bank = bank_of(conv)
        batch = []
        for session in turn_items(conv):
            if batch and len(batch) + len(session) > 1000:
                (await client.post(f"/v1/banks/{bank}/memories", json={"items": batch})).raise_for_status()
                n += len(batch)
                batch = []
            batch.extend(session)
        if batch:
            (await client.post(f"/v1/banks/{bank}/memories", json={"items": batch})).raise_for_status()
            n += len(batch)
        rss.sample()
    return n, time.perf_counter() - t0


class Fresh:
    """Query texts the server has not seen. It keeps the last 256 query vectors (agents re-ask),
    and the benchmarks ask each question more than once (a warm-up, the sequential pass, the
    concurrent phases, the next bank size), so a repeat would leave the model out of the figure.
    A text already sent goes again with trailing spaces, which neither the model's tokenizer nor
    the keyword arm sees: the same vector and results, and a cache miss. `embedded` (from the
    server's /metrics) checks it: every recall sent computed its query vector."""

    def __init__(self):
        self.sent: dict[str, int] = defaultdict(int)
        self.recalls = 0

    def __call__(self, q: str) -> str:
        n = self.sent[q]
        self.sent[q] += 1
        self.recalls += 1
        return q + " " * n

    @staticmethod
    async def embedded(client) -> float | None:
        """Query vectors the server has computed (one process; a worker's own count with several)."""
        r = await client.get("/metrics")
        m = re.search(r'^hindsight_embedded_texts_total\{call="query"\} (\S+)$', r.content.decode(), re.M)
        if r.status_code != 200:
            return None
        return float(m.group(1)) if m else 0.0  # the series appears with the first query

    async def mark(self, client) -> tuple[float, int] | None:
        """The server's count and ours now, for `since` (None: no count to read)."""
        n = await self.embedded(client)
        return None if n is None else (n, self.recalls)

    async def since(self, client, mark: tuple[float, int] | None) -> dict | None:
        """Recalls sent and query vectors computed since `mark`: equal when none hit the cache."""
        n = await self.embedded(client) if mark is not None else None
        return None if n is None or mark is None else {"recalls": self.recalls - mark[1], "computed": n - mark[0]}

    @staticmethod
    def line(qv: dict) -> str:
        hits = qv["recalls"] - qv["computed"]
        return f"query vectors computed by the server: {qv['computed']:.0f} for {qv['recalls']} recalls ({hits:.0f} cache hits)"


FRESH = Fresh()


async def timed_recall(client, bank, q, when, field=lambda m: m["metadata"].get("turn_id")):
    t0 = time.perf_counter()
    r = await client.post(
        f"/v1/banks/{bank}/recall", json={"query": FRESH(q), "max_tokens": 4096, "query_timestamp": when}
    )
    r.raise_for_status()
    return time.perf_counter() - t0, [field(m) for m in r.json()["results"]]


class Steal:
    """Share of CPU time the hypervisor took from this VM (Linux /proc/stat), so a slow run on a
    shared machine can be told from a slow change."""

    def __init__(self):
        self.start = self._read()

    @staticmethod
    def _read():
        try:
            return [int(x) for x in Path("/proc/stat").read_text().split("\n")[0].split()[1:]]
        except OSError:
            return None

    def percent(self):
        end = self._read()
        if not (self.start and end):
            return None
        d = [b - a for a, b in zip(self.start, end)]
        return round(100 * d[7] / max(1, sum(d)), 1)


def _cpu(procs) -> float:
    total = 0.0
    for pr in procs:
        try:
            t = pr.cpu_times()
            total += t.user + t.system
        except psutil.Error:
            pass
    return total


class CpuSplit:
    """CPU seconds spent since the last read by this process (the benchmark's driver), the
    server's processes (it and its workers) and PostgreSQL's, so a figure can be read as whose
    time the two cores went to."""

    def __init__(self, server_pid: int):
        self.server = psutil.Process(server_pid)
        self.last = self._read()

    def _read(self) -> dict:
        postgres = [pr for pr in psutil.process_iter(["name"]) if (pr.info["name"] or "").startswith("postgres")]
        try:
            server = [self.server, *self.server.children(recursive=True)]
        except psutil.Error:
            server = []
        return {"driver": _cpu([psutil.Process()]), "server": _cpu(server), "postgres": _cpu(postgres)}

    def per_call(self, calls: int) -> dict:
        """Milliseconds of CPU per call since the last read, by process group."""
        now = self._read()
        out = {f"{k}_cpu_ms": round((now[k] - self.last[k]) * 1000 / max(1, calls), 2) for k in now}
        self.last = now
        return out


# Each concurrent job asks its question in one of three cases, as different clients would; the
# model is uncased, so the vector and results are the same (and Fresh makes each a cache miss).
VARIANTS = (str.lower, str.upper, str.title)


async def concurrent(client, jobs, clients=16, rss=None):
    lat, queue = [], [(b, VARIANTS[i % len(VARIANTS)](q), w) for i, (b, q, w) in enumerate(jobs)]
    t0 = time.perf_counter()

    async def worker():
        while queue:
            bank, q, when = queue.pop()
            dt, _ = await timed_recall(client, bank, q, when)
            lat.append(dt)
            if rss and len(lat) % 50 == 0:
                rss.sample()

    await asyncio.gather(*(worker() for _ in range(clients)))
    return len(lat) / (time.perf_counter() - t0), lat


def score(ranked, evidence):
    return {k: len(set(ranked[:k]) & set(evidence)) / len(evidence) for k in KS}


async def synthesize(pg_url, bank, n, src_banks, start: int = 0):
    """Grow `bank` from `start` to n memories: LoCoMo turns with embeddings perturbed (sigma
    0.03), so the HNSW graph and full-text index see realistic, non-identical content."""
    conn = await asyncpg.connect(pg_url)
    await register_vector(conn)
    rows = await conn.fetch(
        "SELECT text, embedding, mentioned_at FROM memories WHERE bank_id = ANY($1::text[])", src_banks
    )
    await conn.execute("INSERT INTO banks (id) VALUES ($1) ON CONFLICT DO NOTHING", bank)
    rng = np.random.default_rng(7 + start)
    t0, done = time.perf_counter(), start
    while done < n:
        recs = []
        for i in range(done, min(n, done + 5000)):
            r = rows[i % len(rows)]
            e = r["embedding"].to_numpy().astype(np.float32)
            v = e + rng.normal(0, 0.03, len(e)).astype(np.float32)
            recs.append(
                (
                    uuid.uuid4(),
                    bank,
                    f"{r['text']} (variant {i})",
                    "world",
                    "general",
                    v / np.linalg.norm(v),
                    None,
                    None,
                    r["mentioned_at"],
                    [],
                    "{}",
                    None,
                    f"syn:{i // 20}",
                    i % 20,
                    None,
                    [],  # no entities, as retain writes them (migration 012)
                )
            )
        await conn.copy_records_to_table("memories", records=recs, columns=COPY_COLUMNS)
        done += len(recs)
        print(f"  synthesised {done}/{n} ({time.perf_counter() - t0:.0f}s)", flush=True)
    # memory_terms (migration 015) is written by a trigger of the COPY: vacuumed and analysed with
    # it, as autovacuum would have by the time a served bank had grown this big.
    await conn.execute("VACUUM ANALYZE memories, memory_terms")
    # Write the bulk load's dirty pages now, not during the timed recalls (with a buffer cache
    # that holds the whole bank, the next checkpoint would otherwise flush ~0.5 GB mid-measurement).
    await conn.execute("CHECKPOINT")
    # COPY and VACUUM go through a small ring of buffers, so the synthesised rows start outside
    # PostgreSQL's cache, where rows retained through the API are cached as they are written: the
    # first recalls then read ~200 MB from the OS a page at a time (keyword arm 6.0 ms cold, 3.1
    # warm; bench/README.md, "Warm like a served bank"). Load the table and its indexes as a
    # served bank has them; the buffer cache (an eighth of memory) holds them.
    await conn.execute("CREATE EXTENSION IF NOT EXISTS pg_prewarm")
    await conn.execute(
        "SELECT pg_prewarm(c.oid) FROM pg_class c WHERE c.oid IN ('memories'::regclass, 'memory_terms'::regclass)"
        " OR c.oid IN (SELECT indexrelid FROM pg_index WHERE indrelid IN ('memories'::regclass, 'memory_terms'::regclass))"
    )
    await conn.close()


VARIANT = re.compile(r" \(variant \d+\)$")


async def link_entities(pg_url, bank, src_banks) -> int:
    """Give each synthesised memory of `bank` the entity links of the turns it varies, as retain
    would have written them (`--entity-links`): a bank as large as a served one, links included,
    for what reads them (entity listings and filters; bench/README.md, "Entity arm: a name in
    every memory" measured recall's former entity arm on it). Returns the links made."""
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(
            "INSERT INTO entities (bank_id, name, canonical, kind, mention_count)"
            " SELECT $1, min(name), canonical, min(kind), 0 FROM entities WHERE bank_id = ANY($2::text[])"
            " GROUP BY canonical ON CONFLICT (bank_id, canonical) DO NOTHING",
            bank,
            src_banks,
        )
        await conn.execute(
            "INSERT INTO memory_entities (entity_id, memory_id, bank_id)"
            " SELECT DISTINCT se.id, m.id, $1 FROM memories m"
            " JOIN memories l ON l.bank_id = ANY($2::text[]) AND l.text = regexp_replace(m.text, ' \\(variant \\d+\\)$', '')"
            " JOIN memory_entities le ON le.memory_id = l.id JOIN entities e ON e.id = le.entity_id"
            " JOIN entities se ON se.bank_id = $1 AND se.canonical = e.canonical"
            " WHERE m.bank_id = $1 ON CONFLICT DO NOTHING",
            bank,
            src_banks,
        )
        await conn.execute(
            "UPDATE entities e SET mention_count = (SELECT count(*) FROM memory_entities me WHERE me.entity_id = e.id)"
            " WHERE e.bank_id = $1",
            bank,
        )
        await conn.execute("ANALYZE entities")
        await conn.execute("ANALYZE memory_entities")
        return await conn.fetchval(
            "SELECT count(*) FROM memory_entities me JOIN entities e ON e.id = me.entity_id WHERE e.bank_id = $1", bank
        )
    finally:
        await conn.close()


async def turns_by_text(pg_url) -> dict:
    """(LoCoMo bank, turn text) -> the turn ids with that text."""
    conn = await asyncpg.connect(pg_url)
    try:
        rows = await conn.fetch(
            "SELECT bank_id, text, metadata->>'turn_id' AS t FROM memories WHERE bank_id LIKE 'locomo%'"
        )
    finally:
        await conn.close()
    out = defaultdict(list)
    for r in rows:
        out[(r["bank_id"], r["text"])].append(r["t"])
    return out


async def main(args):
    cpumask.apply(args.cpu)  # before PostgreSQL and the server start
    steal = Steal()
    tmp = Path(tempfile.mkdtemp(prefix="hindsight-bench-"))
    # The same embedded PostgreSQL, settings included, as `hindsight serve` starts.
    pg = EmbeddedPostgres(tmp, cleanup="delete")
    pg_url = pg.start()
    env = {
        "HINDSIGHT_API_DATABASE_URL": pg_url,
        # the database pool as served (HINDSIGHT_API_DB_POOL_MAX 10); 40, set here until
        # 2026-11-26, cost PostgreSQL ~6% more CPU a recall (bench/README.md, "The benchmark's
        # client and pool")
        "HINDSIGHT_API_LOG_LEVEL": "warning",
        "HINDSIGHT_API_WORKERS": str(args.workers),
    }
    if args.model:
        env["HINDSIGHT_API_EMBEDDING_MODEL"] = args.model
    server = Server(env).start(timeout=180)
    cpumask.check_loaded([server.proc.pid, pg.pid])
    rss = RSS(server.proc.pid)
    out = {"machine": cpumask.describe(machine()), "date": time.strftime("%Y-%m-%d"), "workers": args.workers}
    out["huge_pages"] = await huge_pages_status(pg_url)
    try:
        convs = list(locomo.locomo_conversations())[: args.conversations]
        questions, last_ts = asked(convs)
        async with Client(server.url) as client:
            print(f"retaining {sum(len(c['turns']) for c in convs)} turns ...", flush=True)
            n, dt = await retain_all(client, convs, rss)
            out["retain"] = {"turns": n, "seconds": round(dt, 1), "turns_per_s": round(n / dt, 1)}
            print(f"  {n} turns in {dt:.1f}s = {n / dt:.0f} turns/s", flush=True)
            mark = await FRESH.mark(client) if args.workers == 1 else None

            embedder = load_embedder(args.model or "minilm")
            pool = await asyncpg.create_pool(pg_url, min_size=1, max_size=4, init=register_vector)
            hits = defaultdict(lambda: defaultdict(list))
            lat = []
            print(f"recalling {len(questions)} questions ...", flush=True)
            for q in questions:
                bank = bank_of(q)
                dt, ranked = await timed_recall(client, bank, q["question"], last_ts[q["sample_id"]])
                lat.append(dt)
                vec = embedder.embed_query(q["question"])
                base = [
                    r[0]
                    for r in await pool.fetch(
                        "SELECT metadata->>'turn_id' FROM memories WHERE bank_id = $1 ORDER BY embedding <=> $2 LIMIT 20",
                        bank,
                        vec,
                    )
                ]
                for name, ids in (("hindsight", ranked), ("vector", base)):
                    s = score(ids, q["evidence"])
                    for k in KS:
                        hits[name][(q["category"], k)].append(s[k])
                        hits[name][("all", k)].append(s[k])
            rss.sample()
            await pool.close()
            table = {}
            for name in ("hindsight", "vector"):
                table[name] = {
                    cat: {f"r@{k}": round(statistics.mean(hits[name][(cat, k)]), 3) for k in KS}
                    for cat in (*CATS, "all")
                }
            out["evidence_recall"] = table
            out["questions"] = {c: len(hits["hindsight"][(c, 5)]) for c in (*CATS, "all")}
            out["recall_latency_ms_locomo"] = {
                "p50": round(pct(lat, 50) * 1000, 1),
                "p95": round(pct(lat, 95) * 1000, 1),
            }
            jobs = [(bank_of(q), q["question"], last_ts[q["sample_id"]]) for q in questions]
            cpu = CpuSplit(server.proc.pid)
            qps, clat = await concurrent(client, jobs, 16, rss)
            out["recall_16_clients_locomo"] = {
                "per_s": round(qps, 1),
                "p50_ms": round(pct(clat, 50) * 1000, 1),
                "p95_ms": round(pct(clat, 95) * 1000, 1),
                **cpu.per_call(len(clat)),
            }

            out["server_peak_rss_mb"] = round(rss.peak / 2**20)
            report(out)
            save(out, result_name(args))  # the LoCoMo part, kept if the 100k part fails
            if args.scale:
                big = "scale_bank"
                print(f"growing a bank to {args.scale} memories ...", flush=True)
                await synthesize(pg_url, big, args.scale, [bank_of(c) for c in convs])
                links = 0
                if args.entity_links:
                    links = await link_entities(pg_url, big, [bank_of(c) for c in convs])
                    print(f"  {links} entity links, as its turns have", flush=True)
                picked = questions[:: max(1, len(questions) // 300)]
                sample = [(big, q["question"], None) for q in picked]
                for b, qq, w in sample[:20]:  # warm caches
                    await timed_recall(client, b, qq, w)
                # Quality at scale: a synthesised memory is "<turn text> (variant i)", so results map
                # back to the turns of the question's own conversation; other conversations' turns
                # and repeated variants of one turn count as misses.
                turns = await turns_by_text(pg_url)
                slat, big_hits = [], defaultdict(list)
                for q, (b, qq, w) in zip(picked, sample):
                    dt, texts = await timed_recall(client, b, qq, w, field=lambda m: m["text"])
                    slat.append(dt)
                    conv = bank_of(q)
                    ranked = list(dict.fromkeys(t for x in texts for t in turns.get((conv, VARIANT.sub("", x)), ())))
                    for k, v in score(ranked, q["evidence"]).items():
                        big_hits[k].append(v)
                rss.sample()
                cpu = CpuSplit(server.proc.pid)
                qps, clat = await concurrent(client, [j for j in sample for _ in VARIANTS], 16, rss)
                out["scale"] = {
                    "memories": args.scale,
                    "entity_links": links,
                    "sequential_ms": {"p50": round(pct(slat, 50) * 1000, 1), "p95": round(pct(slat, 95) * 1000, 1)},
                    "evidence_recall": {f"r@{k}": round(statistics.mean(big_hits[k]), 3) for k in KS},
                    "questions": len(picked),
                    "clients_16": {
                        "per_s": round(qps, 1),
                        "p50_ms": round(pct(clat, 50) * 1000, 1),
                        "p95_ms": round(pct(clat, 95) * 1000, 1),
                        **cpu.per_call(len(clat)),
                    },
                }
            if qv := await FRESH.since(client, mark):  # every recall should have embedded its query
                out["query_vectors"] = qv
            if args.audit_rounds:
                print("recall with the audit log on and off ...", flush=True)
                out["audit_log"] = await audit_cost(env, pg_url, jobs, args.audit_rounds)
        out["server_peak_rss_mb"] = round(rss.peak / 2**20)
        out["cpu_steal_percent"] = steal.percent()
    finally:
        server.stop()
        pg.stop()
    if args.model:
        out["model"] = args.model
    report(out)
    save(out, result_name(args))


class OwnCpu:
    """CPU seconds of one server process and of the PostgreSQL backends serving its connections
    (found by the application_name its database URL gives them), read around a phase: on a
    machine others share, throughput swings with their load, while the CPU a recall costs these
    processes barely does. PostgreSQL's background processes (WAL writer, autovacuum) are left out:
    they are shared, and one exiting mid-phase would take its CPU out of the sum."""

    def __init__(self, server_pid: int, pg_url: str, application: str):
        self.server, self.pg_url, self.application = psutil.Process(server_pid), pg_url, application

    async def read(self) -> tuple[float, float]:
        conn = await asyncpg.connect(self.pg_url)
        try:
            rows = await conn.fetch("SELECT pid FROM pg_stat_activity WHERE application_name = $1", self.application)
            pids = [r[0] for r in rows]
        finally:
            await conn.close()
        backends = []
        for pid in pids:
            try:
                backends.append(psutil.Process(pid))
            except psutil.Error:
                pass
        return _cpu([self.server]), _cpu(backends)


async def audit_cost(env: dict, pg_url: str, jobs: list, rounds: int) -> dict:
    """Recall with the audit log on and off: two servers started for this on the benchmark's
    database, the same in all but HINDSIGHT_API_AUDIT_ENABLED (neither runs a worker, whose
    claims every second cost the benchmark's server CPU the other would not spend; a process that
    retained the run's turns differs from a fresh one too), 16 clients each. The questions are
    cut into chunks of about 128; each chunk runs on one server and then the other (which goes
    first alternates), `rounds` times over: a pair meets the same load from the rest of the
    machine, so the median of the pairs' throughput ratios holds where a whole phase on each would
    not on a shared machine. The CPU a recall costs each server process and PostgreSQL is summed
    over all chunks of each."""
    common = {**env, "HINDSIGHT_API_WORKER_CONCURRENCY": "0"}
    url = {name: f"{pg_url}&application_name=bench_audit_{name}" for name in ("on", "off")}
    servers = {
        "on": Server({**common, "HINDSIGHT_API_AUDIT_ENABLED": "true", "HINDSIGHT_API_DATABASE_URL": url["on"]}),
        "off": Server({**common, "HINDSIGHT_API_AUDIT_ENABLED": "false", "HINDSIGHT_API_DATABASE_URL": url["off"]}),
    }
    chunks = [jobs[i :: max(1, len(jobs) // 128)] for i in range(max(1, len(jobs) // 128))]
    ratios: list[float] = []
    per_s: dict[str, list[float]] = {"on": [], "off": []}
    cpu = {"on": [0.0, 0.0], "off": [0.0, 0.0]}
    calls = {"on": 0, "off": 0}
    try:
        for server in servers.values():
            server.start(timeout=180)
        async with Client(servers["on"].url) as on, Client(servers["off"].url) as off:
            sides = {
                "on": (on, OwnCpu(servers["on"].proc.pid, pg_url, "bench_audit_on")),
                "off": (off, OwnCpu(servers["off"].proc.pid, pg_url, "bench_audit_off")),
            }
            for client, _ in sides.values():
                await concurrent(client, jobs[:200], 16)
            for r in range(rounds):
                for k, chunk in enumerate(chunks):
                    pair = {}
                    for name in ("on", "off") if (r + k) % 2 == 0 else ("off", "on"):
                        client, own = sides[name]
                        before = await own.read()
                        qps, lat = await concurrent(client, chunk, 16)
                        after = await own.read()
                        cpu[name][0] += after[0] - before[0]
                        cpu[name][1] += after[1] - before[1]
                        calls[name] += len(lat)
                        per_s[name].append(qps)
                        pair[name] = qps
                    ratios.append(pair["on"] / pair["off"])
                print(f"  round {r + 1}: median on/off so far {statistics.median(ratios):.3f}", flush=True)
    finally:
        for server in servers.values():
            if server.proc is not None:
                server.stop()

    def ms(name: str, i: int) -> float:
        return round(cpu[name][i] * 1000 / max(1, calls[name]), 3)

    on_cpu, off_cpu = ms("on", 0) + ms("on", 1), ms("off", 0) + ms("off", 1)
    return {
        "rounds": rounds,
        "pairs": len(ratios),
        "median_on_per_s": round(statistics.median(per_s["on"]), 1),
        "median_off_per_s": round(statistics.median(per_s["off"]), 1),
        "median_pair_ratio": round(statistics.median(ratios), 4),
        "throughput_cost_percent": round(100 * (1 - statistics.median(ratios)), 1),
        "server_cpu_ms": {"on": ms("on", 0), "off": ms("off", 0)},
        "postgres_cpu_ms": {"on": ms("on", 1), "off": ms("off", 1)},
        "cpu_cost_percent": round(100 * (on_cpu - off_cpu) / off_cpu, 1) if off_cpu else None,
    }


async def huge_pages_status(pg_url: str) -> str:
    """Whether the database's buffer cache is on huge pages ("on" / "off"), which changes its CPU
    a recall (docs/running.md, "Huge pages")."""
    conn = await asyncpg.connect(pg_url)
    try:
        return (await conn.fetchrow(Q.huge_pages_status))["status"] or "unknown"
    finally:
        await conn.close()


def result_name(args) -> str:
    """bench/results/<name>.json: latest.json for the default run, another file for another model
    or number of workers, or with entity links, so a variant never replaces the default's figures."""
    name = "latest" if not args.model else f"locomo-{args.model}"
    if getattr(args, "cpu", "native") != "native":
        name += f"-{args.cpu}"
    if getattr(args, "entity_links", False):
        name += "-entity-links"
    return name if args.workers == 1 else f"{name}-workers{args.workers}"


def save(out, name: str):
    dest = ROOT / "bench" / "results"
    dest.mkdir(exist_ok=True)
    (dest / f"{name}.json").write_text(json.dumps(out, indent=2))


def latency(xs: list[float], suffix: str = "") -> dict:
    """p50 / p95 in milliseconds, the way every benchmark here reports latency."""
    return {f"ms_p50{suffix}": round(pct(xs, 50) * 1000, 1), f"ms_p95{suffix}": round(pct(xs, 95) * 1000, 1)}


def report(out):
    print(
        "\n== Hindsight LoCoMo benchmark ==",
        out["machine"],
        out["date"],
        f"workers={out.get('workers', 1)}",
        f"huge pages {out.get('huge_pages', 'unknown')}",
    )
    print(f"retain: {out['retain']['turns_per_s']} turns/s ({out['retain']['turns']} turns)")
    print("evidence recall (hindsight | pure vector):")
    er = out["evidence_recall"]
    for cat in (*CATS, "all"):
        h, v = er["hindsight"][cat], er["vector"][cat]
        print(
            f"  {cat:12s} n={out['questions'][cat]:4d}  "
            + "  ".join(f"@{k}: {h[f'r@{k}']:.3f} | {v[f'r@{k}']:.3f}" for k in KS)
        )
    print(
        f"recall latency (LoCoMo banks): {out['recall_latency_ms_locomo']}; 16 clients: {out['recall_16_clients_locomo']}"
    )
    if "scale" in out:
        sc = out["scale"]
        print(f"recall at {sc['memories']} memories: sequential {sc['sequential_ms']}; 16 clients: {sc['clients_16']}")
        if "evidence_recall" in sc:
            print(
                f"  evidence recall there (n={sc['questions']}): "
                + "  ".join(f"@{k}: {sc['evidence_recall'][f'r@{k}']:.3f}" for k in KS)
            )
    if "query_vectors" in out:
        print(Fresh.line(out["query_vectors"]))
    if "audit_log" in out:
        a = out["audit_log"]
        print(
            f"recall, 16 clients, audit log on / off ({a['pairs']} paired chunks): median {a['median_on_per_s']} / "
            f"{a['median_off_per_s']} per s, median pair ratio {a['median_pair_ratio']} "
            f"(cost {a['throughput_cost_percent']}%); CPU a recall, server {a['server_cpu_ms']} ms, "
            f"PostgreSQL {a['postgres_cpu_ms']} ms (cost {a['cpu_cost_percent']}%)"
        )
    print(f"server peak RSS (the largest server process): {out['server_peak_rss_mb']} MB")
    if out.get("cpu_steal_percent") is not None:
        print(f"CPU time taken by the hypervisor during the run (steal): {out['cpu_steal_percent']}%")


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--scale", type=int, default=100_000, help="grow a bank to this many memories (0: skip)")
    ap.add_argument("--conversations", type=int, default=10)
    ap.add_argument("--model", default="", help="HINDSIGHT_API_EMBEDDING_MODEL (default: the server's default)")
    ap.add_argument("--workers", type=int, default=1, help="HINDSIGHT_API_WORKERS of the server")
    ap.add_argument(
        "--entity-links", action="store_true", help="give the 100k bank's memories their turns' entity links"
    )
    ap.add_argument(
        "--audit-rounds",
        type=int,
        default=3,
        help="rounds over the questions with the audit log on and off, paired chunk by chunk (0: skip)",
    )
    cpumask.add_argument(ap)
    asyncio.run(main(ap.parse_args()))
