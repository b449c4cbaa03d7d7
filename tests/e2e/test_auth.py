"""API keys: admin key from the environment, stored hashed keys, bank scoping on every route."""

from __future__ import annotations

import asyncpg
import httpx
import pytest

from conftest import ADMIN_KEY, mcp_session
from support import make_key, tool_error


@pytest.fixture
def admin(auth_server):
    with auth_server.http(ADMIN_KEY) as c:
        yield c


def test_key_required_everywhere(auth_server, bank):
    with auth_server.http() as anon:
        for method, path, body in [
            ("GET", "/v1/banks", None),
            ("POST", f"/v1/banks/{bank}/memories", {"content": "x"}),
            ("POST", f"/v1/banks/{bank}/recall", {"query": "x"}),
            ("GET", "/v1/keys", None),
        ]:
            r = anon.request(method, path, json=body)
            assert r.status_code == 401 and r.json()["error"] == "unauthorized", path
        for path in ("/mcp", f"/mcp/{bank}/"):
            r = anon.post(path, json={"jsonrpc": "2.0", "method": "tools/list", "id": 1})
            assert r.status_code == 401 and "API key" in r.json()["message"]
        assert anon.get("/health").status_code == 200
    with auth_server.http("wrong-key") as bad:
        assert bad.get("/v1/banks").status_code == 401
    with httpx.Client(base_url=auth_server.url, headers={"Authorization": "Basic abc"}) as basic:
        assert basic.get("/v1/banks").status_code == 401


async def test_admin_key_mcp_both_modes(auth_server, admin, bank):
    hdr = {"Authorization": f"Bearer {ADMIN_KEY}"}
    async with mcp_session(f"{auth_server.url}/mcp/{bank}/", hdr) as c:
        assert not (await c.call_tool("retain", {"content": "admin wrote this"})).is_error
    async with mcp_session(f"{auth_server.url}/mcp", {**hdr, "X-Bank-Id": bank}) as c:
        r = await c.call_tool("recall", {"query": "admin"})
        assert r.structured_content["results"][0]["text"] == "admin wrote this"


async def test_keys_are_hashed_and_revocable(auth_server, admin, pg_url, bank):
    k = make_key(admin, role="bank", banks=[bank])
    secret = k["key"]
    assert secret.startswith("hsk_")
    conn = await asyncpg.connect(pg_url)
    try:
        stored = await conn.fetchrow("SELECT * FROM api_keys WHERE id = $1", k["key_id"])
        assert secret not in [str(v) for v in stored.values()]
        assert stored["key_hash"] != secret and len(stored["key_hash"]) == 64
    finally:
        await conn.close()
    listed = admin.get("/v1/keys").json()["keys"]
    assert all(x.get("key") is None for x in listed) and k["key_id"] in [x["key_id"] for x in listed]
    with auth_server.http(secret) as c:
        assert c.post(f"/v1/banks/{bank}/memories", json={"content": "hello"}).status_code == 200
        assert admin.delete(f"/v1/keys/{k['key_id']}").status_code == 200
        assert c.post(f"/v1/banks/{bank}/recall", json={"query": "hello"}).status_code == 401


async def test_scoped_key_reaches_only_its_banks_by_every_route(auth_server, admin, bank):
    mine, theirs = bank + "_mine", bank + "_theirs"
    admin.post(f"/v1/banks/{theirs}/memories", json={"content": "Their secret is the blue door."}).raise_for_status()
    secret = make_key(admin, role="bank", banks=[mine])["key"]
    auth = {"Authorization": f"Bearer {secret}"}
    # REST
    with auth_server.http(secret) as c:
        assert c.post(f"/v1/banks/{mine}/memories", json={"content": "My note about the red door."}).status_code == 200
        for method, path, body in [
            ("POST", f"/v1/banks/{theirs}/recall", {"query": "door"}),
            ("POST", f"/v1/banks/{theirs}/memories", {"content": "intrusion"}),
            ("GET", f"/v1/banks/{theirs}", None),
            ("GET", f"/v1/banks/{theirs}/memories", None),
            ("DELETE", f"/v1/banks/{theirs}", None),
            ("PATCH", f"/v1/banks/{theirs}", {"name": "x"}),
        ]:
            r = c.request(method, path, json=body)
            assert r.status_code == 403 and r.json()["error"] == "forbidden", (method, path)
        assert [b["bank_id"] for b in c.get("/v1/banks").json()["banks"]] == [mine]
        assert c.post("/v1/banks", json={"bank_id": "newbank"}).status_code == 403
        assert c.get("/v1/keys").status_code == 403
        assert c.post("/v1/keys", json={"name": "escalate", "role": "admin"}).status_code == 403
    # MCP path route
    with httpx.Client(base_url=auth_server.url, headers=auth) as h:
        r = h.post(f"/mcp/{theirs}/", json={"jsonrpc": "2.0", "method": "tools/list", "id": 1})
        assert r.status_code == 403
        # MCP header route
        r = h.post("/mcp", json={"jsonrpc": "2.0", "method": "tools/list", "id": 1}, headers={"X-Bank-Id": theirs})
        assert r.status_code == 403
    async with mcp_session(f"{auth_server.url}/mcp/{mine}/", auth) as c:
        r = await c.call_tool("recall", {"query": "door"})
        assert [m["text"] for m in r.structured_content["results"]] == ["My note about the red door."]
    # MCP argument route (also overriding an allowed header)
    async with mcp_session(f"{auth_server.url}/mcp", {**auth, "X-Bank-Id": mine}) as c:
        for tool, args in [("recall", {"query": "door"}), ("retain", {"content": "intrusion"})]:
            e = tool_error(await c.call_tool(tool, {**args, "bank_id": theirs}))
            assert e["error"] == "forbidden" and theirs in e["message"]
        e = tool_error(await c.call_tool("create_bank", {"bank_id": "sneaky"}))
        assert e["error"] == "forbidden"
        banks = (await c.call_tool("list_banks", {})).structured_content["banks"]
        assert [b["bank_id"] for b in banks] == [mine]
    # default bank (HINDSIGHT_MCP_BANK_ID) is also checked
    async with mcp_session(f"{auth_server.url}/mcp", auth) as c:
        e = tool_error(await c.call_tool("recall", {"query": "door"}))
        assert e["error"] == "forbidden"
    assert "intrusion" not in str(admin.get(f"/v1/banks/{theirs}/memories").json())


