"""MCP tools in process, through the SDK's in-memory client: argument validation (-32602
naming the argument, nothing stored), unknown tools, and the leniency agents need."""

from __future__ import annotations

import pytest
from mcp.shared.exceptions import MCPError

from conftest import mcp_local


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
        with pytest.raises(MCPError) as e:
            await c.call_tool("recall", args)
        assert e.value.code == -32602 and needle in e.value.message


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
        with pytest.raises(MCPError) as e:
            await c.call_tool("retain", args)
        assert e.value.code == -32602 and needle in e.value.message
        with pytest.raises(MCPError) as e:
            await c.call_tool("retain_batch", {"items": [{"content": "fine"}, {"content": 3}]})
        assert e.value.code == -32602 and "items.1.content" in e.value.message
    assert (await rest.get(f"/v1/banks/{bank}/memories")).json()["total"] == 1


async def test_unknown_bank_tool_and_lenient_arguments(app, bank):
    async with mcp_local(app, multi=True) as c:
        # a bank never written reads as empty (tests/e2e/test_new_bank.py)
        r = await c.call_tool("recall", {"query": "x", "bank_id": bank + "_missing"})
        assert not r.is_error and r.structured_content["results"] == []
        with pytest.raises(MCPError) as e:
            await c.call_tool("recall", {"query": "x", "bank_id": "no spaces allowed"})
        assert e.value.code == -32602 and "bank_id" in e.value.message
        with pytest.raises(MCPError) as e:
            await c.call_tool("no_such_tool", {})
        assert e.value.code == -32602
        # agents send lists as JSON strings and add stray arguments
        r = await c.call_tool(
            "retain", {"content": "Tagged memory", "tags": '["a", "b"]', "bank_id": bank, "mood": "happy"}
        )
        assert not r.is_error
        r = await c.call_tool("recall", {"query": "Tagged", "tags": '["b"]', "bank_id": bank})
        assert r.structured_content["results"][0]["tags"] == ["a", "b"]
