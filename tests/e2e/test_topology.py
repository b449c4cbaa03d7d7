"""The topology of docs/scaling.md, for real on this machine: a primary and its synchronous
streaming standby (the bundled PostgreSQL, pg_basebackup), a PgBouncer in transaction pooling
mode per node, three `api` processes behind HAProxy and one `worker` process, started by
`deploy/local-cluster.sh up`. Under a mixed load (REST and MCP retain and recall, asynchronous
retains the worker stores, extractive reflect, listings; several banks) it kills an API process,
stops and restarts the standby, then kills the primary's node and promotes the standby.

Then, for every write the cluster acknowledged: stored exactly once, in its bank; every recall
right after an acknowledged write found it (read-your-writes), never a memory of another bank;
no 500 (a 503 always with Retry-After). How long each fault troubled the clients is printed.

Needs Debian's pgbouncer and haproxy: the script installs them with apt-get when run as root
(as .ci/run is); otherwise the test is skipped with the script's reason."""

from __future__ import annotations

import asyncio
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

import asyncpg
import httpx
import pytest

from conftest import mcp_session

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "deploy" / "local-cluster.sh"
MISSING_TOOLS = 3  # the script's exit code when pgbouncer or haproxy cannot be had
BANKS = [f"topo_{i}" for i in range(6)]
BIG_ITEMS = 4000  # a large asynchronous retain, running in the worker when the primary dies
GAP_ERRORS = {502, 503}  # a load balancer's answer for a process that died mid-request, and ours for an outage

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="the cluster script is for Linux")


def _free_block(size: int = 24) -> int:
    """A first port such that the next `size` are free on 127.0.0.1."""
    for _ in range(200):
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            base = s.getsockname()[1]
        if base + size > 65000:
            continue
        socks = []
        try:
            for p in range(base, base + size):
                s = socket.socket()
                socks.append(s)
                s.bind(("127.0.0.1", p))
            return base
        except OSError:
            continue
        finally:
            for s in socks:
                s.close()
    raise RuntimeError("no free block of ports")


