"""MCP over Streamable HTTP with the official SDK client: both surfaces, bank resolution and the
HTTP shapes clients send (argument validation is in tests/contract/test_mcp_tools.py)."""

from __future__ import annotations

import json

import asyncpg
import httpx

from conftest import Server, mcp_session
from support import tool_error


async def tool_names(url, headers=None):
    async with mcp_session(url, headers) as c:
        return {t.name: t for t in (await c.list_tools()).tools}


async def test_single_bank_surface(server, bank):
    tools = await tool_names(f"{server.url}/mcp/{bank}/")
    assert set(tools) == {
        "retain",
        "retain_batch",
        "sync_retain",
        "recall",
        "get_bank",
        "get_bank_stats",
        "update_bank",
        "delete_bank",
        "list_memories",
        "get_memory",
        "clear_memories",
        "clear_mental_model",
        "reflect",
        "create_mental_model",
        "list_mental_models",
        "get_mental_model",
        "update_mental_model",
        "delete_mental_model",
        "refresh_mental_model",
        "update_memory",
        "invalidate_memory",
        "forget_memory",
        "purge_memories",
        "forget_entity",
        "forget_retained_document",
        "get_operation",
        "list_operations",
        "cancel_operation",
        "rag_search",
        "verify_document_access",
        "search_documents",
        "import_documents",
        "list_documents",
        "get_document",
        "delete_document",
        "list_directives",
        "create_directive",
        "get_directive",
        "update_directive",
        "delete_directive",
        "list_tags",
        "get_knowledge_base_tree",
        "search_knowledge_base",
        "get_knowledge_page",
        "create_knowledge_folder",
        "create_knowledge_page",
        "update_knowledge_node",
        "delete_knowledge_node",
    }
    assert all("bank_id" not in t.input_schema.get("properties", {}) for t in tools.values())
    assert tools["delete_mental_model"].annotations.destructive_hint is True
    assert tools["get_mental_model"].annotations.read_only_hint is True
    assert set(tools["create_mental_model"].input_schema["required"]) == {"name", "source_query"}
    assert "bank_id" not in tools["recall"].input_schema["properties"]
    assert tools["recall"].annotations.read_only_hint is True
    assert tools["retain"].annotations.read_only_hint is False
    assert tools["update_memory"].annotations.read_only_hint is False
    assert set(tools["update_memory"].input_schema["required"]) == {"memory_id"}
    assert "supersedes" in tools["retain"].input_schema["properties"]
    async with mcp_session(f"{server.url}/mcp/{bank}/") as c:
        r = await c.call_tool(
            "retain",
            {
                "content": "User prefers Python over JavaScript for backend development",
                "context": "programming_preferences",
            },
        )
        assert not r.is_error and len(r.structured_content["memory_ids"]) == 1
        r = await c.call_tool("recall", {"query": "What are the user's programming language preferences?"})
        assert r.structured_content["results"][0]["text"].startswith("User prefers Python")
        assert "User prefers Python" in r.content[0].text


def _nulls(value, path="") -> list[str]:
    if value is None:
        return [path]
    if isinstance(value, dict):
        return [p for k, v in value.items() for p in _nulls(v, f"{path}.{k}")]
    if isinstance(value, list):
        return [p for i, v in enumerate(value) for p in _nulls(v, f"{path}[{i}]")]
    return []


async def test_recall_result_is_lean(server, bank):
    """recall over MCP leaves out null fields and writes its text block as compact JSON; the
    official client checks the result against the output schema on every call, and REST keeps
    the full shape with the same memories."""
    items = [
        {"content": "Ann moved to Lisbon for the new job", "timestamp": "2026-03-02T10:00:00Z"},
        {"content": "Ann's sister Bea visited Lisbon in May", "document_id": "diary-1", "tags": ["family"]},
        {"content": "Ann ran a half marathon in Lisbon", "metadata": {"source": "chat"}},
    ]
    with httpx.Client(base_url=server.url) as c:
        assert c.post(f"/v1/banks/{bank}/memories", json={"items": items}).status_code == 200
        rest = c.post(f"/v1/banks/{bank}/recall", json={"query": "What did Ann do in Lisbon?"}).json()
    assert len(rest["results"]) == 3 and _nulls(rest["results"])  # REST: every field, nulls too
    for url, args in ((f"/mcp/{bank}/", {}), ("/mcp/", {"bank_id": bank})):
        async with mcp_session(f"{server.url}{url}") as c:
            r = await c.call_tool("recall", {"query": "What did Ann do in Lisbon?", **args})
        assert not r.is_error
        data = r.structured_content
        assert _nulls(data) == []
        assert json.loads(r.content[0].text) == data
        assert "\n" not in r.content[0].text and '", "' not in r.content[0].text
        assert [m["id"] for m in data["results"]] == [m["id"] for m in rest["results"]]
        for full, lean in zip(rest["results"], data["results"]):
            assert lean == {k: v for k, v in full.items() if v is not None}
        by_text = {m["text"]: m for m in data["results"]}
        assert by_text["Ann's sister Bea visited Lisbon in May"]["document_id"] == "diary-1"
        assert by_text["Ann's sister Bea visited Lisbon in May"]["tags"] == ["family"]
        assert by_text["Ann moved to Lisbon for the new job"]["mentioned_at"].startswith("2026-03-02")
        assert by_text["Ann ran a half marathon in Lisbon"]["metadata"] == {"source": "chat"}
        assert "invalidated_at" not in by_text["Ann ran a half marathon in Lisbon"]


