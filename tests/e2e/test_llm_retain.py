"""Retain with an LLM: fact extraction through the real litellm path to the stub server."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from conftest import fresh_database, llm_env, running_app, wait_for
from support import recall_texts, retain

NAMES = [
    "Alice",
    "Bruno",
    "Chen",
    "Dara",
    "Emeka",
    "Farah",
    "Goran",
    "Hana",
    "Ivan",
    "Jia",
    "Kofi",
    "Lena",
    "Mateo",
    "Nia",
    "Omar",
    "Priya",
    "Quinn",
    "Rosa",
    "Sven",
    "Tariq",
    "Uma",
    "Viktor",
    "Wen",
    "Ximena",
    "Yusuf",
    "Zara",
    "Aiko",
    "Bjorn",
    "Chloe",
    "Dmitri",
]
THINGS = [
    "a violin",
    "a canoe",
    "a telescope",
    "sourdough bread",
    "a chess set",
    "a kite",
    "a guitar",
    "tomato seeds",
    "a novel",
    "a bicycle",
    "a camera",
    "a quilt",
    "a drone",
    "a teapot",
    "a skateboard",
    "a map of Peru",
    "a piano",
    "a tent",
    "a microscope",
    "a puzzle",
    "running shoes",
    "a sketchbook",
    "a fishing rod",
    "a cactus",
    "a typewriter",
    "a snowboard",
    "a lantern",
    "a saxophone",
    "a hammock",
    "a globe",
]
MELANIE = "Melanie went to the Louvre in Paris yesterday. She loved the paintings."


def operation(api, bank, op_id):
    r = api.get(f"/v1/banks/{bank}/operations/{op_id}")
    assert r.status_code == 200, r.text
    return r.json()


def test_extracts_self_contained_facts_with_absolute_times(llm_api, bank):
    res = retain(
        llm_api,
        bank,
        {"content": MELANIE, "timestamp": "2023-05-08T13:00:00Z", "tags": ["travel"], "metadata": {"turn": "D1:3"}},
    )
    assert res["extraction"] == "succeeded" and res["operation_id"]
    assert res["facts"] == 2 and len(res["memory_ids"]) == 2

    texts, results = recall_texts(llm_api, bank, "What did Melanie love?")
    assert "Melanie loved the paintings." in texts  # "She" resolved to the person
    assert MELANIE not in texts  # the raw unit is replaced by its facts, not duplicated
    louvre = next(m for m in results if "Louvre" in m["text"])
    assert louvre["occurred_start"].startswith("2023-05-07")  # "yesterday" against the item timestamp
    assert {"Melanie", "Louvre", "Paris"} <= set(louvre["entities"])
    assert louvre["tags"] == ["travel"] and louvre["metadata"] == {"turn": "D1:3"}  # carried from the item
    assert {m["id"] for m in results} <= set(res["memory_ids"])

    # The original text is kept, marked superseded, and linked: deleting it removes its facts.
    listed = llm_api.get(f"/v1/banks/{bank}/memories", params={"limit": 10}).json()["memories"]
    raw = next(m for m in listed if m["text"] == MELANIE)
    assert raw["superseded"] is True
    assert llm_api.delete(f"/v1/banks/{bank}/memories/{raw['id']}").status_code == 200
    assert llm_api.get(f"/v1/banks/{bank}/memories").json()["total"] == 0


@pytest.fixture
def in_process_db(pg_url):
    return fresh_database(pg_url, "llm_in_process")


async def test_facts_are_read_off_the_event_loop(in_process_db, stub, bank, monkeypatch):
    """The LLM's facts (up to 100 an item, 2,000 characters each) have their names and dates found
    in pure Python, Chinese names at ~17 us a character: on a worker thread with their embedding,
    never on the event loop, where every request would wait for them."""
    from hindsight.engine.memory import extraction as extract

    threads: list[bool] = []
    found = extract.extract_entities

    def extract_entities(text, budget=None):
        threads.append(threading.current_thread() is threading.main_thread())
        return found(text, budget)

    monkeypatch.setattr(extract, "extract_entities", extract_entities)
    async with running_app(llm_env(stub, in_process_db)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60) as c:
            r = await c.post(f"/v1/banks/{bank}/memories", params={"wait": True}, json={"content": MELANIE})
    assert r.status_code == 200 and r.json()["facts"] == 2, r.text
    assert threads == [False, False]  # one call a fact, each off the loop


def test_accepted_content_is_recallable_before_extraction_and_cancel_stops_it(llm_api, bank):
    res = retain(llm_api, bank, {"content": "Caroline adopted a dog named Biscuit. [[slow]]"}, wait=False)
    assert res["extraction"] == "queued"
    texts, _ = recall_texts(llm_api, bank, "Caroline's dog")
    assert texts == ["Caroline adopted a dog named Biscuit. [[slow]]"]  # read-your-writes
    wait_for(lambda: operation(llm_api, bank, res["operation_id"])["status"] == "running")
    r = llm_api.post(f"/v1/banks/{bank}/operations/{res['operation_id']}/cancel")
    assert r.status_code == 200 and r.json()["status"] == "cancelled"
    time.sleep(1.5)  # past a heartbeat: the worker has stopped the task
    op = operation(llm_api, bank, res["operation_id"])
    assert op["status"] == "cancelled" and op["result"] is None
    texts, _ = recall_texts(llm_api, bank, "Caroline's dog")
    assert texts == ["Caroline adopted a dog named Biscuit. [[slow]]"]  # nothing lost


def test_items_are_batched_into_few_llm_calls(llm_api, bank):
    items = [{"content": f"{n} bought {x} last week."} for n, x in zip(NAMES, THINGS)]
    r = llm_api.post(f"/v1/banks/{bank}/memories", json={"items": items}, params={"wait": True})
    assert r.status_code == 200, r.text
    res = r.json()
    op = operation(llm_api, bank, res["operation_id"])
    calls = op["result"]["llm_calls"]
    # 30 items of ~45 budgeted tokens each under a 400-token budget: 4 calls, not 30.
    assert 2 <= calls <= 5, op["result"]
    assert op["result"]["new_facts"] == 30 and res["facts"] == 30


def test_malformed_output_is_retried_and_never_dropped(llm_api, bank):
    res = retain(llm_api, bank, {"content": "Nate plays the violin. [[malformed-once]]"})
    op = operation(llm_api, bank, res["operation_id"])
    assert op["status"] == "succeeded" and op["result"]["llm_calls"] == 2  # rejected once, re-asked
    texts, _ = recall_texts(llm_api, bank, "What does Nate play?")
    assert "Nate plays the violin." in texts

    res = retain(llm_api, bank, {"content": "Joanna writes screenplays. [[malformed-always]]"})
    op = operation(llm_api, bank, res["operation_id"])
    assert res["extraction"] == "failed" and op["status"] == "failed" and op["attempts"] == 2
    assert "the LLM's answer was malformed" in op["error"]
    texts, _ = recall_texts(llm_api, bank, "What does Joanna write?")
    assert "Joanna writes screenplays. [[malformed-always]]" in texts  # raw text still there


def test_provider_errors_are_retried(llm_api, bank):
    res = retain(llm_api, bank, {"content": "Evan bought a red canoe. [[error-once]]"})
    assert res["extraction"] == "succeeded"
    texts, _ = recall_texts(llm_api, bank, "What did Evan buy?")
    assert "Evan bought a red canoe." in texts


def test_retaining_the_same_content_twice_does_not_duplicate_facts(llm_api, bank):
    first = retain(llm_api, bank, {"content": "Audrey has three dogs. Audrey lives in Denver."})
    second = retain(llm_api, bank, {"content": "Audrey has three dogs. Audrey lives in Denver."})
    op = operation(llm_api, bank, second["operation_id"])
    assert op["result"]["new_facts"] == 0 and op["result"]["merged_facts"] == 2
    assert sorted(second["memory_ids"]) == sorted(first["memory_ids"])  # linked to the same facts
    texts, _ = recall_texts(llm_api, bank, "Audrey dogs Denver")
    assert sorted(texts) == ["Audrey has three dogs.", "Audrey lives in Denver."]


def test_retain_over_mcp_returns_operation_and_waits(llm_server, bank):
    import asyncio

    from conftest import mcp_session

    async def go():
        async with mcp_session(f"{llm_server.url}/mcp/{bank}/") as client:
            res = await client.call_tool("retain", {"content": "Gina opened a dance studio.", "wait": True})
            data = res.structured_content
            assert data["extraction"] == "succeeded" and data["facts"] == 1
            op = await client.call_tool("get_operation", {"operation_id": data["operation_id"]})
            assert op.structured_content["status"] == "succeeded"
            listed = await client.call_tool("list_operations", {"status": "succeeded"})
            assert data["operation_id"] in [o["operation_id"] for o in listed.structured_content["operations"]]

    asyncio.run(go())


def test_token_accounting_per_bank_and_operation(llm_api, bank):
    a = retain(llm_api, bank, {"content": "Tim collects Harry Potter books."})
    b = retain(llm_api, bank, {"content": "John is a veteran. He volunteers at shelters."})
    llm_api.post(f"/v1/banks/{bank}/reflect", json={"query": "What does Tim collect?"})
    usage = llm_api.get(f"/v1/banks/{bank}/usage").json()
    by = {u["operation"]: u for u in usage["by_operation"]}
    ops = [operation(llm_api, bank, x["operation_id"])["result"] for x in (a, b)]
    assert by["retain"]["calls"] == sum(o["llm_calls"] for o in ops) == 2
    assert by["retain"]["prompt_tokens"] == sum(o["prompt_tokens"] for o in ops) > 0
    assert by["retain"]["model"] == "openai/stub-model"
    assert by["reflect"]["calls"] == 1 and by["reflect"]["completion_tokens"] > 0
    assert usage["total"]["calls"] == 3


def test_usage_and_operations_of_a_bank_never_written_are_empty(llm_api):
    usage = llm_api.get("/v1/banks/nope_bank_x/usage")
    assert usage.status_code == 200 and usage.json()["total"]["calls"] == 0
    ops = llm_api.get("/v1/banks/nope_bank_x/operations")
    assert ops.status_code == 200 and ops.json()["operations"] == []
    assert llm_api.get("/v1/banks/nope_bank_x/operations/00000000-0000-0000-0000-000000000000").status_code == 404
