"""MCP tools in process, through the SDK's in-memory client: argument validation (a tool error
naming the argument, nothing stored), unknown tools (a protocol error), and the leniency agents
need."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from conftest import mcp_local
from support import tool_error


@pytest.mark.parametrize(
    "args,needle",
    [
        ({}, "query"),
        ({"query": 5}, "query"),
        ({"query": "x", "max_tokens": "lots"}, "max_tokens"),
        ({"query": "x", "max_tokens": 0}, "max_tokens"),
        ({"query": "x", "types": ["opinion"]}, "types"),
        ({"query": "   "}, "query"),
    ],
)
async def test_recall_bad_arguments(app, bank, args, needle):
    async with mcp_local(app, bank) as c:
        await c.call_tool("retain", {"content": "something"})
        error = tool_error(await c.call_tool("recall", args))
        assert error["error"] == "invalid_argument" and needle in error["message"]


@pytest.mark.parametrize(
    "args,needle",
    [
        ({}, "content"),
        ({"content": ["a"]}, "content"),
        ({"content": "x", "timestamp": "yesterday-ish"}, "timestamp"),
        ({"content": "x" * 100_001}, "100000"),
        ({"content": "x", "tags": [1]}, "tags"),
    ],
)
async def test_retain_bad_arguments_change_nothing(app, rest, bank, args, needle):
    async with mcp_local(app, bank) as c:
        await c.call_tool("retain", {"content": "kept"})
        error = tool_error(await c.call_tool("retain", args))
        assert error["error"] == "invalid_argument" and needle in error["message"]
        error = tool_error(await c.call_tool("retain_batch", {"items": [{"content": "fine"}, {"content": 3}]}))
        assert error["field"].startswith("items") and "items.1.content" in error["message"]
    assert (await rest.get(f"/v1/banks/{bank}/memories")).json()["total"] == 1


async def test_unknown_bank_tool_and_lenient_arguments(app, bank):
    async with mcp_local(app, multi=True) as c:
        # a bank never written reads as empty (tests/e2e/test_new_bank.py)
        r = await c.call_tool("recall", {"query": "x", "bank_id": bank + "_missing"})
        assert not r.is_error and r.structured_content["results"] == []
        error = tool_error(await c.call_tool("recall", {"query": "x", "bank_id": "no spaces allowed"}))
        assert error["field"] == "bank_id" and "bank_id" in error["message"]
        with pytest.raises(MCPError) as e:  # a tool this server does not have: a protocol fault
            await c.call_tool("no_such_tool", {})
        assert e.value.code == -32602
        # agents send lists as JSON strings and add stray arguments
        r = await c.call_tool(
            "retain", {"content": "Tagged memory", "tags": '["a", "b"]', "bank_id": bank, "mood": "happy"}
        )
        assert not r.is_error
        r = await c.call_tool("recall", {"query": "Tagged", "tags": '["b"]', "bank_id": bank})
        assert r.structured_content["results"][0]["tags"] == ["a", "b"]
