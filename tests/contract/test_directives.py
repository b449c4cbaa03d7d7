"""Directives, in process: our REST, Hindsight's /v1/default routes and the MCP tools over one
store; and what they are for, checked in the prompts the stub LLM receives: a reflect carries the
active directives that apply to it, highest priority first, and a mental model's refresh those
tagged like the model."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from hindsight.engine.access.keys import Principal

from conftest import fresh_database, llm_env, mcp_local, running_app
from support import tool_failure_message as tool_error


def _system_prompts(stub, task: str, since: int) -> list[str]:
    """The system messages of the stub's requests of one task after the first `since`."""
    out = []
    for body in stub.requests[since:]:
        system = "\n".join(m["content"] for m in body["messages"] if m["role"] == "system")
        if f"TASK: {task}" in system:
            out.append(system)
    return out


async def test_directives_over_rest_and_the_reference_api(rest, bank):
    r = await rest.post(
        f"/v1/banks/{bank}/directives",
        json={"name": "Language", "content": "Answer in French.", "priority": 5, "tags": ["fr"]},
    )
    assert r.status_code == 201, r.text
    fr = r.json()
    assert fr["is_active"] is True and fr["tags"] == ["fr"] and fr["priority"] == 5
    r = await rest.post(
        f"/v1/default/banks/{bank}/directives", json={"name": "Privacy", "content": "Never reveal phone numbers."}
    )
    assert r.status_code == 200, r.text
    privacy = r.json()
    assert privacy["id"] and privacy["bank_id"] == bank and privacy["tags"] == [] and privacy["created_at"]

    listed = (await rest.get(f"/v1/banks/{bank}/directives")).json()
    assert [d["name"] for d in listed["directives"]] == ["Language", "Privacy"] and listed["total"] == 2
    ref = (await rest.get(f"/v1/default/banks/{bank}/directives", params={"tags": "fr"})).json()
    # `any` keeps the untagged directives beside the tagged ones, as memories are matched
    assert {d["name"] for d in ref["items"]} == {"Language", "Privacy"} and ref["total"] == 2
    strict = await rest.get(f"/v1/default/banks/{bank}/directives", params={"tags": "fr", "tags_match": "any_strict"})
    assert [d["name"] for d in strict.json()["items"]] == ["Language"]

    r = await rest.patch(f"/v1/default/banks/{bank}/directives/{privacy['id']}", json={"is_active": False})
    assert r.status_code == 200 and r.json()["is_active"] is False and r.json()["content"] == privacy["content"]
    active = (await rest.get(f"/v1/default/banks/{bank}/directives")).json()
    assert [d["name"] for d in active["items"]] == ["Language"]
    everything = (await rest.get(f"/v1/banks/{bank}/directives", params={"active_only": False})).json()
    assert everything["total"] == 2
    got = (await rest.get(f"/v1/default/banks/{bank}/directives/{fr['directive_id']}")).json()
    assert got["name"] == "Language" and got["id"] == fr["directive_id"]

    r = await rest.delete(f"/v1/default/banks/{bank}/directives/{privacy['id']}")
    assert r.status_code == 200 and r.json() == {"status": "deleted"}
    assert (await rest.get(f"/v1/banks/{bank}/directives/{privacy['id']}")).status_code == 404


async def test_directive_input_is_checked(rest, bank):
    bad = [
        ({"name": "x"}, "content"),
        ({"name": "x", "content": ""}, "content"),
        ({"name": "x", "content": "a\x00b"}, "content"),
        ({"name": " ", "content": "y"}, "name"),
        ({"name": "x", "content": "y", "tags": "fr"}, "tags"),
        ({"name": "x", "content": "y" * 4001}, "content"),
        ({"name": "x", "content": "y", "priority": 10**12}, "priority"),
        ({"name": "x", "content": "y", "colour": "red"}, "colour"),
    ]
    for body, field in bad:
        r = await rest.post(f"/v1/banks/{bank}/directives", json=body)
        assert r.status_code == 422 and field in r.json()["message"], (body, r.text)
    for path in ("/v1/banks/{b}/directives/not-a-uuid", "/v1/default/banks/{b}/directives/not-a-uuid"):
        r = await rest.get(path.format(b=bank))
        assert r.status_code == 422 and "directive_id" in r.json()["message"], r.text
    missing = "00000000-0000-4000-8000-000000000000"
    for method in ("GET", "PATCH", "DELETE"):
        r = await rest.request(method, f"/v1/banks/{bank}/directives/{missing}", json={} if method == "PATCH" else None)
        assert r.status_code == 404 and r.json()["error"] == "not_found", r.text


