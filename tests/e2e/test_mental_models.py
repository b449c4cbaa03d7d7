"""Reflect and the mental-model life cycle, over MCP (official client) and REST, with and without
an LLM; automatic refresh on new memories; failed refreshes keep the previous content."""

from __future__ import annotations

import asyncio
import time

from conftest import mcp_session, wait_for
from support import op_done, retain, tool_error


def test_reflect_with_llm_cites_the_memories_it_used(llm_api, bank):
    retain(llm_api, bank, {"content": "Jon opened a dance studio in Berlin."})
    llm_api.patch(f"/v1/banks/{bank}", json={"mission": "Help Jon run his studio", "disposition": {"empathy": 4}})
    r = llm_api.post(f"/v1/banks/{bank}/reflect", json={"query": "What business did Jon start?", "budget": "mid"})
    assert r.status_code == 200, r.text
    res = r.json()
    assert res["mode"] == "llm" and res["model"] == "openai/stub-model"
    assert "dance studio" in res["answer"]
    recalled = {
        m["id"]: m["text"]
        for m in llm_api.post(f"/v1/banks/{bank}/recall", json={"query": "Jon dance studio"}).json()["results"]
    }
    assert res["based_on"]["memories"] and set(res["based_on"]["memories"]) <= set(recalled)


def test_reflect_offline_is_extractive_and_says_so(api, bank):
    api.post(f"/v1/banks/{bank}/memories", json={"content": "Maria volunteers at the homeless shelter."})
    res = api.post(f"/v1/banks/{bank}/reflect", json={"query": "Where does Maria volunteer?"}).json()
    assert res["mode"] == "extractive" and "No LLM is configured" in res["note"]
    assert "homeless shelter" in res["answer"] and len(res["based_on"]["memories"]) == 1


def test_reflect_bad_arguments(api, server, bank):
    api.post(f"/v1/banks/{bank}/memories", json={"content": "x y z"})
    r = api.post(f"/v1/banks/{bank}/reflect", json={"query": "q", "budget": "huge"})
    assert r.status_code == 422 and "budget" in r.json()["message"]
    empty = api.post("/v1/banks/never_made_bank/reflect", json={"query": "q"})
    assert empty.status_code == 200 and empty.json()["based_on"] == {"memories": [], "mental_models": []}

    async def go():
        async with mcp_session(f"{server.url}/mcp/{bank}/") as client:
            e = tool_error(await client.call_tool("reflect", {"query": "q", "budget": "huge"}))
            assert e["error"] == "invalid_argument" and "budget" in e["message"]
            e = tool_error(await client.call_tool("reflect", {"query": ""}))
            assert e["error"] == "invalid_argument" and "query" in e["message"]

    asyncio.run(go())