async def test_recall_of_a_vector_of_zeros(server, bank, pg_url):
    """A memory stored with a vector of zeros (an older server imported one; written here directly)
    has a NaN cosine distance to every query: recall answers it with relevance 0, over REST and
    MCP, and the MCP text block stays the JSON of the structured content (no NaN in it)."""
    items = [{"content": "Quentin paddled a kayak on the lake"}, {"content": "Quentin bought a kayak paddle"}]
    with httpx.Client(base_url=server.url) as c:
        assert c.post(f"/v1/banks/{bank}/memories", json={"items": items}).status_code == 200
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute(
            "UPDATE memories SET embedding = array_fill(0, ARRAY[vector_dims(embedding)])::real[]::vector"
            " WHERE bank_id = $1 AND text LIKE '%lake'",
            bank,
        )
    finally:
        await conn.close()
    with httpx.Client(base_url=server.url) as c:
        for mode in ("hybrid", "vector"):
            r = c.post(f"/v1/banks/{bank}/recall", json={"query": "Quentin kayak", "mode": mode})
            assert r.status_code == 200, r.text
            rel = {m["text"]: m["relevance"] for m in r.json()["results"]}
            assert rel["Quentin paddled a kayak on the lake"] == 0.0, rel
    async with mcp_session(f"{server.url}/mcp/{bank}/") as c:
        r = await c.call_tool("recall", {"query": "Quentin kayak", "mode": "vector"})
    assert "NaN" not in r.content[0].text and json.loads(r.content[0].text) == r.structured_content
    zero = next(m for m in r.structured_content["results"] if m["text"].endswith("lake"))
    assert zero["relevance"] == 0.0


async def test_multi_bank_surface_and_resolution(server, bank):
    tools = await tool_names(f"{server.url}/mcp/")
    assert {"retain", "recall", "retain_batch", "list_banks", "create_bank", "reflect", "refresh_mental_model"} <= set(
        tools
    )
    collection_aliases = {
        "list_collections",
        "create_collection",
        "fetch_and_add_document_from_url",
        "delete_collection",
        "search_rag",
    }
    assert all(
        "bank_id" in t.input_schema["properties"]
        for n, t in tools.items()
        if n not in {"list_banks", *collection_aliases}
    )
    assert "bank_id" in tools["recall"].input_schema["properties"]
    assert "bank_id" in tools["create_bank"].input_schema["required"]
    h_bank, a_bank = bank + "_h", bank + "_a"
    async with mcp_session(f"{server.url}/mcp", {"X-Bank-Id": h_bank}) as c:
        created = await c.call_tool("create_bank", {"bank_id": a_bank, "name": "Arg bank", "mission": "test"})
        assert created.structured_content["created"] is True
        await c.call_tool("retain", {"content": "Header bank memory about kayaks."})
        await c.call_tool("retain", {"content": "Argument bank memory about kayaks.", "bank_id": a_bank})
        by_header = await c.call_tool("recall", {"query": "kayaks"})
        by_arg = await c.call_tool("recall", {"query": "kayaks", "bank_id": a_bank})
        assert [m["text"] for m in by_header.structured_content["results"]] == ["Header bank memory about kayaks."]
        assert [m["text"] for m in by_arg.structured_content["results"]] == ["Argument bank memory about kayaks."]
        banks = {b["bank_id"] for b in (await c.call_tool("list_banks", {})).structured_content["banks"]}
        assert {h_bank, a_bank} <= banks


async def test_env_default_bank(pg_url, bank):
    s = Server({"HINDSIGHT_API_DATABASE_URL": pg_url, "HINDSIGHT_MCP_BANK_ID": bank}).start()
    try:
        async with mcp_session(f"{s.url}/mcp") as c:
            await c.call_tool("retain", {"content": "Default bank memory."})
        with httpx.Client(base_url=s.url) as api:
            assert api.get(f"/v1/banks/{bank}/memories").json()["total"] == 1
    finally:
        s.stop()


