"""Request bodies have a limit (HINDSIGHT_API_MAX_REQUEST_BYTES), refused before they are read
whole, and with API keys on an anonymous body is refused before it is read at all: the red team
made the server hold 600 MB for a 200 MB body that ended as a 401."""

from __future__ import annotations

import json

import httpx
import pytest

from conftest import ADMIN_KEY, AUTH_EXT, Server, fresh_database

LIMIT = 2**20  # the smallest limit the setting allows


@pytest.fixture(scope="module")
def small(pg_url):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "limits"),
            "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
            "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
            "HINDSIGHT_API_MAX_REQUEST_BYTES": str(LIMIT),
        }
    ).start()
    yield s
    s.stop()


def _big(n: int) -> bytes:
    return b'{"content": "' + b"x" * n + b'"}'


def test_an_anonymous_body_is_refused_unread(small, bank):
    with httpx.Client(base_url=small.url, timeout=60) as c:
        r = c.post(f"/v1/banks/{bank}/memories", content=_big(10 * LIMIT), headers={"Content-Type": "application/json"})
        assert r.status_code == 401 and r.json()["error"] == "unauthorized", r.text
        r = c.post(f"/mcp/{bank}/", content=_big(10 * LIMIT), headers={"Content-Type": "application/json"})
        assert r.status_code == 401


def test_a_body_past_the_limit_is_413_with_or_without_its_length(small, bank):
    auth = {"Authorization": f"Bearer {ADMIN_KEY}", "Content-Type": "application/json"}
    with httpx.Client(base_url=small.url, timeout=60) as c:
        r = c.post(f"/v1/banks/{bank}/memories", content=_big(2 * LIMIT), headers=auth)
        assert r.status_code == 413 and r.json()["error"] == "too_large" and "MAX_REQUEST_BYTES" in r.json()["message"]

        def chunks():  # no Content-Length: counted as it arrives
            yield b'{"content": "'
            for _ in range(3):
                yield b"x" * LIMIT
            yield b'"}'

        r = c.post(f"/v1/banks/{bank}/memories", content=chunks(), headers=auth)
        assert r.status_code == 413, r.text
        r = c.post(f"/mcp/{bank}/", content=chunks(), headers={**auth, "Accept": "application/json, text/event-stream"})
        assert r.status_code == 413, r.text
        # under the limit, as before
        r = c.post(f"/v1/banks/{bank}/memories", json={"content": "A small memory."}, headers=auth)
        assert r.status_code == 200, r.text
    assert "Traceback" not in small.log_path.read_text()


def test_a_body_whose_json_would_weigh_many_times_its_size_is_413_before_it_is_parsed(server, bank):
    """6 MB of `[],` would be ~130 MB of Python lists (99 MB of it took 2.8 GB and 10.5 s of the
    event loop), and a long text with one emoji is four bytes a character twice over; 20 MB of
    text full of brackets inside a string is only a string. Only a bank import's POST (a file
    streamed to disk) is not weighed: a bank or memory named `import` is."""
    dense = b'{"query": "x", "tags": [' + b"[]," * 2_000_000 + b"[]]}"
    # under the MCP SDK's own 4 MiB limit
    dense_rpc = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/list", "params": {"x": [' + b"[]," * 1_300_000 + b"[]]}}"
    emoji = json.dumps({"query": "\U0001f600" + "a" * 40_000_000}, ensure_ascii=False).encode()
    code = json.dumps({"query": 'if (a) { b: [1, 2], c: {"d": e} }\n' * 600_000}).encode()
    headers = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}
    with httpx.Client(base_url=server.url, timeout=120) as c:
        for method, path, body in (
            ("POST", f"/v1/banks/{bank}/recall", dense),
            ("POST", f"/mcp/{bank}/", dense_rpc),
            ("PATCH", "/v1/banks/import", dense),
            ("PATCH", f"/v1/banks/{bank}/memories/import", dense),
            ("POST", f"/v1/banks/{bank}/recall", emoji),
        ):
            r = c.request(method, path, content=body, headers=headers)
            assert r.status_code == 413 and r.json()["error"] == "too_large", (path, r.text[:300])
            assert "memory to parse" in r.json()["message"]
        r = c.post(f"/v1/banks/{bank}/recall", content=code, headers=headers)
        assert r.status_code == 422 and "query" in r.json()["message"], r.text[:300]
        assert c.post(f"/v1/banks/{bank}/recall", json={"query": "still answering"}).status_code == 200