def test_mental_model_life_cycle_over_mcp(llm_server, llm_api, bank):
    retain(llm_api, bank, {"content": "Priya leads the search team.", "tags": ["team"]})
    retain(llm_api, bank, {"content": "Omar maintains the billing service.", "tags": ["team"]})

    async def go():
        async with mcp_session(f"{llm_server.url}/mcp/{bank}/") as c:
            created = (
                await c.call_tool(
                    "create_mental_model",
                    {
                        "name": "Team Directory",
                        "source_query": "Who works here and what do they do?",
                        "tags": ["team"],
                        "max_tokens": 512,
                    },
                )
            ).structured_content
            assert created["mental_model_id"] == "team-directory" and created["operation_id"]
            op = op_done(llm_api, bank, created["operation_id"])
            assert op["status"] == "succeeded", op
            got = (await c.call_tool("get_mental_model", {"mental_model_id": "team-directory"})).structured_content
            assert got["status"] == "ready" and "Priya" in got["content"] and got["last_refreshed_at"]
            assert got["based_on"]["memories"]

            # the same name again gets a fresh id; a taken custom id is an error naming the argument
            again = (
                await c.call_tool("create_mental_model", {"name": "Team Directory", "source_query": "Who?"})
            ).structured_content
            assert again["mental_model_id"] == "team-directory-2"
            e = tool_error(
                await c.call_tool(
                    "create_mental_model", {"name": "x", "source_query": "y", "mental_model_id": "team-directory"}
                )
            )
            assert e["error"] == "conflict" and "mental_model_id" in e["message"]
            e = tool_error(
                await c.call_tool(
                    "create_mental_model", {"name": "x", "source_query": "y", "mental_model_id": "Bad Id!"}
                )
            )
            assert e["error"] == "invalid_argument" and "mental_model_id" in e["message"]

            listed = (
                await c.call_tool("list_mental_models", {"tags": ["team"], "tags_match": "any_strict"})
            ).structured_content["mental_models"]
            assert [m["mental_model_id"] for m in listed] == ["team-directory"]
            listed = (await c.call_tool("list_mental_models", {"tags": ["team"]})).structured_content["mental_models"]
            assert [m["mental_model_id"] for m in listed] == ["team-directory", "team-directory-2"]  # any: untagged too
            everything = (await c.call_tool("list_mental_models", {})).structured_content["mental_models"]
            assert len(everything) == 2

            upd = (
                await c.call_tool("update_mental_model", {"mental_model_id": "team-directory", "name": "People"})
            ).structured_content
            assert upd["name"] == "People" and upd["pending_operation_id"] is None  # a rename needs no refresh

            ref = (await c.call_tool("refresh_mental_model", {"mental_model_id": "team-directory"})).structured_content
            assert op_done(llm_api, bank, ref["operation_id"])["status"] == "succeeded"

            # new memories with a matching tag make the model stale: refreshed after the debounce
            before = (await c.call_tool("get_mental_model", {"mental_model_id": "team-directory"})).structured_content
            retain(llm_api, bank, {"content": "Kofi joined as a designer.", "tags": ["team"]})

            def refreshed():
                m = llm_api.get(f"/v1/banks/{bank}/mental-models/team-directory").json()
                return m if m["last_refreshed_at"] > before["last_refreshed_at"] else None

            after = wait_for(refreshed, timeout=30)
            assert after["status"] == "ready"
            history = llm_api.get(f"/v1/banks/{bank}/mental-models/team-directory/history").json()
            assert [h["version"] for h in history] == [3, 2, 1]

            deleted = (
                await c.call_tool("delete_mental_model", {"mental_model_id": "team-directory"})
            ).structured_content
            assert deleted == {"deleted": True, "mental_model_id": "team-directory"}
            e = tool_error(await c.call_tool("get_mental_model", {"mental_model_id": "team-directory"}))
            assert "does not exist" in e["message"]

    asyncio.run(go())


def test_memories_without_the_models_tags_do_not_refresh_it(llm_api, bank):
    retain(llm_api, bank, {"content": "Lena runs marathons.", "tags": ["sport"]})
    created = llm_api.post(
        f"/v1/banks/{bank}/mental-models", json={"name": "Sport", "source_query": "Who does sport?", "tags": ["sport"]}
    ).json()
    op_done(llm_api, bank, created["operation_id"])
    first = llm_api.get(f"/v1/banks/{bank}/mental-models/sport").json()
    retain(llm_api, bank, {"content": "The office moved to Oslo.", "tags": ["office"]})
    time.sleep(3)  # debounce (1 s) plus sweeps
    assert (
        llm_api.get(f"/v1/banks/{bank}/mental-models/sport").json()["last_refreshed_at"] == first["last_refreshed_at"]
    )


def test_empty_refresh_fails_and_keeps_previous_content(llm_api, bank):
    retain(llm_api, bank, {"content": "Sven brews coffee every morning."})
    created = llm_api.post(
        f"/v1/banks/{bank}/mental-models", json={"name": "Habits", "source_query": "What are Sven's habits?"}
    ).json()
    op_done(llm_api, bank, created["operation_id"])
    good = llm_api.get(f"/v1/banks/{bank}/mental-models/habits").json()
    assert good["content"]
    r = llm_api.patch(f"/v1/banks/{bank}/mental-models/habits", json={"source_query": "Sven habits [[empty]]"})
    assert r.status_code == 200 and r.json()["pending_operation_id"]
    op = op_done(llm_api, bank, r.json()["pending_operation_id"])
    assert op["status"] == "failed" and "the LLM's answer was empty" in op["error"]  # nothing is not something
    now = llm_api.get(f"/v1/banks/{bank}/mental-models/habits").json()
    assert now["content"] == good["content"] and now["status"] == "ready"
    assert "the LLM's answer was empty" in now["last_error"]
    assert len(llm_api.get(f"/v1/banks/{bank}/mental-models/habits/history").json()) == 1