def test_raw_http_shapes(server, bank):
    """curl-style calls: no initialize, no Accept header, /mcp without slash, GET, bad JSON-RPC."""
    with httpx.Client(base_url=server.url, follow_redirects=False) as h:
        body = {"jsonrpc": "2.0", "method": "tools/list", "id": 1}
        for path in ("/mcp", "/mcp/", f"/mcp/{bank}", f"/mcp/{bank}/"):
            r = h.post(path, json=body, headers={"X-Bank-Id": bank})
            assert r.status_code == 200, (path, r.text)
            assert r.json()["result"]["tools"]
        r = h.post("/mcp", json=body, headers={"Accept": "application/json, text/event-stream"})
        assert r.status_code == 200
        assert h.get(f"/mcp/{bank}/").status_code == 405
        r = h.post(f"/mcp/{bank}/", content=b"{nope", headers={"content-type": "application/json"})
        assert r.json()["error"]["code"] == -32700
        r = h.post(
            f"/mcp/{bank}/", json={"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "recall"}}
        )
        assert tool_error(r.json()["result"])["field"] == "query"  # a tool error the model can act on
        r = h.post(f"/mcp/{bank}/", json={"jsonrpc": "2.0", "id": 4, "method": "no/such"})
        assert r.json()["error"]["code"] == -32601
        assert h.post("/mcp/bad id/", json=body).status_code == 404
        assert h.post(f"/mcp/{bank}/extra", json=body).status_code == 404
        r = h.post("/mcp", json=body, headers={"X-Bank-Id": "bad id"})
        assert r.status_code == 400 and "X-Bank-Id" in r.json()["message"]


def test_mcp_disabled(pg_url):
    s = Server({"HINDSIGHT_API_DATABASE_URL": pg_url, "HINDSIGHT_API_MCP_ENABLED": "false"}).start()
    try:
        with httpx.Client(base_url=s.url) as h:
            for path in ("/mcp", "/mcp/", "/mcp/alice/"):
                assert h.post(path, json={"jsonrpc": "2.0", "method": "tools/list", "id": 1}).status_code == 404
            assert h.get("/health").json()["mcp"] is False
    finally:
        s.stop()


async def test_a_tool_call_stays_on_the_event_loop(rest, bank, monkeypatch):
    """The request state a tool is handed (surfaces._from_scope) is resolved on the event loop: the
    SDK runs a synchronous resolver on a worker thread, a hop there and back on every call, each
    waiting for a thread and then for the loop. Only the model runs on threads of its own."""
    import anyio.to_thread

    hops: list = []
    run_sync = anyio.to_thread.run_sync

    async def counted(fn, *args, **kw):
        hops.append(fn)
        return await run_sync(fn, *args, **kw)

    monkeypatch.setattr(anyio.to_thread, "run_sync", counted)
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
    for i, (name, args) in enumerate(
        (("retain", {"content": "Ivo keeps bees on the roof"}), ("recall", {"query": "Who keeps bees?"}))
    ):
        call = {"jsonrpc": "2.0", "id": i, "method": "tools/call", "params": {"name": name, "arguments": args}}
        r = await rest.post(f"/mcp/{bank}/", headers=headers, json=call)
        assert r.status_code == 200 and not r.json()["result"]["isError"], r.text
    assert "Ivo keeps bees on the roof" in r.json()["result"]["content"][0]["text"]
    assert hops == []


async def test_recall_of_metadata_nested_as_deep_as_a_read_allows(server, bank, pg_url):
    """Metadata nested 198 levels (an older server's import could store that; written here
    directly) reads back, and an MCP recall of it answers: the lean text is parsed with json.loads,
    which has no nesting limit of its own (pydantic_core.from_json stops at 200, and a recall
    result adds its own levels around the metadata). Sent as curl would: the SDK client's own
    parser stops short of this depth."""
    with httpx.Client(base_url=server.url) as c:
        assert c.post(f"/v1/banks/{bank}/memories", json={"content": "Rosa keeps a deep notebook"}).status_code == 200
    deep: dict = {"leaf": "end"}
    for _ in range(197):
        deep = {"d": deep}
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute("UPDATE memories SET metadata = $2::jsonb WHERE bank_id = $1", bank, json.dumps(deep))
    finally:
        await conn.close()
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "recall", "arguments": {"query": "Rosa"}},
    }
    headers = {"accept": "application/json, text/event-stream", "mcp-protocol-version": "2025-06-18"}
    with httpx.Client(base_url=server.url) as c:
        rest = c.post(f"/v1/banks/{bank}/recall", json={"query": "Rosa"})
        r = c.post(f"/mcp/{bank}/", headers=headers, json=call)
    assert rest.status_code == 200 and rest.json()["results"][0]["metadata"] == deep
    result = json.loads(r.text)["result"]
    assert not result.get("isError"), r.text[:500]
    assert result["structuredContent"]["results"][0]["metadata"] == deep
