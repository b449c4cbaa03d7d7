"""The edge of the server: text and dates nothing can store are refused with the argument named,
a string is never taken for a list, and web pages of other origins (or DNS-rebound names) are
turned away, on REST (ours and /v1/default) and MCP, with nothing stored."""

from __future__ import annotations

import json

import pytest

from conftest import mcp_local
from support import tool_error

NUL, LONE = "a\x00b", "a\ud800b"


def _json(body) -> bytes:
    """JSON as a client may send it: lone surrogates as \\u escapes (httpx would refuse to encode them)."""
    return json.dumps(body).encode()


async def _count(rest, bank) -> int:
    r = await rest.get(f"/v1/banks/{bank}/memories", params={"limit": 1})
    return r.json()["total"] if r.status_code == 200 else 0


@pytest.mark.parametrize("bad", [NUL, LONE], ids=["nul", "surrogate"])
@pytest.mark.parametrize(
    "method, path, body, field",
    [
        ("POST", "/memories", lambda b: {"content": b}, "content"),
        ("POST", "/memories", lambda b: {"content": "ok", "context": b}, "context"),
        ("POST", "/memories", lambda b: {"content": "ok", "tags": ["fine", b]}, "tags"),
        ("POST", "/memories", lambda b: {"content": "ok", "metadata": {"k": {"deep": b}}}, "metadata"),
        ("POST", "/memories", lambda b: {"content": "ok", "metadata": {b: 1}}, "metadata"),
        ("POST", "/memories", lambda b: {"content": "ok", "document_id": b}, "document_id"),
        ("POST", "/memories", lambda b: {"content": "ok", "entities": [{"text": b}]}, "entities.0.text"),
        ("POST", "/memories", lambda b: {"items": [{"content": "ok"}, {"content": b}]}, "items.1.content"),
        ("POST", "/recall", lambda b: {"query": b}, "query"),
        ("POST", "/reflect", lambda b: {"query": b}, "query"),
        ("POST", "/documents", lambda b: {"files": [{"name": b, "text": "hello"}]}, "files.0.name"),
        ("POST", "/documents", lambda b: {"files": [{"name": "a.txt", "text": b}]}, "files.0.text"),
        ("POST", "/documents/query", lambda b: {"query": "x", "filter": f'text = "{b}"'}, "filter"),
        ("POST", "/mental-models", lambda b: {"name": b, "source_query": "q"}, "name"),
        ("PATCH", "", lambda b: {"mission": b}, "mission"),
        ("POST", "/v1/keys", lambda b: {"name": b}, "name"),
        ("POST", "/v1/default/banks/{bank}/memories", lambda b: {"items": [{"content": b}]}, "items.0.content"),
        ("POST", "/v1/default/banks/{bank}/memories/recall", lambda b: {"query": b}, "query"),
    ],
)
async def test_unstorable_text_is_refused_naming_the_field(rest, bank, bad, method, path, body, field):
    await rest.post(f"/v1/banks/{bank}/memories", json={"content": "Already stored."})
    url = (path if path.startswith("/v1/") else f"/v1/banks/{bank}{path}").replace("{bank}", bank)
    r = await rest.request(method, url, content=_json(body(bad)), headers={"Content-Type": "application/json"})
    assert r.status_code == 422, r.text
    assert r.json()["message"].startswith(field), r.json()
    assert ("NUL" if bad == NUL else "surrogate") in r.json()["message"]
    assert await _count(rest, bank) == 1


@pytest.mark.parametrize(
    "path, field",
    [
        ("/v1/banks/{bank}/entities?q=a%00b", "q"),
        ("/v1/banks/{bank}/memories?q=a%00b", "q"),
        ("/v1/default/banks?q=x%00", "q"),
        ("/v1/default/banks/{bank}/documents/doc%00id", "path"),
        ("/v1/banks/{bank}/memories/%00", "path"),
        ("/v1/banks/{bank}/memories?a%00=1", "query"),
    ],
)
async def test_nul_in_the_url_is_refused_naming_the_parameter(rest, bank, path, field):
    r = await rest.get(path.replace("{bank}", bank))
    assert r.status_code == 422, r.text
    assert r.json()["field"] == field and "NUL" in r.json()["message"]


