"""A database that dies under a running server, killed for real.

The embedded PostgreSQL is restarted by the server's watchdog, and requests succeed again without
restarting hindsight; while it is away they answer 503 with Retry-After (REST) or a tool error with `retry_after` (MCP),
never a 500. An external database is not ours to restart, but the server serves again once it is
back. And no stop, graceful or not, leaves a postmaster behind. Each test has a data directory of
its own: the session's PostgreSQL (`pg_url`) is never touched.
"""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import httpx
import psutil

from hindsight.db.embedded import EmbeddedPostgres

from conftest import ADMIN_KEY, AUTH_EXT, Server, wait_for
from support import tool_error

FACT = "The lighthouse keeper's cat is called Biscuit."


def postmaster(pgdata: Path) -> psutil.Process:
    """The postmaster named in postmaster.pid (its first line is the pid)."""
    return psutil.Process(int((pgdata / "postmaster.pid").read_text().split()[0]))


def postgres_running(pgdata: Path) -> list[psutil.Process]:
    """Postmasters of this data directory (their command line names it; a reaped or zombie one
    has none)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if str(pgdata) in " ".join(p.info["cmdline"] or []):
            found.append(p)
    return found


def gone(process: psutil.Process) -> bool:
    try:
        return process.status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def retain(api: httpx.Client, bank: str, content: str) -> httpx.Response:
    r = api.post(f"/v1/banks/{bank}/memories", json={"content": content})
    assert r.status_code in (200, 503), r.text  # never a 500
    return r


def assert_unavailable(r: httpx.Response) -> None:
    assert r.status_code == 503, r.text
    assert int(r.headers["Retry-After"]) > 0
    body = r.json()
    assert body["error"] == "database_unavailable" and body["message"].startswith("the database is unavailable")


def served_again(api: httpx.Client, bank: str) -> bool:
    return retain(api, bank, f"Written after the outage at {time.time()}.").status_code == 200


def recalled(api: httpx.Client, bank: str) -> list[str]:
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "what is the cat called?"})
    assert r.status_code == 200, r.text
    return [m["text"] for m in r.json()["results"]]


def recalled_when_served(api: httpx.Client, bank: str) -> list[str] | None:
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "what is the cat called?"})
    if r.status_code == 503:
        assert_unavailable(r)
        return None
    assert r.status_code == 200, r.text
    return [m["text"] for m in r.json()["results"]]


def test_killed_embedded_postgres_is_restarted(tmp_path, bank):
    data = tmp_path / "data"
    pgdata = data / "pgdata"
    s = Server({}, data_dir=data).start()
    try:
        with s.http() as api:
            assert retain(api, bank, FACT).status_code == 200
            old = postmaster(pgdata)
            old.kill()
            # The watchdog may already have restarted it: then this succeeds. Never a 500.
            r = retain(api, bank, "Written while the database was away.")
            if r.status_code == 503:
                assert_unavailable(r)
            wait_for(lambda: served_again(api, bank), timeout=60, every=0.5)
            # recall reads through the second pool (statements planned per call), whose
            # connections come back on their own schedule: a 503 until then, never a 500
            assert FACT in wait_for(lambda: recalled_when_served(api, bank), timeout=30, every=0.5)
            assert postmaster(pgdata).pid != old.pid
            # readiness pings with a 2 s limit: on a loaded machine the first ping after the
            # restart may miss it, so it must turn ready, not be ready on the first look
            wait_for(lambda: api.get("/health/ready").status_code == 200, timeout=30, every=0.5)
            assert api.get("/health/ready").json()["ready"] is True
    finally:
        assert s.stop() in (0, -15)
    log = s.log_path.read_text()
    assert f"embedded PostgreSQL (pid {old.pid}) stopped unexpectedly; restarting" in log
    assert "embedded PostgreSQL is back (pid " in log
    assert "Traceback" not in log
    # The PostgreSQL the watchdog started is stopped with the server.
    assert not postgres_running(pgdata)


def test_restart_waits_out_backends_of_the_killed_postmaster(tmp_path, bank):
    """A backend of the killed postmaster still attached to its shared memory makes PostgreSQL
    refuse to start; the watchdog says why and tries again until it has gone. (A stopped process
    holds on like a slow one would.)"""
    data = tmp_path / "data"
    pgdata = data / "pgdata"
    s = Server({}, data_dir=data).start()
    old = postmaster(pgdata)
    straggler = old.children()[0]
    try:
        with s.http() as api:
            assert retain(api, bank, FACT).status_code == 200
            straggler.suspend()
            old.kill()
            wait_for(lambda: "pre-existing shared memory block" in s.log_path.read_text(), timeout=60)
            assert_unavailable(retain(api, bank, "Written while the database was away."))
            straggler.resume()  # it notices that its postmaster died, and exits
            wait_for(lambda: served_again(api, bank), timeout=60, every=0.5)
            assert FACT in recalled(api, bank)
    finally:
        if straggler.is_running():
            straggler.resume()
        assert s.stop() in (0, -15)
    log = s.log_path.read_text()
    assert "embedded PostgreSQL did not start (" in log and "; trying again in " in log
    assert "embedded PostgreSQL is back (pid " in log and "Traceback" not in log
    assert not postgres_running(pgdata)


def test_killed_server_leaves_no_postmaster_behind(tmp_path, bank):
    """A server killed with SIGKILL stays on the wheel's list of the data directory's users, which
    kept every later server from stopping PostgreSQL: the next one forgets it."""
    data = tmp_path / "data"
    pgdata = data / "pgdata"
    first = Server({}, data_dir=data).start()
    assert first.proc is not None
    first.proc.kill()
    first.proc.wait()
    first.stop()
    assert first.proc.pid in json.loads((pgdata / ".handle_pids.json").read_text())
    assert postgres_running(pgdata)  # orphaned, still running

    second = Server({}, data_dir=data).start()
    try:
        assert second.proc is not None
        assert json.loads((pgdata / ".handle_pids.json").read_text()) == [second.proc.pid]
        with second.http() as api:
            assert retain(api, bank, FACT).status_code == 200
    finally:
        assert second.stop() in (0, -15)
    assert f"forgot pid {first.proc.pid}" in second.log_path.read_text()
    assert not postgres_running(pgdata)


def test_external_database_coming_back_is_used_again(tmp_path, bank):
    db = EmbeddedPostgres(tmp_path / "external")  # stands in for someone else's PostgreSQL
    url = db.start()
    try:
        # With API keys on: checking a key reads the database too (MCP does it before the tools).
        env = {"HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT, "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY}
        s = Server({"HINDSIGHT_API_DATABASE_URL": url, **env}).start()
        try:
            with s.http(ADMIN_KEY) as api, s.http("hs_not_a_key_of_this_server") as stranger:
                assert retain(api, bank, FACT).status_code == 200
                pm = postmaster(db.pgdata)
                pm.send_signal(signal.SIGQUIT)  # what `pg_ctl stop -m immediate` sends
                wait_for(lambda: gone(pm), timeout=30)

                assert_unavailable(retain(api, bank, "Written while the database was away."))
                r = api.post(f"/v1/default/banks/{bank}/memories/recall", json={"query": "cat"})
                assert_unavailable(r)
                assert r.json()["detail"] == r.json()["message"]  # where Hindsight's clients read it
                ready = api.get("/health/ready")
                assert ready.status_code == 503 and ready.json()["ready"] is False and ready.json()["reason"]
                assert api.get("/ready").status_code == 503
                assert api.get("/health").status_code == 200  # alive, though not ready
                metrics = api.get("/metrics")  # served, with the 503s counted
                assert metrics.status_code == 200 and 'status="503"' in metrics.text
                rpc = {
                    "jsonrpc": "2.0",
                    "id": 1,
                    "method": "tools/call",
                    "params": {"name": "recall", "arguments": {"query": "cat"}},
                }
                error = tool_error(api.post(f"/mcp/{bank}/", json=rpc).json()["result"])
                assert error["error"] == "database_unavailable" and "the database is unavailable" in error["message"]
                assert error["retry_after"] > 0
                assert_unavailable(stranger.post(f"/mcp/{bank}/", json=rpc))
                assert_unavailable(stranger.get("/v1/banks"))

                db.restart()  # nothing in hindsight restarts an external database
                wait_for(lambda: served_again(api, bank), timeout=60, every=0.5)
                assert FACT in recalled(api, bank)
                assert api.get("/health/ready").status_code == 200
                assert "result" in api.post(f"/mcp/{bank}/", json=rpc).json()
                assert stranger.get("/v1/banks").status_code == 401
        finally:
            assert s.stop() in (0, -15)
        log = s.log_path.read_text()
        assert "Traceback" not in log and "restarting" not in log
    finally:
        db.stop()
    assert not postgres_running(db.pgdata)
    assert os.getpid() not in json.loads((db.pgdata / ".handle_pids.json").read_text())