@dataclass
class Cluster:
    dir: Path
    env: dict
    url: str
    base: int

    def run(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        return subprocess.run(
            [str(SCRIPT), *args], env=self.env, capture_output=True, text=True, timeout=timeout, check=False
        )

    def pid(self, name: str) -> int:
        return int((self.dir / "run" / f"{name}.pid").read_text().split()[0])

    def primary_url(self) -> str:
        node = (self.dir / "primary").read_text().strip()
        return f"postgresql://hindsight@127.0.0.1:{self.base + 9 + int(node)}/hindsight"


@pytest.fixture(scope="module")
def cluster():
    folder = Path(tempfile.mkdtemp(prefix="hindsight-cluster-"))
    folder.chmod(0o755)  # PostgreSQL runs as a system user when the tests run as root
    base = _free_block()
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env.update(
        HINDSIGHT_CLUSTER_DIR=str(folder),
        HINDSIGHT_CLUSTER_PORT=str(base),
        # A worker's claim lapses soon after its database connection died with the primary.
        HINDSIGHT_API_OPERATION_LEASE="6",
    )
    c = Cluster(folder, env, "", base)
    up = c.run("up")
    if up.returncode == MISSING_TOOLS:
        shutil.rmtree(folder, ignore_errors=True)
        pytest.skip(f"deploy/local-cluster.sh: {up.stderr.strip().splitlines()[-1]}")
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        c.url = up.stdout.splitlines()[0]
        assert c.url == f"http://127.0.0.1:{base}"
        yield c
    finally:
        down = c.run("down", timeout=300)
        print(down.stderr)
        if os.environ.get("HINDSIGHT_KEEP_CLUSTER"):
            print(f"cluster kept in {folder} (HINDSIGHT_KEEP_CLUSTER)")
        else:
            shutil.rmtree(folder, ignore_errors=True)


@dataclass
class Tally:
    """What the clients saw, shared by their threads."""

    lock: threading.Lock = field(default_factory=threading.Lock)
    statuses: Counter = field(default_factory=Counter)
    acknowledged: list = field(default_factory=list)  # (bank, token)
    async_ops: list = field(default_factory=list)  # (bank, token, operation id)
    troubles: list = field(default_factory=list)  # (time, what)
    failures: list = field(default_factory=list)  # what must not happen, said
    ryw_checked: int = 0
    foreign: int = 0

    def trouble(self, what: str) -> None:
        with self.lock:
            self.troubles.append((time.monotonic(), what))

    def fail(self, what: str) -> None:
        with self.lock:
            self.failures.append(what)

    def saw(self, r: httpx.Response) -> bool:
        """Count the answer; True when it is a success. A 5xx other than a gap's is a failure,
        and a 503 must say when to try again."""
        with self.lock:
            self.statuses[r.status_code] += 1
        if r.status_code < 300:
            return True
        if r.status_code in GAP_ERRORS:
            if r.status_code == 503 and "retry-after" not in r.headers:
                self.fail(f"503 without Retry-After: {r.text[:200]}")
            self.trouble(f"{r.status_code}")
            return False
        self.fail(f"{r.request.method} {r.request.url.path}: {r.status_code} {r.text[:300]}")
        return False


def _text(bank: str, token: str) -> str:
    return f"Observation {token} of bank {bank}: the lighthouse keeper logged a calm sea."


def _own(bank: str, texts: list[str], tally: Tally) -> None:
    foreign = [t for t in texts if f"of bank {bank}:" not in t]
    if foreign:
        with tally.lock:
            tally.foreign += len(foreign)
        tally.fail(f"bank {bank} answered with another bank's memories: {foreign[:2]}")


def _retry(tally: Tally, stop: threading.Event, send, *args, **kwargs):
    """`send(*args, **kwargs)` until it answers a success (a 2xx), through the gaps; None if
    stopped first or answered an error that is not a gap's."""
    while not stop.is_set():
        try:
            r = send(*args, **kwargs)
        except httpx.HTTPError as exc:
            tally.trouble(type(exc).__name__)
            time.sleep(0.2)
            continue
        if tally.saw(r):
            return r
        if r.status_code not in GAP_ERRORS:
            return None
        time.sleep(min(float(r.headers.get("retry-after", 1)), 0.5))
    return None


def rest_client(url: str, bank: str, tally: Tally, stop: threading.Event, n: int) -> None:
    """Retain one item (idempotent: its own document_id), then recall it at once through the load
    balancer (most likely another process); every few rounds a reflect and a listing."""
    with httpx.Client(base_url=url, timeout=120) as c:
        i = 0
        while not stop.is_set():
            i += 1
            token = uuid.uuid4().hex[:12]
            body = {"content": _text(bank, token), "document_id": f"doc-{token}"}
            if _retry(tally, stop, c.post, f"/v1/banks/{bank}/memories", json=body) is None:
                return
            with tally.lock:
                tally.acknowledged.append((bank, token))
            r = _retry(
                tally,
                stop,
                c.post,
                f"/v1/banks/{bank}/recall",
                json={"query": f"Observation {token}", "mode": "keyword"},
            )
            if r is None:
                return
            texts = [m["text"] for m in r.json()["results"]]
            with tally.lock:
                tally.ryw_checked += 1
            if not any(token in t for t in texts):
                tally.fail(f"read-your-writes: recall right after retain missed {token} in {bank}")
            _own(bank, texts, tally)
            if i % 4 == n % 4:
                r = _retry(tally, stop, c.post, f"/v1/banks/{bank}/reflect", json={"query": "calm sea"})
                if r is not None:  # the extractive answer quotes the memories it is based on
                    named = set(re.findall(r"of bank (topo_\d+):", r.json()["answer"]))
                    if named - {bank}:
                        tally.fail(f"reflect on {bank} quoted memories of {named - {bank}}")
                r = _retry(tally, stop, c.get, f"/v1/banks/{bank}/memories", params={"limit": 20})
                if r is not None:
                    _own(bank, [m["text"] for m in r.json()["memories"]], tally)


def async_client(url: str, bank: str, tally: Tally, stop: threading.Event) -> None:
    """Asynchronous retains (Hindsight's API, `async: true`): the worker stores them; once the
    operation succeeded, a recall finds the item."""
    with httpx.Client(base_url=url, timeout=120) as c:
        while not stop.is_set():
            token = uuid.uuid4().hex[:12]
            body = {"items": [{"content": _text(bank, token), "document_id": f"doc-{token}"}], "async": True}
            r = _retry(tally, stop, c.post, f"/v1/default/banks/{bank}/memories", json=body)
            if r is None:
                return
            op = r.json()["operation_id"]
            with tally.lock:
                tally.async_ops.append((bank, token, op))
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline:
                r = _retry(tally, stop, c.get, f"/v1/banks/{bank}/operations/{op}")
                if r is None or r.json()["status"] in ("succeeded", "failed", "cancelled"):
                    break
                time.sleep(0.2)
            if r is None:
                return
            if r.json()["status"] != "succeeded":
                tally.fail(f"asynchronous retain {op} ended {r.json()['status']}: {r.json().get('error')}")
                continue
            r = _retry(
                tally,
                stop,
                c.post,
                f"/v1/banks/{bank}/recall",
                json={"query": f"Observation {token}", "mode": "keyword"},
            )
            if r is not None and not any(token in m["text"] for m in r.json()["results"]):
                tally.fail(f"read-your-writes: recall after operation {op} succeeded missed {token}")


def mcp_client(url: str, bank: str, tally: Tally, stop: threading.Event) -> None:
    """The official MCP SDK client over Streamable HTTP through the load balancer: retain, then
    recall; a failed call (the gap) is retried with a new session."""

    async def call(tool: str, args: dict):
        while not stop.is_set():
            try:
                async with mcp_session(f"{url}/mcp/{bank}/") as s:
                    r = await s.call_tool(tool, args)
            except Exception as exc:  # the SDK raises its transport's error for a 502 or 503
                tally.trouble(f"mcp {type(exc).__name__}")
                await asyncio.sleep(0.3)
                continue
            text = r.content[0].text if r.content else ""
            if r.is_error:
                if "unavailable" in text or "stopping" in text:
                    tally.trouble("mcp unavailable")
                    await asyncio.sleep(0.3)
                    continue
                tally.fail(f"mcp {tool}: {text[:300]}")
                return None
            return r
        return None

    async def run() -> None:
        while not stop.is_set():
            token = uuid.uuid4().hex[:12]
            if await call("retain", {"content": _text(bank, token), "document_id": f"doc-{token}"}) is None:
                return
            with tally.lock:
                tally.acknowledged.append((bank, token))
            r = await call("recall", {"query": f"Observation {token}", "mode": "keyword"})
            if r is None:
                return
            texts = [m["text"] for m in r.structured_content["results"]]
            with tally.lock:
                tally.ryw_checked += 1
            if not any(token in t for t in texts):
                tally.fail(f"read-your-writes over MCP missed {token} in {bank}")
            _own(bank, texts, tally)

    asyncio.run(run())


def _gap(tally: Tally, since: float, until: float) -> str:
    """How long the clients were troubled between two instants: first to last trouble seen."""
    seen = [t for t, _ in tally.troubles if since <= t <= until]
    if not seen:
        return "no client saw an error"
    return f"{max(seen) - min(seen):.1f} s from first to last error ({len(seen)} answers retried)"


def _wait_ready(url: str, timeout: float = 120) -> float:
    start = time.monotonic()
    while time.monotonic() - start < timeout:
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(url + "/health/ready", timeout=2).status_code == 200:
                return time.monotonic() - start
        time.sleep(0.1)
    raise AssertionError(f"{url} not ready in {timeout} s")


def _writes_resumed(url: str, since: float, timeout: float = 120) -> float:
    """Seconds from `since` to the first acknowledged retain after it."""
    bank = "topo_probe"
    with httpx.Client(base_url=url, timeout=10) as c:
        while time.monotonic() - since < timeout:
            with contextlib.suppress(httpx.HTTPError):
                r = c.post(f"/v1/banks/{bank}/memories", json={"content": f"probe of bank {bank}: resumed"})
                if r.status_code == 200:
                    return time.monotonic() - since
            time.sleep(0.05)
    raise AssertionError("writes did not resume")


def _start_big_retain(url: str) -> tuple[str, list[str]]:
    """An asynchronous retain of BIG_ITEMS items (seconds of embedding for the worker), once the
    worker runs it: (operation id, the items' tokens)."""
    bank = BANKS[3]
    tokens = [uuid.uuid4().hex[:12] for _ in range(BIG_ITEMS)]
    items = [{"content": _text(bank, t), "document_id": f"doc-{t}"} for t in tokens]
    with httpx.Client(base_url=url, timeout=120) as c:
        r = c.post(f"/v1/default/banks/{bank}/memories", json={"items": items, "async": True})
        assert r.status_code == 200, r.text
        op = r.json()["operation_id"]
        deadline = time.monotonic() + 60
        while c.get(f"/v1/banks/{bank}/operations/{op}").json()["status"] == "queued":
            assert time.monotonic() < deadline, "the worker did not start the large retain"
            time.sleep(0.05)
    return op, tokens


@pytest.mark.timeout(1500)  # the cluster starts five server processes; each fault is waited out
def test_topology_survives_faults(cluster):
    tally, stop = Tally(), threading.Event()
    threads = [threading.Thread(target=rest_client, args=(cluster.url, BANKS[i], tally, stop, i)) for i in range(3)]
    threads.append(threading.Thread(target=async_client, args=(cluster.url, BANKS[3], tally, stop)))
    threads += [threading.Thread(target=mcp_client, args=(cluster.url, BANKS[i], tally, stop)) for i in (4, 5)]
    for t in threads:
        t.start()
    report = []
    try:
        time.sleep(8)

        # An API process dies (SIGKILL): HAProxy sends new requests to the other two; a request
        # in flight on it is answered 502 and sent again by the client.
        t0 = time.monotonic()
        os.kill(cluster.pid("api2"), signal.SIGKILL)
        time.sleep(6)
        up = cluster.run("up")
        assert up.returncode == 0, up.stderr
        restarted = time.monotonic() - t0
        time.sleep(4)
        report.append(
            f"API process killed: {_gap(tally, t0, time.monotonic())}; back in service after {restarted:.1f} s"
        )

        # The worker process dies (SIGKILL) in the middle of a large asynchronous retain: once its
        # lease lapses, the restarted worker claims the operation again, once.
        lost_op, lost_tokens = _start_big_retain(cluster.url)
        t0 = time.monotonic()
        os.kill(cluster.pid("worker"), signal.SIGKILL)
        up = cluster.run("up")
        assert up.returncode == 0, up.stderr
        report.append(f"worker killed mid-operation: back after {time.monotonic() - t0:.1f} s")
        with tally.lock:
            tally.async_ops += [(BANKS[3], token, lost_op) for token in lost_tokens]

        # The standby stops (fast shutdown) and starts again: reads fall back to the primary;
        # with synchronous replication, commits wait for it.
        t0 = time.monotonic()
        stopped = cluster.run("stop-node", "2")
        assert stopped.returncode == 0, stopped.stderr
        time.sleep(5)
        up = cluster.run("up")
        assert up.returncode == 0, up.stderr
        resumed = _writes_resumed(cluster.url, t0)
        time.sleep(4)
        report.append(
            f"standby stopped for 5 s and started: {_gap(tally, t0, time.monotonic())}; "
            f"a write waited until {resumed:.1f} s after the stop"
        )

        # The primary's node is lost (PostgreSQL and its PgBouncer killed) while the worker runs a
        # long asynchronous retain; the standby is promoted. The operation's attempt fails, its
        # lease lapses, and the worker claims it again once.
        big_op, big_tokens = _start_big_retain(cluster.url)
        t0 = time.monotonic()
        failover = cluster.run("failover")
        assert failover.returncode == 0, failover.stderr
        promoted = time.monotonic() - t0
        resumed = _writes_resumed(cluster.url, t0)
        time.sleep(10)
        report.append(
            f"primary killed, standby promoted in {promoted:.1f} s: writes resumed {resumed:.1f} s after the kill; "
            f"{_gap(tally, t0, time.monotonic())}"
        )
        with tally.lock:
            tally.async_ops += [(BANKS[3], token, big_op) for token in big_tokens]
    finally:
        stop.set()
        for t in threads:
            t.join(timeout=180)
    assert not any(t.is_alive() for t in threads), "a client thread did not stop"

    # Every acknowledged write, on the primary now: stored once, in its bank. The async retains
    # acknowledged as operations count once their operation succeeded.
    async def stored() -> dict:
        # One snapshot for both reads: an operation that succeeds between two snapshots would
        # read as succeeded with its memories not yet seen.
        conn = await asyncpg.connect(cluster.primary_url())
        try:
            async with conn.transaction(isolation="repeatable_read", readonly=True):
                rows = await conn.fetch(
                    "SELECT bank_id, substring(text from 'Observation ([0-9a-f]{12})') AS token, count(*) AS n "
                    "FROM memories WHERE bank_id LIKE 'topo\\_%' GROUP BY 1, 2"
                )
                ops = await conn.fetch(
                    "SELECT id::text, status, attempts FROM operations WHERE bank_id LIKE 'topo\\_%' AND type = 'retain'"
                )
        finally:
            await conn.close()
        return {"rows": {(r["bank_id"], r["token"]): r["n"] for r in rows}, "ops": {r["id"]: r for r in ops}}

    deadline = time.monotonic() + 120
    while (found := asyncio.run(stored())) and time.monotonic() < deadline:
        if all(op["status"] not in ("queued", "running") for op in found["ops"].values()):
            break  # the last asynchronous retains, queued as the load stopped, are done too
        time.sleep(0.5)
    acknowledged = list(tally.acknowledged) + [
        (bank, token)
        for bank, token, op in tally.async_ops
        if op in found["ops"] and found["ops"][op]["status"] == "succeeded"
    ]
    missing = [a for a in acknowledged if found["rows"].get(a, 0) == 0]
    duplicated = [a for a in acknowledged if found["rows"].get(a, 0) > 1]
    tokens = {t for _, t in acknowledged}
    elsewhere = [(b, t) for (b, t) in found["rows"] if t in tokens and (b, t) not in set(acknowledged)]
    unfinished = [op for op in found["ops"].values() if op["status"] not in ("succeeded",)]
    reclaimed = [op for op in found["ops"].values() if op["attempts"] > 1]

    print("\n".join(["", "topology under faults:", *report]))
    print(
        f"acknowledged writes: {len(acknowledged)} ({len(tally.async_ops)} asynchronous retains); "
        f"recalls checked for read-your-writes: {tally.ryw_checked}; answers: {dict(sorted(tally.statuses.items()))}; "
        f"operations claimed again after a lost lease: {len(reclaimed)}"
    )
    assert len(acknowledged) > 50 and tally.ryw_checked > 50, "too little load to judge"
    assert not missing, f"{len(missing)} acknowledged writes lost: {missing[:5]}"
    assert not duplicated, f"{len(duplicated)} writes stored more than once: {duplicated[:5]}"
    assert not elsewhere, f"writes stored in another bank: {elsewhere[:5]}"
    assert not unfinished, f"operations not succeeded: {[dict(op) for op in unfinished][:5]}"
    assert all(op["attempts"] <= 2 for op in found["ops"].values()), "an operation was claimed more than twice"
    lost = found["ops"][lost_op]
    assert lost["status"] == "succeeded" and lost["attempts"] == 2, (
        f"the retain whose worker died: {dict(lost)} (expected: claimed again once, then succeeded)"
    )
    # The one running when the primary died either finished its attempt on the new primary (its
    # writes come after the failover) or was claimed again once its lease lapsed.
    big = found["ops"][big_op]
    assert big["status"] == "succeeded" and big["attempts"] <= 2, dict(big)
    print(f"the retain running when the primary died took {big['attempts']} attempt(s)")
    assert tally.statuses[500] == 0
    assert tally.foreign == 0
    assert not tally.failures, "\n".join(tally.failures[:20])
