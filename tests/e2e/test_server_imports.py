"""A running server holds only the modules it uses: after start-up, a retain, a recall and an MCP
session, it has imported no HTTP client of its own (httpx loads with the first URL fetched or
webhook sent, hindsight/files/fetch.py; the CLI's client with the first client command), nor the
watchfiles reloader (hindsight/server/__init__.py). Python's own import log
(PYTHONPROFILEIMPORTTIME) names every module the process imported."""

from __future__ import annotations

import asyncio
import re

from conftest import Server, fresh_database, mcp_session


def _imported(log: str) -> set[str]:
    return {m.group(1) for m in re.finditer(r"^import time:\s+\d+ \|\s+\d+ \|\s+(\S+)$", log, re.M)}


async def _tools(url: str) -> set[str]:
    async with mcp_session(url) as client:
        return {t.name for t in (await client.list_tools()).tools}


def test_a_serving_process_never_imports_what_it_does_not_use(pg_url, bank):
    db = fresh_database(pg_url, "server_imports")
    s = Server({"HINDSIGHT_API_DATABASE_URL": db, "PYTHONPROFILEIMPORTTIME": "1"}).start()
    try:
        with s.http() as c:
            assert c.post(f"/v1/banks/{bank}/memories", json={"content": "The ferry leaves at nine."}).is_success
            found = c.post(f"/v1/banks/{bank}/recall", json={"query": "when does the ferry leave"})
            assert found.is_success and found.json()["results"]
        assert "recall" in asyncio.run(_tools(f"{s.url}/mcp/{bank}/"))
    finally:
        s.stop()
    modules = _imported(s.log_path.read_text())
    assert {"hindsight.server.serve", "mcp", "asyncpg", "onnxruntime"} <= modules  # the log is read right
    # The log names attempts too: rich's, which hindsight/server/__init__.py turns away, show up
    # (tests/unit/test_cli_imports.py checks that none succeeds); httpx is never even asked for.
    assert not {m for m in modules if m.split(".")[0] in ("httpx", "watchfiles")}