@pytest.mark.parametrize(
    "body, field",
    [
        ({"content": "x", "timestamp": "0001-01-01T00:00:00+14:00"}, "timestamp"),
        ({"content": "x", "timestamp": "9999-12-31T23:59:59-14:00"}, "timestamp"),
        ({"content": "x", "timestamp": "0001-01-01T00:00:00Z"}, "timestamp"),
        ({"items": [{"content": "x", "timestamp": "0001-01-01T00:00:00+14:00"}]}, "items.0.timestamp"),
    ],
)
async def test_dates_nothing_can_hold_are_refused(rest, bank, body, field):
    r = await rest.post(f"/v1/banks/{bank}/memories", json=body)
    assert r.status_code == 422 and r.json()["message"].startswith(field), r.text
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": "x", "query_timestamp": "0001-01-01T00:00:00+14:00"})
    assert r.status_code == 422 and r.json()["field"] == "query_timestamp", r.text
    r = await rest.post(
        f"/v1/default/banks/{bank}/memories",
        json={"items": [{"content": "x", "timestamp": "0001-01-01T00:00:00+14:00"}]},
    )
    assert r.status_code == 422, r.text
    assert await _count(rest, bank) == 0


async def test_far_but_valid_dates_still_work(rest, bank):
    """The limits leave room for history and the far future, and a relative phrase computed from
    an early query time does not overflow."""
    r = await rest.post(
        f"/v1/banks/{bank}/memories", json={"content": "The treaty was signed.", "timestamp": "0002-03-04T00:00:00Z"}
    )
    assert r.status_code == 200, r.text
    r = await rest.post(
        f"/v1/banks/{bank}/recall",
        json={
            "query": "what happened last year, 10 years ago or yesterday?",
            "query_timestamp": "0001-01-03T00:00:00Z",
        },
    )
    assert r.status_code == 200, r.text
    r = await rest.post(
        f"/v1/banks/{bank}/recall",
        json={"query": "what happens next year and in 20 years?", "query_timestamp": "9999-12-29T00:00:00Z"},
    )
    assert r.status_code == 200, r.text


@pytest.mark.parametrize(
    "path, body",
    [
        ("/memories", {"content": "x", "tags": "notalist"}),
        ("/memories", {"content": "x", "tags": '["looks", "like", "json"]'}),
        ("/memories", {"items": '[{"content": "x"}]'}),
        ("/memories", {"content": "x", "metadata": '{"a": 1}'}),
        ("/memories", {"content": "x", "entities": "Alice"}),
        ("/recall", {"query": "x", "types": "world"}),
        ("/recall", {"query": "x", "tags": "a"}),
        ("/v1/default/banks/{bank}/memories", {"items": [{"content": "x", "tags": "a"}]}),
        ("/v1/default/banks/{bank}/memories/recall", {"query": "x", "tags": "a"}),
    ],
)
async def test_a_string_is_never_taken_for_a_list(rest, bank, path, body):
    url = (path if path.startswith("/v1/") else f"/v1/banks/{bank}{path}").replace("{bank}", bank)
    r = await rest.post(url, json=body)
    assert r.status_code == 422, r.text
    assert await _count(rest, bank) == 0


async def test_mcp_refuses_unstorable_text_and_broken_json_lists(app, rest, bank):
    async with mcp_local(app, bank) as c:
        for args, field in [
            ({"content": NUL}, "content"),
            ({"content": LONE}, "content"),
            ({"content": "ok", "tags": ["a", NUL]}, "tags"),
            ({"content": "ok", "tags": '["a", "b"'}, "tags"),  # broken JSON: a string, not a list
            ({"content": "ok", "tags": "notalist"}, "tags"),
            ({"content": "ok", "timestamp": "0001-01-01T00:00:00+14:00"}, "timestamp"),
        ]:
            e = tool_error(await c.call_tool("retain", args))
            assert e["error"] == "invalid_argument" and e["message"].startswith(field), (args, e["message"])
        e = tool_error(await c.call_tool("recall", {"query": NUL}))
        assert e["error"] == "invalid_argument" and e["message"].startswith("query")
        # well-formed JSON text of a list is what agents send: decoded, as before
        r = await c.call_tool("retain", {"content": "Tagged", "tags": '["b", "a"]'})
        assert not r.is_error
    assert await _count(rest, bank) == 1


@pytest.mark.parametrize(
    "headers, status",
    [
        ({}, 200),
        ({"Origin": "http://127.0.0.1"}, 200),  # the console, same origin
        ({"Origin": "http://evil.example"}, 403),
        ({"Origin": "http://localhost:3000"}, 403),  # another local site
        ({"Origin": "null"}, 403),  # sandboxed frames and files
        ({"Host": "evil.example"}, 403),  # a DNS-rebound name
        ({"Host": "evil.example", "Origin": "http://evil.example"}, 403),
        ({"Host": "localhost:8888", "Origin": "http://localhost:8888"}, 200),
        ({"Host": "[::1]:8888"}, 200),
    ],
)
async def test_origin_and_host_on_rest_and_mcp(rest, bank, headers, status):
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": "x"}, headers=headers)
    assert r.status_code == status, r.text
    r = await rest.post(
        f"/mcp/{bank}/",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Accept": "application/json, text/event-stream", **headers},
    )
    assert r.status_code == status, r.text
    if status == 403:
        assert r.json()["error"] == "forbidden" and "HINDSIGHT_API_ALLOWED_" in r.json()["message"]
    r = await rest.post(f"/v1/banks/{bank}/memories", json={"content": "from a page"}, headers=headers)
    assert r.status_code == status
    assert await _count(rest, bank) == (1 if status == 200 else 0)