def test_mental_models_offline_are_extractive(api, bank):
    api.post(f"/v1/banks/{bank}/memories", json={"content": "Wen grows tomatoes on her balcony."})
    created = api.post(
        f"/v1/banks/{bank}/mental-models", json={"name": "Garden", "source_query": "What does Wen grow?"}
    )
    assert created.status_code == 202
    op = op_done(api, bank, created.json()["operation_id"])
    assert op["status"] == "succeeded" and op["result"]["mode"] == "extractive"
    m = api.get(f"/v1/banks/{bank}/mental-models/garden").json()
    assert "tomatoes" in m["content"]


def test_mental_model_rest_errors(api, bank):
    api.post(f"/v1/banks/{bank}/memories", json={"content": "a"})
    assert api.get(f"/v1/banks/{bank}/mental-models/nope").status_code == 404
    assert api.get(f"/v1/banks/{bank}/mental-models/Bad!").status_code == 422
    r = api.post(f"/v1/banks/{bank}/mental-models", json={"name": "x"})
    assert r.status_code == 422 and "source_query" in r.json()["message"]
    r = api.post(f"/v1/banks/{bank}/mental-models", json={"name": "x", "source_query": "y", "max_tokens": 1})
    assert r.status_code == 422 and "max_tokens" in r.json()["message"]
    assert api.get(f"/v1/banks/{bank}/operations/not-a-uuid").status_code == 422
    assert api.get(f"/v1/banks/{bank}/operations/00000000-0000-0000-0000-000000000000").status_code == 404


def test_health_reports_llm_mode(api, llm_api):
    offline = api.get("/health").json()
    assert offline["mode"].startswith("offline") and offline["llm"] == {"retain": None, "reflect": None}
    online = llm_api.get("/health").json()
    assert online["mode"] == "llm" and online["llm"]["reflect"] == "openai/stub-model"


def test_cli_reflect_mental_models_operations(llm_server, bank):
    import os
    import subprocess
    import sys

    env = {**os.environ, "HINDSIGHT_URL": llm_server.url}

    def run(*a):
        return subprocess.run(
            [sys.executable, "-m", "hindsight.cli.main", *a], env=env, capture_output=True, text=True, timeout=120
        )

    out = run("retain", bank, "Uma restores vintage motorbikes.", "--wait")
    assert out.returncode == 0 and '"succeeded"' in out.stdout, out.stderr
    out = run("reflect", bank, "What does Uma restore?")
    assert out.returncode == 0 and "motorbikes" in out.stdout and "based on 1 memories" in out.stderr
    out = run("mental-models", "create", bank, "Hobbies", "What are Uma's hobbies?", "--wait")
    assert out.returncode == 0 and '"status": "ready"' in out.stdout, out.stderr
    out = run("mental-models", "refresh", bank, "hobbies", "--wait")
    assert out.returncode == 0 and '"succeeded"' in out.stdout
    assert "hobbies" in run("mental-models", "list", bank).stdout
    out = run("operations", "list", bank)
    assert out.returncode == 0 and "refresh_mental_model" in out.stdout and "retain_extract" in out.stdout
    assert '"retain"' in run("operations", "usage", bank).stdout
    bad = run("mental-models", "get", bank, "missing-model")
    assert bad.returncode == 1 and "404" in bad.stderr and "Traceback" not in bad.stderr


def test_a_model_with_tags_draws_from_memories_with_all_of_them(llm_api, bank):
    """As the reference: a model tagged [team, eng] reflects over memories carrying both tags
    (all_strict), not over untagged memories or those with only one of them."""
    both = retain(llm_api, bank, {"content": "Ines leads the platform engineers.", "tags": ["team", "eng"]})
    retain(llm_api, bank, {"content": "Ines leads the sales team too.", "tags": ["team"]})
    retain(llm_api, bank, {"content": "Ines leads the book club."})
    created = llm_api.post(
        f"/v1/banks/{bank}/mental-models",
        json={"name": "Eng leads", "source_query": "Who does Ines lead?", "tags": ["team", "eng"]},
    ).json()
    assert op_done(llm_api, bank, created["operation_id"])["status"] == "succeeded"
    model = llm_api.get(f"/v1/banks/{bank}/mental-models/eng-leads").json()
    assert model["based_on"]["memories"] == both["memory_ids"], model
