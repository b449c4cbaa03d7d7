"""The collection tools (aliases over banks and documents, multi-bank surface only): the seed's
curl calls, the official client, confirm flags and key scoping."""

from __future__ import annotations

import http.server
import threading

import httpx
import pytest

from conftest import ADMIN_KEY, mcp_session
from support import make_key, tool_error

PAGE = b"<html><body><h1>Device guide</h1><p>To reset your device, hold the power button for ten seconds.</p></body></html>"


@pytest.fixture(scope="module")
def page_url():
    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(PAGE)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}/guide"
    srv.shutdown()


def rpc(server, name, arguments, **headers):
    """The seed's curl: a bare JSON-RPC tools/call, no initialize, no Accept header."""
    body = {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": name, "arguments": arguments}}
    r = httpx.post(f"{server.url}/mcp/", json=body, headers={"Content-Type": "application/json", **headers}, timeout=60)
    assert r.status_code == 200, r.text
    return r.json()


async def test_collection_aliases_exist_only_in_multi_bank_mode(server, bank):
    async with mcp_session(f"{server.url}/mcp/{bank}/") as c:
        single = {t.name: t for t in (await c.list_tools()).tools}
    async with mcp_session(f"{server.url}/mcp/") as c:
        multi = {t.name: t for t in (await c.list_tools()).tools}
    aliases = {
        "list_collections",
        "create_collection",
        "fetch_and_add_document_from_url",
        "delete_collection",
        "search_rag",
    }
    assert not aliases & set(single) and aliases <= set(multi)
    assert {"list_documents", "delete_document", "import_documents", "get_document"} <= set(single)
    assert "collection_id" not in single["list_documents"].input_schema["properties"]
    assert "collection_id" in multi["list_documents"].input_schema["properties"]
    assert set(multi["delete_collection"].input_schema["required"]) == {"collection_id"}
    assert multi["delete_collection"].annotations.destructive_hint is True


def test_collection_life_cycle_over_plain_json_rpc(server, page_url, bank):
    name = f"Team Docs {bank}!"
    created = rpc(server, "create_collection", {"name": name, "description": "Technical manuals"})["result"]
    cid = created["structuredContent"]["collection_id"]
    assert cid == f"team-docs-{bank}" and created["structuredContent"]["created"] is True
    same = rpc(server, "create_collection", {"name": bank, "description": "x"})["result"]["structuredContent"]
    assert same["collection_id"] == bank  # a valid bank id is used as is

    added = rpc(server, "fetch_and_add_document_from_url", {"url": page_url, "collection_id": cid})["result"][
        "structuredContent"
    ]
    # the file's own error first: pytest shortens a long dict in the message
    assert added["status"] == "succeeded" and added["outcome"] == "imported" and added["chunks"] == 1, (
        added.get("error"),
        added,
    )
    docs = rpc(server, "list_documents", {"collection_id": cid})["result"]["structuredContent"]
    assert [d["source_url"] for d in docs["documents"]] == [page_url] and docs["count"] == 1
    cols = {
        c["collection_id"]: c for c in rpc(server, "list_collections", {})["result"]["structuredContent"]["collections"]
    }
    assert (
        cols[cid]["document_count"] == 1
        and cols[cid]["description"] == "Technical manuals"
        and cols[cid]["name"] == name
    )

    hits = rpc(server, "search_rag", {"collectionId": cid, "query": "How do I reset my device?"})["result"][
        "structuredContent"
    ]
    assert (
        hits["results"][0]["content"].startswith("Device guide") or "reset your device" in hits["results"][0]["content"]
    )
    assert hits["metadata"]["collection"] == cid

    refused = tool_error(rpc(server, "delete_document", {"doc_id": added["document_id"]})["result"])
    assert refused["field"] == "confirm" and "confirm" in refused["message"]
    gone = rpc(server, "delete_document", {"doc_id": added["document_id"], "confirm": True})["result"][
        "structuredContent"
    ]
    # found without naming its collection
    assert gone == {"deleted": True, "document_id": added["document_id"], "bank_id": cid}
    assert rpc(server, "list_documents", {"collection_id": cid})["result"]["structuredContent"]["count"] == 0

    assert tool_error(rpc(server, "delete_collection", {"collection_id": cid})["result"])["field"] == "confirm"
    deleted = rpc(server, "delete_collection", {"collection_id": cid, "confirm": True})["result"]["structuredContent"]
    assert deleted["deleted"] is True
    cols = {
        c["collection_id"] for c in rpc(server, "list_collections", {})["result"]["structuredContent"]["collections"]
    }
    assert cid not in cols
    for tool, args, field in [
        ("create_collection", {"name": "!!!"}, "name"),
        ("fetch_and_add_document_from_url", {"url": "ftp://x", "collection_id": bank}, "url"),
        ("search_rag", {"collectionId": "bad id", "query": "x"}, "collectionId"),
    ]:
        err = tool_error(rpc(server, tool, args)["result"])
        assert err["error"] == "invalid_argument" and err["message"].startswith(f"{field}: "), err


async def test_document_tools_with_the_official_client(server, api, bank):
    async with mcp_session(f"{server.url}/mcp/{bank}/") as c:
        acc = (
            await c.call_tool(
                "import_documents", {"files": [{"name": "a.md", "text": "# Alpha\n\nAlpha notes."}], "wait": True}
            )
        ).structured_content
        assert acc["status"] == "succeeded"
        doc_id = acc["result"]["files"][0]["document_id"]
        doc = (await c.call_tool("get_document", {"doc_id": doc_id})).structured_content
        assert doc["source_name"] == "a.md" and doc["chunk_count"] == 1
        e = tool_error(await c.call_tool("delete_document", {"doc_id": doc_id, "confirm": False}))
        assert e["error"] == "invalid_argument"
        e = tool_error(await c.call_tool("get_document", {"doc_id": "nope"}))
        assert e["error"] == "invalid_argument" and "doc_id" in e["message"]
        assert (await c.call_tool("delete_document", {"doc_id": doc_id, "confirm": True})).structured_content["deleted"]
    async with mcp_session(f"{server.url}/mcp/") as c:
        e = tool_error(await c.call_tool("list_documents", {"bank_id": bank, "collection_id": bank + "x"}))
        assert e["error"] == "invalid_argument" and "collection_id" in e["message"]


def test_collection_tools_respect_key_scope(auth_server, bank):
    with auth_server.http(ADMIN_KEY) as admin:
        mine, theirs = bank + "_mine", bank + "_theirs"
        for b in (mine, theirs):
            r = admin.post(
                f"/v1/banks/{b}/documents",
                params={"wait": True},
                json={"files": [{"name": "n.txt", "text": f"notes of {b}"}]},
            )
            assert r.status_code == 202
        theirs_doc = admin.get(f"/v1/banks/{theirs}/documents").json()["documents"][0]["document_id"]
        key = make_key(admin, role="bank", banks=[mine])["key"]
    h = {"Authorization": f"Bearer {key}"}
    cols = {
        c["collection_id"]
        for c in rpc(auth_server, "list_collections", {}, **h)["result"]["structuredContent"]["collections"]
    }
    assert cols == {mine}
    for name, args in [
        ("list_documents", {"collection_id": theirs}),
        ("delete_collection", {"collection_id": mine, "confirm": True}),
        ("delete_document", {"doc_id": theirs_doc, "confirm": True, "collection_id": theirs}),
        ("create_collection", {"name": "new-one"}),
        ("search_rag", {"collectionId": theirs, "query": "notes"}),
    ]:
        err = tool_error(rpc(auth_server, name, args, **h)["result"])
        assert err["error"] == "forbidden", (name, err)
    # without a collection the document is looked up only among the key's banks: not found
    err = tool_error(rpc(auth_server, "delete_document", {"doc_id": theirs_doc, "confirm": True}, **h)["result"])
    assert err["error"] in ("not_found", "forbidden")
    with auth_server.http(ADMIN_KEY) as admin:
        assert admin.get(f"/v1/banks/{theirs}/documents").json()["documents"][0]["document_id"] == theirs_doc