@pytest.mark.parametrize(
    "body, field",
    [
        ({"content": "x", "metadata": {"a": float("nan")}}, "metadata"),
        ({"content": "x", "metadata": {"a": float("inf")}}, "metadata"),
        ({"content": "x", "metadata": {"a": json.loads("[" * 40 + "]" * 40)}}, "metadata"),
        ({"items": [{"content": "x", "metadata": {"a": float("nan")}}]}, "items.0.metadata"),
    ],
)
async def test_free_json_holds_only_what_answers_can_carry(rest, bank, body, field):
    """NaN and Infinity are not JSON (PostgreSQL refused them: a 500), and metadata nested past
    the serialiser's depth made every listing and recall of its bank a 500."""
    r = await rest.post(
        f"/v1/banks/{bank}/memories", content=json.dumps(body).encode(), headers={"Content-Type": "application/json"}
    )
    assert r.status_code == 422 and r.json()["message"].startswith(field), r.text
    r = await rest.patch(
        f"/v1/banks/{bank}", content=b'{"disposition": {"a": NaN}}', headers={"Content-Type": "application/json"}
    )
    assert r.status_code in (404, 422), r.text
    assert await _count(rest, bank) == 0


@pytest.mark.parametrize(
    "path, flt",
    [
        ("/recall", 'created_at > "0001-01-01T00:00:00+14:00"'),
        ("/recall", 'created_at < "9999-12-31T23:59:59-14:00"'),
        ("/recall", "metadata.a > " + "9" * 400),
        ("/documents/query", "chunk_index = 99999999999"),
        ("/documents/query", "page in [1, 99999999999]"),
    ],
)
async def test_filter_values_out_of_range_are_refused(rest, bank, path, flt):
    await rest.post(f"/v1/banks/{bank}/memories", json={"content": "A memory to filter.", "metadata": {"a": 1}})
    r = await rest.post(f"/v1/banks/{bank}{path}", json={"query": "memory", "filter": flt})
    assert r.status_code == 422 and r.json()["field"] == "filter", r.text


@pytest.mark.parametrize(
    "headers",
    [
        {"Host": "evil.example@localhost"},
        {"Host": "localhost/evil.example"},
        {"Host": "localhost#.evil.example"},
        {"Host": "[::1]evil.example"},
        {"Origin": "http://evil.example@127.0.0.1"},
        {"Origin": "http://127.0.0.1/path"},
    ],
)
async def test_hosts_and_origins_are_read_exactly(rest, bank, headers):
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": "x"}, headers=headers)
    assert r.status_code == 403, r.text


async def _asgi_status(app, headers: list[tuple[bytes, bytes]]) -> int:
    """One request straight into the ASGI app: an HTTP client cannot send a header twice."""
    sent: list[dict] = []

    async def send(message):
        sent.append(message)

    async def receive():
        return {"type": "http.request", "body": b"", "more_body": False}

    scope = {
        "type": "http",
        "method": "GET",
        "path": "/v1/banks",
        "query_string": b"",
        "scheme": "http",
        "headers": headers,
    }
    await app(scope, receive, send)
    return sent[0]["status"]


async def test_two_host_or_origin_headers_are_refused(app):
    host = (b"host", b"127.0.0.1")
    assert await _asgi_status(app, [host]) == 200
    assert await _asgi_status(app, [(b"host", b"evil.example"), host]) == 400
    assert await _asgi_status(app, [host, (b"origin", b"http://evil.example"), (b"origin", b"http://127.0.0.1")]) == 400


async def test_mcp_refuses_a_bank_argument_the_tool_does_not_take(app, bank):
    async with mcp_local(app, bank) as c:
        for word in ("bank_id", "collection_id"):
            e = tool_error(await c.call_tool("retain", {"content": "Where would this go?", word: "someone_else"}))
            assert e["error"] == "invalid_argument" and e["message"].startswith(word), e["message"]
    async with mcp_local(app, multi=True) as c:
        e = tool_error(await c.call_tool("retain", {"content": "Where would this go?", "collection_id": bank}))
        assert e["error"] == "invalid_argument" and e["message"].startswith("collection_id")
        # a stray argument that chooses no bank is still ignored, as agents add them
        r = await c.call_tool("recall", {"query": "x", "bank_id": bank, "mood": "curious"})
        assert not r.is_error
