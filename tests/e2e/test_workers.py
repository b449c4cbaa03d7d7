"""HINDSIGHT_API_WORKERS: several server processes on one port, one embedded PostgreSQL.

The supervisor binds the socket and spawns the workers (server/workers.py). What a user relies on:
both workers answer on the one port, background operations are run once each whichever worker
claims them, a worker that dies is replaced without the port going away, SIGTERM stops every
worker and the embedded PostgreSQL, and a configuration that cannot start stops everything with
an error instead of restarting forever.
"""

from __future__ import annotations

import os
import signal
from collections import Counter
from pathlib import Path

import httpx
import pytest

from conftest import Server, wait_for


def _children(pid: int) -> set[int]:
    """Server workers of the supervisor (the spawn context also starts a resource tracker)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmd = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == pid and b"spawn_main" in cmd:
            found.add(int(entry.name))
    return found


def _rss_kb(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def test_two_workers_share_the_port_the_database_and_the_operations(tmp_path, bank):
    data = tmp_path / "data"
    s = Server({"HINDSIGHT_API_WORKERS": "2"}, data_dir=data).start(timeout=120)
    try:
        wait_for(lambda: len(_children(s.proc.pid)) == 2, timeout=30)
        workers = _children(s.proc.pid)
        # the supervisor only watches: it has not imported the server (numpy, onnxruntime, ...)
        assert _rss_kb(s.proc.pid) < 90_000, _rss_kb(s.proc.pid)
        with s.http() as api:
            wait_for(lambda: api.get("/ready").status_code == 200, timeout=60)
            # background retains, queued from many connections: each is run exactly once
            ops = []
            for i in range(24):
                with s.http() as fresh:  # a new connection each time, so both workers take some
                    r = fresh.post(
                        f"/v1/default/banks/{bank}/memories",
                        json={"items": [{"content": f"Queued note {i}: the heron nests by pier {i}."}], "async": True},
                    )
                assert r.status_code == 200, r.text
                ops.append(r.json()["operation_id"])

            def all_done():
                states = [api.get(f"/v1/banks/{bank}/operations/{op}").json()["status"] for op in ops]
                assert "failed" not in states, states
                return all(state == "succeeded" for state in states)

            wait_for(all_done, timeout=120)
            memories = api.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["memories"]
            counts = Counter(m["text"] for m in memories)
            assert len(counts) == 24 and set(counts.values()) == {1}, counts
            texts = [
                r["text"]
                for r in api.post(f"/v1/banks/{bank}/recall", json={"query": "heron pier 7"}).json()["results"]
            ]
            assert any("pier 7" in t for t in texts), texts

            # a worker killed outright is replaced; the port keeps answering meanwhile
            victim = sorted(workers)[1]
            os.kill(victim, signal.SIGKILL)
            wait_for(lambda: len(_children(s.proc.pid) - {victim}) == 2, timeout=60)
            wait_for(lambda: api.get("/ready").status_code == 200, timeout=60)
            for _ in range(6):
                with s.http() as fresh:
                    assert fresh.post(f"/v1/banks/{bank}/recall", json={"query": "heron"}).status_code == 200
        assert s.proc.poll() is None
    finally:
        code = s.stop()
    assert code == 0
    log = s.log_path.read_text()
    assert "ended with exit code -9: starting it again" in log
    assert "Traceback" not in log
    # every worker ended, and the last one stopped the embedded PostgreSQL
    assert not _children(s.proc.pid)
    assert not (data / "pgdata" / "postmaster.pid").exists()


def test_a_worker_that_cannot_start_stops_them_all():
    s = Server(
        {
            "HINDSIGHT_API_WORKERS": "2",
            # nothing listens there: no worker can start, so none should be restarted in a loop
            "HINDSIGHT_API_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none",
        }
    )
    with pytest.raises(RuntimeError, match="server exited with 1"):
        s.start(timeout=120)  # returns as soon as the process has ended
    s.log.close()
    log = s.log_path.read_text()
    assert "could not start" in log and "starting it again" not in log, log
    with pytest.raises(httpx.TransportError):  # the port is closed, not left half-served
        httpx.get(f"{s.url}/ready", timeout=1)