async def test_directive_tools_and_another_banks_ids(app, rest, bank):
    mine, theirs = bank + "_a", bank + "_b"
    async with mcp_local(app, bank=mine) as client:
        made = await client.call_tool("create_directive", {"name": "Tone", "content": "Be brief.", "priority": 3})
        tone = made.structured_content
        listed = (await client.call_tool("list_directives", {})).structured_content
        assert [d["directive_id"] for d in listed["directives"]] == [tone["directive_id"]]
        changed = await client.call_tool("update_directive", {"directive_id": tone["directive_id"], "priority": 9})
        assert changed.structured_content["priority"] == 9 and changed.structured_content["content"] == "Be brief."
        got = await client.call_tool("get_directive", {"directive_id": tone["directive_id"]})
        assert got.structured_content["name"] == "Tone"
        assert "content" in await tool_error(client, "create_directive", {"name": "x", "content": ""})
    r = await rest.post(f"/v1/banks/{theirs}/directives", json={"name": "Theirs", "content": "Speak Dutch."})
    their_id = r.json()["directive_id"]
    for method, path, body in [
        ("GET", f"/v1/banks/{mine}/directives/{their_id}", None),
        ("PATCH", f"/v1/banks/{mine}/directives/{their_id}", {"content": "hijacked"}),
        ("DELETE", f"/v1/banks/{mine}/directives/{their_id}", None),
        ("GET", f"/v1/default/banks/{mine}/directives/{their_id}", None),
        ("PATCH", f"/v1/default/banks/{mine}/directives/{their_id}", {"content": "hijacked"}),
        ("DELETE", f"/v1/default/banks/{mine}/directives/{their_id}", None),
    ]:
        r = await rest.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
    scoped = Principal("bank", key_id="k", banks=frozenset({mine}))
    async with mcp_local(app, bank=mine, who=scoped) as client:
        for tool, args in [
            ("get_directive", {"directive_id": their_id}),
            ("update_directive", {"directive_id": their_id, "content": "hijacked"}),
            ("delete_directive", {"directive_id": their_id}),
        ]:
            assert "does not exist" in await tool_error(client, tool, args)
    reader = Principal("bank", key_id="r", banks=frozenset({mine}), read_only=True)
    async with mcp_local(app, bank=mine, who=reader) as client:
        assert (await client.call_tool("list_directives", {})).structured_content["total"] == 1
        for tool, args in [
            ("create_directive", {"name": "x", "content": "y"}),
            ("update_directive", {"directive_id": tone["directive_id"], "is_active": False}),
            ("delete_directive", {"directive_id": tone["directive_id"]}),
        ]:
            assert "only read" in await tool_error(client, tool, args)
    theirs_now = (await rest.get(f"/v1/banks/{theirs}/directives/{their_id}")).json()
    assert theirs_now["content"] == "Speak Dutch."
    assert (await rest.get(f"/v1/banks/{mine}/directives/{tone['directive_id']}")).json()["priority"] == 9


# ---- what directives are for: the prompts the LLM receives -------------------------------------
@pytest.fixture(scope="module")
def directives_db(pg_url):
    return fresh_database(pg_url, "contract_directives")


@pytest.fixture(scope="module")
async def llm_app(directives_db, stub):
    async with running_app(llm_env(stub, directives_db)) as application:
        yield application


@pytest.fixture
async def llm_rest(llm_app):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=llm_app), base_url="http://127.0.0.1") as c:
        yield c


async def test_reflect_prompts_carry_the_directives_that_apply(llm_rest, stub, bank):
    r = await llm_rest.post(f"/v1/banks/{bank}/memories", json={"content": "Nadia runs the bakery on Rue Cler."})
    assert r.status_code == 200, r.text
    directives = [
        {"name": "Privacy", "content": "Never reveal phone numbers.", "priority": 1},
        {"name": "Language", "content": "Answer in French.", "priority": 10},
        {"name": "Paused", "content": "Always answer in verse.", "is_active": False},
        {"name": "Sales", "content": "Mention the weekly croissant offer.", "tags": ["sales"]},
    ]
    ids = {}
    for d in directives:
        r = await llm_rest.post(f"/v1/banks/{bank}/directives", json=d)
        ids[d["name"]] = r.json()["directive_id"]

    since = len(stub.requests)
    r = await llm_rest.post(f"/v1/banks/{bank}/reflect", json={"query": "Who runs the bakery?"})
    assert r.status_code == 200, r.text
    assert r.json()["directives"] == [ids["Language"], ids["Privacy"]]
    (system,) = _system_prompts(stub, "reflect", since)
    assert "Answer in French." in system and "Never reveal phone numbers." in system
    assert system.index("Answer in French.") < system.index("Never reveal phone numbers.")  # priority first
    assert "verse" not in system and "croissant" not in system  # inactive; tagged for another scope

    since = len(stub.requests)
    r = await llm_rest.post(
        f"/v1/default/banks/{bank}/reflect", json={"query": "Who runs the bakery?", "tags": ["sales"]}
    )
    assert r.status_code == 200, r.text
    (system,) = _system_prompts(stub, "reflect", since)
    assert "croissant" in system and "Answer in French." in system

    # a mental model tagged like the directive: its refresh carries it
    r = await llm_rest.post(
        f"/v1/banks/{bank}/mental-models",
        json={"name": "Shop", "source_query": "What does the bakery sell?", "tags": ["sales"]},
    )
    assert r.status_code == 202, r.text
    since = len(stub.requests)
    op = r.json()["operation_id"]
    for _ in range(200):
        if (await llm_rest.get(f"/v1/banks/{bank}/operations/{op}")).json()["status"] == "succeeded":
            break
        await asyncio.sleep(0.05)
    refreshes = _system_prompts(stub, "reflect", since)
    assert refreshes and all("croissant" in s and "Answer in French." in s for s in refreshes)

    # switched off: gone from the next prompt
    await llm_rest.patch(f"/v1/banks/{bank}/directives/{ids['Language']}", json={"is_active": False})
    since = len(stub.requests)
    await llm_rest.post(f"/v1/banks/{bank}/reflect", json={"query": "Who runs the bakery?"})
    (system,) = _system_prompts(stub, "reflect", since)
    assert "French" not in system and "Never reveal phone numbers." in system
