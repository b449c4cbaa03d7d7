"""The MCP tools Hindsight's agents call by its names (sync_retain, list_memories, get_memory,
clear_memories, get_bank, get_bank_stats, update_bank, delete_bank, clear_mental_model), with the
arguments they send, on both surfaces; what they change is refused to read-only keys and to keys
of other banks."""

from __future__ import annotations

from hindsight.engine.access.keys import Principal

from conftest import mcp_local
from support import tool_error


async def test_sync_retain_list_and_get_memories(app, bank):
    async with mcp_local(app, bank) as c:
        # Hindsight's agents send `strategy`, and tags and metadata as JSON text
        done = await c.call_tool(
            "sync_retain",
            {"content": "Ivo keeps bees.", "context": "hobbies", "tags": '["home"]', "strategy": "exact"},
        )
        assert not done.is_error, done
        (memory_id,) = done.structured_content["memory_ids"]
        await c.call_tool("sync_retain", {"content": "I met Ivo at the market.", "metadata": {"source": "chat"}})
        listed = (await c.call_tool("list_memories", {"limit": 10})).structured_content
        assert listed["total"] == 2 and [m["text"] for m in listed["memories"]][1] == "Ivo keeps bees."
        only = (await c.call_tool("list_memories", {"q": "bees", "tags": ["home"]})).structured_content
        assert [m["id"] for m in only["memories"]] == [memory_id]
        typed = (await c.call_tool("list_memories", {"type": "experience"})).structured_content
        assert [m["text"] for m in typed["memories"]] == ["I met Ivo at the market."]
        none = (await c.call_tool("list_memories", {"type": "observation"})).structured_content
        assert none["memories"] == [] and none["total"] == 0  # observations: none kept here
        got = (await c.call_tool("get_memory", {"memory_id": memory_id})).structured_content
        assert got["text"] == "Ivo keeps bees." and got["context"] == "hobbies" and got["tags"] == ["home"]
        missing = tool_error(await c.call_tool("get_memory", {"memory_id": "00000000-0000-4000-8000-000000000000"}))
        assert missing["error"] == "not_found" and missing["field"] == "memory_id"
        assert tool_error(await c.call_tool("get_memory", {"memory_id": "nope"}))["error"] == "invalid_argument"
        assert tool_error(await c.call_tool("sync_retain", {"context": "x"}))["field"] == "content"


async def test_bank_tools(app, bank):
    async with mcp_local(app, bank) as c:
        assert tool_error(await c.call_tool("get_bank", {}))["error"] == "not_found"  # never written
        await c.call_tool("retain", {"content": "Alice works with Bob in Lisbon."})
        got = (await c.call_tool("get_bank", {})).structured_content
        assert got["bank_id"] == bank and got["memory_count"] == 1
        stats = (await c.call_tool("get_bank_stats", {})).structured_content
        assert stats["memories_by_type"] == {"world": 1} and stats["links_by_kind"]["entity"] >= 2
        changed = await c.call_tool(
            "update_bank",
            {
                "name": "Team",
                "mission": "Remember the team.",
                "config_updates": '{"disposition_empathy": 5, "retain_mission": "people only"}',
            },
        )
        bank_now = changed.structured_content
        assert bank_now["name"] == "Team" and bank_now["mission"] == "Remember the team."
        assert (
            bank_now["disposition"]["empathy"] == 5 and bank_now["client_settings"]["retain_mission"] == "people only"
        )
        bad = tool_error(await c.call_tool("update_bank", {"config_updates": {"disposition_empathy": 9}}))
        assert bad["field"] == "config_updates" and "1 to 5" in bad["message"]
        kept = (await c.call_tool("update_bank", {"config_updates": {"retain_mission": None}})).structured_content
        assert "retain_mission" not in kept["client_settings"] and kept["name"] == "Team"
        # the same on the multi-bank surface, by argument
    async with mcp_local(app, multi=True) as c:
        assert (await c.call_tool("get_bank", {"bank_id": bank})).structured_content["name"] == "Team"
        refused = tool_error(await c.call_tool("delete_bank", {}))  # the server default, by omission
        assert refused["field"] == "bank_id" and "name the bank" in refused["message"]
        gone = (await c.call_tool("delete_bank", {"bank_id": bank})).structured_content
        assert gone == {"deleted": True, "bank_id": bank, "memories_deleted": 1}
        assert tool_error(await c.call_tool("get_bank", {"bank_id": bank}))["error"] == "not_found"


