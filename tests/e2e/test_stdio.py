"""`hindsight mcp --bank NAME` over stdio, with the official client's stdio transport."""

from __future__ import annotations

import os
import sys

import pytest
from mcp import Client
from mcp.client.stdio import StdioServerParameters

from conftest import fresh_database
from support import tool_error


def params(db_url: str, *args: str) -> StdioServerParameters:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HINDSIGHT_")}
    env["HINDSIGHT_API_DATABASE_URL"] = db_url
    return StdioServerParameters(command=sys.executable, args=["-m", "hindsight.cli.main", "mcp", *args], env=env)


@pytest.fixture(scope="module")
def stdio_db(pg_url):
    return fresh_database(pg_url, "stdio_tests")


async def test_stdio_single_bank_tools(stdio_db, bank):
    async with Client(params(stdio_db, "--bank", bank, "--session-tag", "team:a")) as c:
        tools = {t.name for t in (await c.list_tools()).tools}
        assert {"retain", "recall", "rag_search", "import_documents", "list_mental_models"} <= tools
        assert not {"list_banks", "create_bank", "list_collections"} & tools
        r = await c.call_tool("retain", {"content": "The stdio agent prefers tabs over spaces."})
        assert len(r.structured_content["memory_ids"]) == 1
        found = await c.call_tool("recall", {"query": "tabs or spaces?"})
        assert found.structured_content["results"][0]["text"] == "The stdio agent prefers tabs over spaces."
        acc = await c.call_tool(
            "import_documents",
            {
                "files": [
                    {"name": "a.txt", "text": "Team A runbook: restart the queue worker nightly."},
                    {"name": "b.txt", "text": "Team B runbook: restart the queue worker weekly."},
                ],
                "wait": True,
            },
        )
        assert acc.structured_content["status"] == "succeeded"
    async with Client(params(stdio_db, "--bank", bank, "--session-tag", "team:a")) as c:
        res = await c.call_tool("rag_search", {"search_phrases": ["restart queue worker"]})
        assert res.structured_content["status"] == "success" and len(res.structured_content["segments"]) == 2
        e = tool_error(await c.call_tool("recall", {"query": ""}))
        assert e["error"] == "invalid_argument" and "query" in e["message"]


async def test_stdio_document_access_follows_the_command_line(stdio_db, bank):
    async with Client(params(stdio_db, "--bank", bank)) as c:
        await c.call_tool(
            "import_documents",
            {"files": [{"name": "secret.txt", "text": "Payroll runs on the 25th."}], "tags": ["hr"], "wait": True},
        )
        anon = await c.call_tool("rag_search", {"search_phrases": ["payroll"]})
        assert anon.structured_content["segments"] == []
    async with Client(params(stdio_db, "--bank", bank, "--session-tag", "hr")) as c:
        hr = await c.call_tool("rag_search", {"search_phrases": ["payroll"]})
        assert [s["source_file_name"] for s in hr.structured_content["segments"]] == ["secret.txt"]


def test_stdio_rejects_a_bad_bank_id(stdio_db):
    import subprocess

    r = subprocess.run(
        [sys.executable, "-m", "hindsight.cli.main", "mcp", "--bank", "no spaces"],
        env={**os.environ, "HINDSIGHT_API_DATABASE_URL": stdio_db},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert r.returncode == 2 and "--bank" in r.stderr and r.stdout == ""
