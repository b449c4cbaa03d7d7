"""Start-up configuration, embedded PostgreSQL persistence across restarts, concurrency, CLI."""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys

import asyncpg
import httpx
import psutil

from hindsight.db.embedded import cache_mb

from conftest import Server


def serve_fails(env: dict) -> str:
    full = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    full.update(env)
    p = subprocess.run(
        [sys.executable, "-m", "hindsight.cli.main", "serve"], env=full, capture_output=True, text=True, timeout=60
    )
    assert p.returncode == 2, p.stderr
    return p.stderr


def test_bad_configuration_names_the_variable():
    assert "HINDSIGHT_API_PROT" in serve_fails({"HINDSIGHT_API_PROT": "1"})
    assert "did you mean HINDSIGHT_API_PORT" in serve_fails({"HINDSIGHT_API_PROT": "1"})
    assert "HINDSIGHT_API_PORT" in serve_fails({"HINDSIGHT_API_PORT": "eighty"})
    assert "HINDSIGHT_API_MCP_ENABLED" in serve_fails({"HINDSIGHT_API_MCP_ENABLED": "perhaps"})
    assert "HINDSIGHT_MCP_BANK_ID" in serve_fails({"HINDSIGHT_MCP_BANK_ID": "not valid!"})
    assert "HINDSIGHT_API_TENANT_API_KEY" in serve_fails(
        {"HINDSIGHT_API_TENANT_EXTENSION": "hindsight.extensions.builtin.tenant:ApiKeyTenantExtension"}
    )
    assert "Traceback" not in serve_fails({"HINDSIGHT_API_LOG_LEVEL": "loud"})
    assert "HINDSIGHT_API_EMBEDDED_DB_CACHE_MB" in serve_fails({"HINDSIGHT_API_EMBEDDED_DB_CACHE_MB": "8"})
    pools = serve_fails({"HINDSIGHT_API_DB_POOL_MIN": "5", "HINDSIGHT_API_DB_POOL_MAX": "3"})
    assert "HINDSIGHT_API_DB_POOL_MAX" in pools and "at least HINDSIGHT_API_DB_POOL_MIN (5)" in pools


def test_database_without_vector_is_a_clear_error(tmp_path):
    s = Server({"HINDSIGHT_API_DATABASE_URL": "postgresql://nobody@127.0.0.1:1/none"})
    try:
        s.start(timeout=30)
        raise AssertionError("server started against an unreachable database")
    except RuntimeError as exc:
        assert "Traceback" not in str(exc) and "hindsight:" in str(exc)
    finally:
        if s.proc and s.proc.poll() is None:
            s.stop()


async def embedded_cache_mb(pgdata) -> int:
    """shared_buffers of the running embedded PostgreSQL (socket directory from postmaster.pid)."""
    lines = (pgdata / "postmaster.pid").read_text().splitlines()
    conn = await asyncpg.connect(host=lines[4], port=int(lines[3]), user="postgres", database="postgres")
    try:
        return await conn.fetchval("SELECT setting::bigint * 8 / 1024 FROM pg_settings WHERE name = 'shared_buffers'")
    finally:
        await conn.close()


async def test_embedded_postgres_restart_keeps_memories(tmp_path, bank):
    pgdata = tmp_path / "data" / "pgdata"
    s = Server({"HINDSIGHT_API_EMBEDDED_DB_CACHE_MB": "48"}, data_dir=tmp_path / "data").start()
    try:
        # The buffer cache setting reaches even the first start (between initdb and start).
        assert await embedded_cache_mb(pgdata) == 48
        with s.http() as api:
            assert api.get("/health").json()["database"] == "embedded"
            api.post(
                f"/v1/banks/{bank}/memories", json={"content": "The spare key is under the blue flowerpot."}
            ).raise_for_status()
        log = s.log_path.read_text()
        assert "embedded PostgreSQL in" in log
    finally:
        # uvicorn shuts down gracefully, then re-raises SIGTERM so the exit status says why
        assert s.stop() in (0, -15)
    assert "Application shutdown complete" in s.log_path.read_text()
    assert not [p for p in psutil.process_iter(["cmdline"]) if str(pgdata) in " ".join(p.info["cmdline"] or [])]
    s2 = Server({}, data_dir=tmp_path / "data").start()
    try:
        assert await embedded_cache_mb(pgdata) == cache_mb(0) >= 128  # back to automatic
        with s2.http() as api:
            res = api.post(f"/v1/banks/{bank}/recall", json={"query": "where is the spare key?"}).json()["results"]
            assert res[0]["text"] == "The spare key is under the blue flowerpot."
            assert bank in [b["bank_id"] for b in api.get("/v1/banks").json()["banks"]]
    finally:
        s2.stop()


async def test_concurrent_retains_lose_nothing(server, bank):
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:

        async def one(i):
            items = [
                {
                    "content": f"Writer {i} note {j} mentions Alice and Bob.",
                    "document_id": f"d{i % 3}" if j == 0 else None,
                }
                for j in range(10)
            ]
            r = await c.post(
                f"/v1/banks/{bank}/memories", json={"items": [{k: v for k, v in it.items() if v} for it in items]}
            )
            assert r.status_code == 200, r.text

        await asyncio.gather(*(one(i) for i in range(24)))
        total = (await c.get(f"/v1/banks/{bank}/memories", params={"limit": 1})).json()["total"]
        # 24 writers x 9 free items + the surviving unit of each of the 3 replaced documents
        assert total == 24 * 9 + 3
        stats = (await c.get(f"/v1/banks/{bank}")).json()
        assert stats["document_count"] == 3 and stats["entity_count"] >= 2


def test_cli_round_trip(server, bank):
    env = {**os.environ, "HINDSIGHT_URL": server.url}

    def run(*a):
        return subprocess.run(
            [sys.executable, "-m", "hindsight.cli.main", *a], env=env, capture_output=True, text=True, timeout=60
        )

    assert run("banks", "create", bank, "--name", "CLI bank").returncode == 0
    assert run("retain", bank, "The CLI stored this fact about lighthouses.", "--tag", "cli").returncode == 0
    out = run("recall", bank, "lighthouses")
    assert out.returncode == 0 and "lighthouses" in out.stdout
    # the CLI leaves defaults and limits to the server: it sends a budget only when given one
    assert "lighthouses" in run("recall", bank, "lighthouses", "--max-tokens", "2048").stdout
    over = run("recall", bank, "lighthouses", "--max-tokens", "0")
    assert over.returncode == 1 and "max_tokens" in over.stderr and "Traceback" not in over.stderr
    assert run("operations", "list", bank).returncode == 0
    assert bank in run("banks", "list").stdout
    empty = run("recall", bank + "_none", "x")  # a bank never written reads as empty
    assert empty.returncode == 0 and empty.stdout == "" and "no memories match" in empty.stderr
    bad = run("banks", "get", bank + "_none")
    assert bad.returncode == 1 and "404" in bad.stderr and "Traceback" not in bad.stderr
    assert run("banks", "delete", bank, "--yes").returncode == 0
