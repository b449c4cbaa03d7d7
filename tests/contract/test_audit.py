"""Every request that reads or changes a bank, its keys or its connected apps leaves one audit
record (who, which bank, what operation, the outcome, the request id; never content), whichever
face it came through: REST, /v1/default, MCP; refused ones included. The log is read by admins
for every bank and by a bank's writers for that bank only, in our shape and the reference's,
exported as JSON lines, and pruned. The app runs in process with API keys on, on a database of
its own."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta

import asyncpg
import httpx
import pytest

from hindsight.engine.audit.logs import prune_audit_logs

from conftest import ADMIN_KEY, AUTH_EXT, fresh_database, running_app
from support import tool_error

WORD = "gribblethorn"  # made up: what a memory says, which the audit log must never hold


@pytest.fixture(scope="module")
def audit_db(pg_url):
    return fresh_database(pg_url, "audit")


@pytest.fixture(scope="module")
async def keyed_app(audit_db):
    env = {
        "HINDSIGHT_API_DATABASE_URL": audit_db,
        "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
        "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
        "HINDSIGHT_API_AUDIT_FLUSH_SECONDS": "30",  # the tests flush when they read
    }
    async with running_app(env) as application:
        yield application


def _client(app, key: str | None = None) -> httpx.AsyncClient:
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return httpx.AsyncClient(
        transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1", headers=headers, timeout=60
    )


@pytest.fixture
async def admin(keyed_app):
    async with _client(keyed_app, ADMIN_KEY) as c:
        yield c


async def _key(admin, bank: str, access: str = "read_write") -> dict:
    r = await admin.post("/v1/keys", json={"name": f"k-{access}", "role": "bank", "banks": [bank], "access": access})
    assert r.status_code == 201, r.text
    return r.json()


async def _records(app, admin, bank: str | None = None, **query) -> list[dict]:
    await app.engine.audit.flush()
    path = f"/v1/banks/{bank}/audit-logs" if bank else "/v1/audit-logs"
    r = await admin.get(path, params={"limit": 500, **query})
    assert r.status_code == 200, r.text
    return r.json()["items"]


async def _mcp_call(app, path: str, key: str, tool: str, arguments: dict) -> dict:
    """A tools/call over Streamable HTTP through the whole app (the router, the shell's middleware)."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client

    async with _client(app, key) as http:
        async with Client(streamable_http_client(f"http://127.0.0.1{path}", http_client=http)) as client:
            result = await client.call_tool(tool, arguments)
            return result.structured_content or {}


async def test_every_face_leaves_one_record(keyed_app, admin, bank):
    other = bank + "_other"
    key = await _key(admin, bank)
    reader = await _key(admin, bank, "read")
    async with (
        _client(keyed_app, key["key"]) as owner,
        _client(keyed_app, reader["key"]) as ro,
        _client(keyed_app) as anonymous,
    ):
        r = await owner.post(f"/v1/banks/{bank}/memories", json={"content": f"Nadia keeps a {WORD} in her desk."})
        assert r.status_code == 200
        memory = r.json()["memory_ids"][0]
        r = await owner.post(
            f"/v1/banks/{bank}/recall", json={"query": f"{WORD} desk"}, headers={"X-Request-Id": "client-req-42"}
        )
        assert r.status_code == 200 and r.headers["x-request-id"] == "client-req-42"
        r = await owner.get(f"/v1/banks/{bank}/memories", headers={"X-Request-Id": "not a plain id\x7f"})
        made = r.headers["x-request-id"]
        assert r.status_code == 200 and len(made) == 32 and made != "not a plain id"
        assert (
            await owner.post(f"/v1/default/banks/{bank}/memories/recall", json={"query": "desk"})
        ).status_code == 200
        assert (await owner.get(f"/v1/banks/{other}/memories")).status_code == 403
        assert (await anonymous.post(f"/v1/banks/{bank}/recall", json={"query": "desk"})).status_code == 401
        assert (await ro.delete(f"/v1/banks/{bank}/memories/{memory}")).status_code == 403
        assert (await owner.get("/health")).status_code == 200  # no bank: no record
    found = await _mcp_call(keyed_app, f"/mcp/{bank}/", key["key"], "recall", {"query": "desk"})
    assert found["results"]

    records = await _records(keyed_app, admin, bank)
    by_id = {r["request_id"]: r for r in records}
    recall = by_id["client-req-42"]
    assert recall["action"] == "recall" and recall["transport"] == "http" and recall["method"] == "POST"
    assert recall["route"] == "/v1/banks/{bank_id}/recall" and recall["status"] == 200 and recall["outcome"] == "ok"
    assert recall["principal"] == key["key_id"] and recall["bank_id"] == bank
    assert recall["duration_ms"] >= 0 and recall["ended_at"] >= recall["started_at"]
    listed = by_id[made]
    assert listed["action"] == "list_memories" and listed["principal"] == key["key_id"]  # a GET: no body, still named
    actions = [(r["transport"], r["action"], r["outcome"], r["principal"]) for r in records]
    assert ("http", "retain", "ok", key["key_id"]) in actions
    assert ("http", "recall", "ok", key["key_id"]) in actions  # ours and /v1/default's
    assert sum(1 for r in records if r["route"] == "/v1/default/banks/{bank_id}/memories/recall") == 1
    assert ("http", "recall", "unauthorized", None) in actions  # refused before its body was read
    assert ("http", "delete_memory", "forbidden", reader["key_id"]) in actions
    assert ("mcp", "recall", "ok", key["key_id"]) in actions
    mcp = next(r for r in records if r["transport"] == "mcp")
    assert mcp["route"] == "/mcp/{bank_id}" and mcp["bank_id"] == bank
    # initialize and tools/list read nothing of the bank: no record of them
    assert not [r for r in records if r["transport"] == "mcp" and r["action"] != "recall"]
    # the other bank's refusal is on the other bank's record
    refused = await _records(keyed_app, admin, other)
    assert [(r["action"], r["outcome"], r["principal"]) for r in refused] == [
        ("list_memories", "forbidden", key["key_id"])
    ]
    # key management, with no bank
    every = await _records(keyed_app, admin, None, action="create_key")
    assert every and all(r["bank_id"] is None and r["principal"] == "env" for r in every)


async def test_no_content_ever_reaches_the_log(keyed_app, admin, bank, audit_db):
    await admin.post(f"/v1/banks/{bank}/memories", json={"content": f"The {WORD} recipe needs salt.", "tags": [WORD]})
    await admin.post(f"/v1/banks/{bank}/recall", json={"query": f"{WORD} recipe"})
    await admin.post(f"/v1/banks/{bank}/entities/forget", json={"name": WORD.title(), "dry_run": True})
    await keyed_app.engine.audit.flush()
    conn = await asyncpg.connect(audit_db)
    try:
        n = await conn.fetchval("SELECT count(*) FROM audit_logs a WHERE strpos(lower(a::text), $1) > 0", WORD)
        total = await conn.fetchval("SELECT count(*) FROM audit_logs WHERE bank_id = $1", bank)
    finally:
        await conn.close()
    assert n == 0 and total >= 3


async def test_who_reads_which_records(keyed_app, admin, bank):
    other = bank + "_other"
    for b in (bank, other):
        await admin.post(f"/v1/banks/{b}/memories", json={"content": "Tobias repairs bicycles."})
    key = await _key(admin, bank)
    reader = await _key(admin, bank, "read")
    await keyed_app.engine.audit.flush()
    async with _client(keyed_app, key["key"]) as owner, _client(keyed_app, reader["key"]) as ro:
        mine = await owner.get(f"/v1/banks/{bank}/audit-logs")
        assert mine.status_code == 200 and mine.json()["items"]
        assert {e["bank_id"] for e in mine.json()["items"]} == {bank}
        # another bank's records, every bank's, or a bank the key only reads: refused on every face
        for path in (
            f"/v1/banks/{other}/audit-logs",
            f"/v1/banks/{other}/audit-logs/stats",
            f"/v1/banks/{other}/audit-logs/export",
            f"/v1/default/banks/{other}/audit-logs",
            f"/v1/default/banks/{other}/audit-logs/stats",
            "/v1/audit-logs",
            "/v1/audit-logs/export",
        ):
            r = await owner.get(path)
            assert r.status_code == 403, (path, r.status_code, r.text)
        for path in (f"/v1/banks/{bank}/audit-logs", f"/v1/default/banks/{bank}/audit-logs"):
            r = await ro.get(path)
            assert r.status_code == 403 and "may write" in r.json()["message"], (path, r.text)
    # the admin reads every bank's, filtered
    every = (await admin.get("/v1/audit-logs", params={"limit": 500})).json()
    assert {bank, other} <= {e["bank_id"] for e in every["items"]}
    only = (await admin.get("/v1/audit-logs", params={"action": "retain", "transport": "http"})).json()["items"]
    assert only and all(e["action"] == "retain" and e["transport"] == "http" for e in only)
    later = (datetime.now(UTC) + timedelta(hours=1)).isoformat()
    assert (await admin.get(f"/v1/banks/{bank}/audit-logs", params={"start_date": later})).json()["items"] == []
    assert (await admin.get(f"/v1/banks/{bank}/audit-logs", params={"limit": 501})).status_code == 422
    assert (await admin.get(f"/v1/banks/{bank}/audit-logs", params={"transport": "smtp"})).status_code == 422


async def test_reference_shape_stats_and_export(keyed_app, admin, bank):
    for _ in range(3):
        await admin.post(f"/v1/banks/{bank}/recall", json={"query": "anything"})
    await keyed_app.engine.audit.flush()
    r = await admin.get(f"/v1/default/banks/{bank}/audit-logs", params={"action": "recall"})
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["bank_id"] == bank and body["total"] == 3 and body["limit"] == 50 and body["offset"] == 0
    entry = body["items"][0]
    assert set(entry) >= {"id", "action", "transport", "bank_id", "started_at", "ended_at", "request", "response"}
    assert entry["request"]["route"] == "/v1/banks/{bank_id}/recall" and entry["request"]["request_id"]
    assert entry["response"] == {"status": 200, "outcome": "ok"} and entry["metadata"]["principal"] == "env"
    stats = (await admin.get(f"/v1/default/banks/{bank}/audit-logs/stats", params={"period": "1d"})).json()
    assert stats["trunc"] == "hour" and sum(b["actions"].get("recall", 0) for b in stats["buckets"]) == 3
    assert (await admin.get(f"/v1/default/banks/{bank}/audit-logs/stats", params={"period": "2y"})).status_code == 422
    ours = (await admin.get(f"/v1/banks/{bank}/audit-logs/stats", params={"period": "30d"})).json()
    assert ours["trunc"] == "day" and ours["buckets"]
    r = await admin.get(f"/v1/banks/{bank}/audit-logs/export")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/x-ndjson")
    lines = [json.loads(line) for line in r.text.splitlines()]
    assert [e["action"] for e in lines].count("recall") == 3
    assert lines == sorted(lines, key=lambda e: (e["started_at"], e["id"]))
    assert all(e["bank_id"] == bank for e in lines)
    everything = await admin.get("/v1/audit-logs/export")
    assert everything.status_code == 200 and len(everything.text.splitlines()) >= len(lines)


async def test_old_records_are_pruned(keyed_app, admin, bank, audit_db):
    await admin.post(f"/v1/banks/{bank}/recall", json={"query": "anything"})
    await keyed_app.engine.audit.flush()
    conn = await asyncpg.connect(audit_db)
    try:
        await conn.execute(
            "UPDATE audit_logs SET started_at = now() - interval '100 days' WHERE bank_id = $1 AND action = 'recall'",
            bank,
        )
        await admin.post(f"/v1/banks/{bank}/recall", json={"query": "anything"})
        await keyed_app.engine.audit.flush()
        assert await prune_audit_logs(keyed_app.engine.rt, 90) >= 1
        left = await conn.fetch("SELECT started_at FROM audit_logs WHERE bank_id = $1 AND action = 'recall'", bank)
    finally:
        await conn.close()
    assert len(left) == 1 and left[0]["started_at"] > datetime.now(UTC) - timedelta(days=1)


async def test_tool_calls_without_http_are_on_the_record(keyed_app, admin, bank):
    """`hindsight mcp` (stdio) serves tools with no HTTP request around them: the handler records them."""
    from hindsight.engine.access.keys import Principal

    from conftest import mcp_local

    who = Principal("bank", key_id="key_local", banks=frozenset({bank}))
    async with mcp_local(keyed_app, bank=bank, who=who) as client:
        await client.call_tool("retain", {"content": "Pia bakes rye bread."})
        tool_error(await client.call_tool("get_mental_model", {"mental_model_id": "none-here"}))
    records = await _records(keyed_app, admin, bank, transport="mcp")
    assert {(r["action"], r["outcome"], r["principal"], r["route"]) for r in records} == {
        ("retain", "ok", "key_local", None),
        ("get_mental_model", "not_found", "key_local", None),
    }


async def test_reads_by_id_alone_are_on_the_bank_record(keyed_app, admin, bank):
    """A chunk read by its id alone and an export downloaded by its key name no bank in their path:
    they read the bank all the same, and its owner's log shows who did, refused reads included."""
    import asyncio

    other = bank + "_other"
    key = await _key(admin, bank)
    stranger = await _key(admin, other)
    r = await admin.post(f"/v1/banks/{bank}/memories", json={"content": f"Ines hides a {WORD}.", "document_id": "d1"})
    assert r.status_code == 200, r.text
    chunk = (await admin.get(f"/v1/default/banks/{bank}/documents/d1/chunks")).json()["items"][0]["chunk_id"]
    async with _client(keyed_app, key["key"]) as owner, _client(keyed_app, stranger["key"]) as them:
        assert (await owner.get(f"/v1/default/chunks/{chunk}")).status_code == 200
        assert (await them.get(f"/v1/default/chunks/{chunk}")).status_code == 404
        op = (await owner.post(f"/v1/default/banks/{bank}/document-transfer/export")).json()["operation_id"]
        for _ in range(200):
            status = (await owner.get(f"/v1/default/banks/{bank}/operations/{op}")).json()
            if status["status"] == "completed":
                break
            await asyncio.sleep(0.05)
        url = status["result_metadata"]["download_url"]
        assert (await owner.get(url)).status_code == 200
        assert (await them.get(url)).status_code == 403
    records = await _records(keyed_app, admin, bank)
    got = {
        (r["action"], r["outcome"], r["principal"]) for r in records if r["action"] in ("get_chunk", "download_file")
    }
    assert got == {
        ("get_chunk", "ok", key["key_id"]),
        ("download_file", "ok", key["key_id"]),
        ("download_file", "forbidden", stranger["key_id"]),
    }
    # the chunk another key could not find names no bank: on the admins' log, not on this bank's
    unnamed = await _records(keyed_app, admin, None, action="get_chunk")
    assert ("not_found", stranger["key_id"]) in {(r["outcome"], r["principal"]) for r in unnamed}


async def test_a_tool_that_finds_its_bank_records_that_bank(keyed_app, admin, bank):
    """delete_document on the multi-bank endpoint without a bank finds the document's bank itself:
    the deletion is on that bank's record, not on the default bank's."""
    r = await admin.post(
        f"/v1/banks/{bank}/documents",
        params={"wait": True},
        json={"files": [{"name": "m.txt", "text": "The Falcon router draws 12 watts."}]},
    )
    assert r.status_code == 202, r.text
    doc = (await admin.get(f"/v1/banks/{bank}/documents")).json()["documents"][0]["document_id"]
    done = await _mcp_call(keyed_app, "/mcp/", ADMIN_KEY, "delete_document", {"doc_id": doc, "confirm": True})
    assert done["deleted"] is True and done["bank_id"] == bank
    records = await _records(keyed_app, admin, bank, transport="mcp")
    assert [(r["action"], r["outcome"]) for r in records] == [("delete_document", "ok")]