def test_read_only_key(auth_server, admin, bank):
    admin.post(f"/v1/banks/{bank}/memories", json={"content": "Readable fact."}).raise_for_status()
    secret = make_key(admin, role="bank", banks=[bank], access="read")["key"]
    with auth_server.http(secret) as c:
        assert c.post(f"/v1/banks/{bank}/recall", json={"query": "fact"}).status_code == 200
        r = c.post(f"/v1/banks/{bank}/memories", json={"content": "write attempt"})
        assert r.status_code == 403 and "only read" in r.json()["message"]


def test_curation_needs_write_access_and_names_the_key(auth_server, admin, bank):
    """A read-only key reads a memory's history but cannot correct, invalidate or restore it, on
    either API; a read-write key's changes are recorded under its id (never its secret)."""
    mid = admin.post(f"/v1/banks/{bank}/memories", json={"content": "Kim plays the cello."}).json()["memory_ids"][0]
    reader = make_key(admin, role="bank", banks=[bank], access="read")["key"]
    writer = make_key(admin, role="bank", banks=[bank])
    with auth_server.http(reader) as c:
        for method, path, body in (
            ("PATCH", f"/v1/banks/{bank}/memories/{mid}", {"text": "Kim plays the viola."}),
            ("POST", f"/v1/banks/{bank}/memories/{mid}/invalidate", None),
            ("PATCH", f"/v1/default/banks/{bank}/memories/{mid}", {"state": "invalidated"}),
            ("POST", f"/v1/banks/{bank}/memories", {"content": "Kim quit.", "supersedes": [mid]}),
        ):
            r = c.request(method, path, json=body)
            assert r.status_code == 403 and "only read" in r.json()["message"], (path, r.text)
        assert c.get(f"/v1/banks/{bank}/memories/{mid}/history").status_code == 200
    with auth_server.http(writer["key"]) as c:
        r = c.patch(f"/v1/banks/{bank}/memories/{mid}", json={"text": "Kim plays the viola.", "reason": "misheard"})
        assert r.status_code == 200, r.text
        history = c.get(f"/v1/banks/{bank}/memories/{mid}/history").json()
    assert history["versions"][-1]["actor"] == writer["key_id"] != writer["key"]
    assert writer["key"] not in str(history)
    assert history["memory"]["text"] == "Kim plays the viola."


def test_admin_role_key_and_validation(auth_server, admin, bank):
    secret = make_key(admin, role="admin")["key"]
    with auth_server.http(secret) as c:
        assert c.post("/v1/banks", json={"bank_id": bank}).status_code == 201
        assert c.get("/v1/keys").status_code == 200
    assert admin.post("/v1/keys", json={"name": "x", "role": "bank"}).status_code == 422
    assert admin.post("/v1/keys", json={"name": "x", "role": "root"}).status_code == 422
    assert admin.post("/v1/keys", json={"name": "x", "banks": ["bad id"]}).status_code == 422
    assert admin.delete("/v1/keys/key_nope").status_code == 404


async def test_scoped_key_and_llm_tools(auth_server, admin, bank):
    """Reflect, mental models and operations obey the same scoping as retain and recall."""
    other = bank + "_other"
    for b in (bank, other):
        admin.post(f"/v1/banks/{b}/memories", json={"content": f"Fact of {b}."}).raise_for_status()
    created = admin.post(f"/v1/banks/{other}/mental-models", json={"name": "M", "source_query": "facts?"}).json()
    reader = make_key(admin, role="bank", banks=[bank], access="read")["key"]
    with auth_server.http(reader) as c:
        assert c.post(f"/v1/banks/{bank}/reflect", json={"query": "facts"}).status_code == 200
        assert c.post(f"/v1/banks/{other}/reflect", json={"query": "facts"}).status_code == 403
        assert c.get(f"/v1/banks/{other}/operations/{created['operation_id']}").status_code == 403
        assert c.get(f"/v1/banks/{other}/mental-models").status_code == 403
        r = c.post(f"/v1/banks/{bank}/mental-models", json={"name": "x", "source_query": "y"})
        assert r.status_code == 403 and "only read" in r.json()["message"]
        assert c.get(f"/v1/banks/{bank}/usage").status_code == 200
    async with mcp_session(f"{auth_server.url}/mcp/{bank}/", {"Authorization": f"Bearer {reader}"}) as client:
        e = tool_error(await client.call_tool("create_mental_model", {"name": "x", "source_query": "y"}))
        assert e["error"] == "forbidden"
    async with mcp_session(f"{auth_server.url}/mcp/", {"Authorization": f"Bearer {reader}"}) as client:
        e = tool_error(
            await client.call_tool("get_operation", {"operation_id": created["operation_id"], "bank_id": other})
        )
        assert e["error"] == "forbidden"
