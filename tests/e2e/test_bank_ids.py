"""Bank ids as Hindsight's clients make them: ':' (hindsight-google-adk's "{app}::{user}"), '.'
and '@' (e-mail addresses), up to 128 characters; never '/', whitespace, control characters or
dots alone, by any route."""

from __future__ import annotations

import uuid
from urllib.parse import quote

import asyncpg
import pytest

from conftest import mcp_session


def _id(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


@pytest.mark.parametrize("shape", ["{u}::user-42", "agent.{u}", "{u}@example.com", "app::{u}.v2@team"])
async def test_client_shaped_bank_ids_work_on_every_face(server, api, shape):
    bank = shape.format(u=_id("adk"))
    r = api.post(f"/v1/banks/{quote(bank, safe='')}/memories", json={"content": "Nadia prefers window seats."})
    assert r.status_code == 200, r.text
    assert api.get(f"/v1/banks/{quote(bank, safe='')}").json()["bank_id"] == bank
    for url in (f"{server.url}/mcp/{quote(bank, safe='')}/", f"{server.url}/mcp/{bank}/"):
        async with mcp_session(url) as c:
            r = await c.call_tool("recall", {"query": "seat preference"})
            assert r.structured_content["results"][0]["text"] == "Nadia prefers window seats."
    async with mcp_session(f"{server.url}/mcp", {"X-Bank-Id": bank}) as c:
        assert (await c.call_tool("recall", {"query": "seat"})).structured_content["bank_id"] == bank
    async with mcp_session(f"{server.url}/mcp") as c:
        r = await c.call_tool("recall", {"query": "seat", "bank_id": bank})
        assert r.structured_content["results"]


@pytest.mark.parametrize("bad", ["a b", "..", ".", "tab\there", "new\nline", "x" * 129, "a%2Fb"])
def test_bad_bank_ids_are_refused_by_every_route(server, api, bad):
    path = quote(bad, safe="%")
    r = api.post(f"/v1/banks/{path}/memories", json={"content": "x"})
    # "." and ".." are resolved away by the HTTP client itself: another route answers (405)
    assert r.status_code in (404, 405, 422) and r.json()["error"], (bad, r.status_code, r.text)
    with server.http() as h:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": "recall", "arguments": {"query": "x"}},
        }
        if bad.strip("."):  # a path of dots alone never leaves the client: it resolves them first
            assert h.post(f"/mcp/{path}/", json=body).status_code in (400, 404)
        if "\n" not in bad and "\t" not in bad:
            assert h.post("/mcp", json=body, headers={"X-Bank-Id": bad}).status_code == 400


async def test_the_database_holds_the_same_rule(pg_url, server):
    """Migration 007: even SQL that skips the server cannot store a bank id the API refuses."""
    conn = await asyncpg.connect(pg_url)
    try:
        await conn.execute("INSERT INTO banks (id) VALUES ($1)", "db::ok.id@x-" + uuid.uuid4().hex[:6])
        for bad in ("a b", "..", "a/b", "line\n", "x" * 129):
            with pytest.raises(asyncpg.CheckViolationError):
                await conn.execute("INSERT INTO banks (id) VALUES ($1)", bad)
    finally:
        await conn.close()
