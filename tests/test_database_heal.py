"""Database processes and servers killed for real.

No stop, graceful or not, leaves a postmaster behind. Each test has a data directory of its own:
the session's PostgreSQL (`pg_url`) is never touched.
"""

from __future__ import annotations

import json
from pathlib import Path

import httpx
import psutil

from conftest import Server

FACT = "The lighthouse keeper's cat is called Biscuit."


def postgres_running(pgdata: Path) -> list[psutil.Process]:
    """Postmasters of this data directory (their command line names it; a reaped or zombie one
    has none)."""
    found = []
    for p in psutil.process_iter(["cmdline"]):
        if str(pgdata) in " ".join(p.info["cmdline"] or []):
            found.append(p)
    return found


def retain(api: httpx.Client, bank: str, content: str) -> httpx.Response:
    r = api.post(f"/v1/banks/{bank}/memories", json={"content": content})
    assert r.status_code in (200, 503), r.text  # never a 500
    return r


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