async def test_clear_memories(app, rest, bank):
    async with mcp_local(app, bank) as c:
        await c.call_tool("retain", {"content": "Nora lives in Oslo.", "document_id": "notes"})
        await c.call_tool("retain", {"content": "I visited Nora last week."})
        older = (await c.call_tool("retain", {"content": "Nora lived in Bergen."})).structured_content
        await c.call_tool("retain", {"content": "I saw that Nora moved.", "supersedes": older["memory_ids"]})
        none = (await c.call_tool("clear_memories", {"type": "observation"})).structured_content
        assert none["memories"] == 0
        cleared = (await c.call_tool("clear_memories", {"type": "experience"})).structured_content
        assert cleared["memories"] == 2 and cleared["retained_documents"] == []
        left = (await c.call_tool("list_memories", {})).structured_content["memories"]
        assert sorted(m["text"] for m in left) == ["Nora lived in Bergen.", "Nora lives in Oslo."]
        bergen = next(m for m in left if "Bergen" in m["text"])
        assert bergen.get("valid_to") is None and bergen.get("superseded_by") is None  # what replaced it went
        last = (await rest.get(f"/v1/banks/{bank}/memories/{bergen['id']}/history")).json()["versions"][-1]
        assert last["reason"].endswith("was forgotten"), last
        everything = (await c.call_tool("clear_memories", {})).structured_content
        assert everything["memories"] == 2 and everything["retained_documents"] == ["notes"]
        assert everything["entities_removed"] >= 1
        assert (await c.call_tool("list_memories", {})).structured_content["total"] == 0
        assert (await c.call_tool("get_bank", {})).structured_content["bank_id"] == bank  # the bank stays
        assert tool_error(await c.call_tool("clear_memories", {"type": "opinion"}))["field"] == "type"
    assert (await rest.get(f"/v1/banks/{bank}/entities")).json()["total"] == 0


async def test_clear_mental_model(app, bank):
    async with mcp_local(app, bank) as c:
        await c.call_tool("retain", {"content": "Priya leads the design team."})
        made = (
            await c.call_tool("create_mental_model", {"name": "Team", "source_query": "Who leads?"})
        ).structured_content
        model_id = made["mental_model_id"]
        cleared = (await c.call_tool("clear_mental_model", {"mental_model_id": model_id})).structured_content
        assert cleared["content"] is None and cleared["status"] == "pending"
        missing = tool_error(await c.call_tool("clear_mental_model", {"mental_model_id": "nope"}))
        assert missing["error"] == "not_found"


async def test_what_they_change_is_refused_to_readers_and_other_banks(app, bank):
    mine, theirs = bank, bank + "_theirs"
    async with mcp_local(app, multi=True) as c:
        for b in (mine, theirs):
            await c.call_tool("retain", {"content": f"A memory of {b}.", "bank_id": b})
            await c.call_tool("create_mental_model", {"name": "M", "source_query": "q", "bank_id": b})
    writes = [
        ("sync_retain", {"content": "x"}),
        ("update_bank", {"name": "hijacked"}),
        ("clear_memories", {}),
        ("clear_mental_model", {"mental_model_id": "m"}),
        ("delete_bank", {}),
    ]
    reader = Principal("bank", key_id="reader", banks=frozenset({mine}), read_only=True)
    async with mcp_local(app, mine, who=reader) as c:
        for tool, args in writes:
            assert tool_error(await c.call_tool(tool, args))["error"] == "forbidden", tool
        assert not (await c.call_tool("get_bank_stats", {})).is_error
    writer = Principal("bank", key_id="writer", banks=frozenset({mine}))
    async with mcp_local(app, multi=True, who=writer, header_bank=mine) as c:
        reads = [("get_bank", {}), ("get_bank_stats", {}), ("list_memories", {})]
        for tool, args in writes + reads:
            assert tool_error(await c.call_tool(tool, {**args, "bank_id": theirs}))["error"] == "forbidden", tool
        assert tool_error(await c.call_tool("delete_bank", {}))["error"] == "forbidden"  # admin only
    async with mcp_local(app, multi=True) as c:
        stats = (await c.call_tool("get_bank_stats", {"bank_id": theirs})).structured_content
        assert stats["memories_by_type"] == {"world": 1}
        model = (await c.call_tool("get_mental_model", {"mental_model_id": "m", "bank_id": theirs})).structured_content
        assert model["name"] == "M"
