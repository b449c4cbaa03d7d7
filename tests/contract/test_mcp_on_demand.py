"""Each MCP server (single-bank, multi-bank) is built by the first request that needs it
(hindsight/mcp/on_demand.py): none at start-up, one build however many requests arrive while it
starts, a first request cancelled mid-start leaves it to finish for the next, and the app stops
with it running. The app runs in process on a database of its own."""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest

import hindsight.server.app as app_module

from conftest import fresh_database, running_app

LIST = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


@pytest.fixture(scope="module")
def on_demand_db(pg_url):
    return fresh_database(pg_url, "mcp_on_demand")


@pytest.fixture
def builds(monkeypatch) -> list[bool]:
    """The `multi` flag of every MCP server the app builds."""
    made: list[bool] = []
    build = app_module.build_server

    def counted(engine, multi, *args, **kwargs):
        made.append(multi)
        return build(engine, multi, *args, **kwargs)

    monkeypatch.setattr(app_module, "build_server", counted)
    return made


async def _tools(c: httpx.AsyncClient, path: str, **headers) -> set[str]:
    r = await c.post(path, content=LIST, headers={**HEADERS, **headers})
    assert r.status_code == 200, r.text
    return {t["name"] for t in r.json()["result"]["tools"]}


async def test_each_mcp_server_is_built_by_its_first_request(on_demand_db, bank, builds):
    env = {"HINDSIGHT_API_DATABASE_URL": on_demand_db}
    async with running_app(env) as app:
        assert app.mcp is not None
        assert not app.mcp.single.built and not app.mcp.multi.built and builds == []
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
            # a first request cancelled while the server starts: the start goes on for the others
            first = asyncio.create_task(app.mcp.single.exchange())
            await asyncio.sleep(0)  # it has started the build and waits for it
            first.cancel()
            with pytest.raises(asyncio.CancelledError):
                await first
            answers = await asyncio.gather(*(_tools(c, f"/mcp/{bank}/") for _ in range(8)))
            assert all("recall" in a and "bank_id" not in a for a in answers)
            assert builds == [False] and app.mcp.single.built and not app.mcp.multi.built
            assert await app.mcp.single.exchange() is await app.mcp.single.exchange()

            multi = await asyncio.gather(*(_tools(c, "/mcp/", **{"X-Bank-Id": bank}) for _ in range(4)))
            assert all(a == multi[0] and "recall" in a for a in multi)
            assert "list_banks" in multi[0] and "list_banks" not in answers[0]  # the other server
            assert builds == [False, True] and app.mcp.multi.built
            assert await _tools(c, f"/mcp/{bank}") == answers[0]  # built once, answering on
        assert builds == [False, True]


async def test_with_mcp_disabled_no_server_is_built(on_demand_db, builds):
    env = {"HINDSIGHT_API_DATABASE_URL": on_demand_db, "HINDSIGHT_API_MCP_ENABLED": "false"}
    async with running_app(env) as app:
        assert app.mcp is None
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://127.0.0.1") as c:
            r = await c.post("/mcp/", content=LIST, headers=HEADERS)
            assert r.status_code == 404 and "MCP is disabled" in r.text
    assert builds == []
