"""Forgetting and the audit log through a `hindsight serve` process: the real HTTP stack (the
request id in and out), the official MCP client over Streamable HTTP with API keys (a tool call on
the record with its bank; a refused key at the door too), a clean stop writing the records that
waited, and the CLI's forget and audit commands."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import uuid

import asyncpg
import pytest

from conftest import ADMIN_KEY, AUTH_EXT, Server, fresh_database, mcp_session, wait_for


async def _rows(url: str, sql: str, *args) -> list:
    conn = await asyncpg.connect(url)
    try:
        return [dict(r) for r in await conn.fetch(sql, *args)]
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def audited(pg_url):
    """A server with keys on, writing its audit log only every minute: what a test reads before
    that was written by its clean stop."""
    db = fresh_database(pg_url, "audit_server")
    env = {
        "HINDSIGHT_API_DATABASE_URL": db,
        "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
        "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
        "HINDSIGHT_API_AUDIT_FLUSH_SECONDS": "60",
    }
    return env, db


def test_a_clean_stop_writes_the_records_that_waited(audited):
    env, db = audited
    bank = "t_" + uuid.uuid4().hex[:10]
    server = Server(env).start()
    try:
        with server.http(ADMIN_KEY) as admin:
            key = admin.post("/v1/keys", json={"name": "k", "role": "bank", "banks": [bank]}).json()
            with server.http(key["key"]) as owner:
                r = owner.post(f"/v1/banks/{bank}/memories", json={"content": "Ola grows kale."})
                assert r.status_code == 200 and r.headers["x-request-id"]
                r = owner.post(f"/v1/banks/{bank}/recall", json={"query": "kale"}, headers={"X-Request-Id": "trace-7"})
                assert r.headers["x-request-id"] == "trace-7"

            async def over_mcp():
                async with mcp_session(f"{server.url}/mcp/{bank}/", {"Authorization": f"Bearer {key['key']}"}) as c:
                    result = await c.call_tool("recall", {"query": "kale"})
                    assert not result.is_error

            asyncio.run(over_mcp())
            with server.http("hsk_wrong") as stranger:  # a wrong key, refused at the door
                call = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "recall"}}
                r = stranger.post(f"/mcp/{bank}/", json=call, headers={"Accept": "application/json, text/event-stream"})
                assert r.status_code == 401
        # nothing written yet: the flush interval is a minute
        assert asyncio.run(_rows(db, "SELECT 1 FROM audit_logs WHERE bank_id = $1", bank)) == []
    finally:
        assert server.stop() in (0, -15)  # a clean stop (the signal, as test_lifecycle accepts)
    rows = asyncio.run(
        _rows(
            db,
            "SELECT transport, action, status, outcome, principal, request_id FROM audit_logs WHERE bank_id = $1",
            bank,
        )
    )
    seen = {(r["transport"], r["action"], r["outcome"], r["principal"]) for r in rows}
    assert ("http", "retain", "ok", key["key_id"]) in seen
    assert ("mcp", "recall", "ok", key["key_id"]) in seen
    assert ("mcp", "mcp", "unauthorized", None) in seen
    assert any(r["request_id"] == "trace-7" and r["action"] == "recall" for r in rows)


def test_the_cli_forgets_and_reads_the_audit_log(server, bank, tmp_path):
    env = {**os.environ, "HINDSIGHT_URL": server.url}

    def run(*a):
        done = subprocess.run(
            [sys.executable, "-m", "hindsight.cli.main", *a], env=env, capture_output=True, text=True, timeout=60
        )
        assert "Traceback" not in done.stderr, done.stderr
        return done

    for text in ("Cedric Vantablue feeds the geese.", "Cedric Vantablue owns a red kayak.", "Mina sings."):
        assert run("retain", bank, text).returncode == 0
    dry = run("forget", "entity", bank, "Cedric Vantablue", "--dry-run")
    assert dry.returncode == 0 and "would forget 2 memories" in dry.stdout and "kayak" in dry.stdout
    done = run("forget", "entity", bank, "Cedric Vantablue", "--json")
    assert done.returncode == 0 and json.loads(done.stdout)["memories"] == 2
    left = json.loads(run("retain", bank, "Mina dances.").stdout)["memory_ids"][0]
    assert "forgot 1 memory of bank" in run("forget", "memory", bank, left).stdout
    assert run("forget", "memory", bank, left).returncode == 1  # already gone: 404
    assert "would forget 0" in run("forget", "purge", bank, "--dry-run").stdout
    assert run("banks", "update", bank, "--retention-days", "30", "--retention-tag", "chat=7").returncode == 0
    settings = json.loads(run("banks", "get", bank).stdout)
    assert settings["retention_days"] == 30 and settings["retention_by_tag"] == {"chat": 7}
    bad = run("banks", "update", bank, "--retention-tag", "chat")
    assert bad.returncode == 2 and "TAG=DAYS" in bad.stderr

    def logged():
        out = run("audit", "list", "--bank", bank, "--json")
        items = json.loads(out.stdout)["items"] if out.returncode == 0 else []
        return items if any(e["action"] == "forget_entity" for e in items) else None

    items = wait_for(logged, timeout=15)
    assert all(e["bank_id"] == bank and e["principal"] == "open" for e in items)
    listing = run("audit", "list", "--bank", bank, "--action", "forget_entity")
    assert listing.returncode == 0 and "forget_entity" in listing.stdout and "Vantablue" not in listing.stdout
    path = tmp_path / "audit.jsonl"
    assert run("audit", "export", "--bank", bank, "-o", str(path)).returncode == 0
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    assert {e["action"] for e in lines} >= {"retain", "forget_entity", "delete_memory", "purge_memories"}
    assert "vantablue" not in path.read_text().lower()
    stats = json.loads(run("audit", "stats", bank, "--period", "1d").stdout)
    assert stats["trunc"] == "hour" and stats["buckets"]
