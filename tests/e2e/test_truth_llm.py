"""Memory that stays true, through the real server: extraction (the real litellm path to the stub
LLM) says which known fact a new one updates, and only a valid answer supersedes anything; a
mental model drawing from a changed fact is refreshed; Hindsight's own client curates memories."""

from __future__ import annotations

import uuid

from hindsight_client import Hindsight
from hindsight_client.hindsight_client import _run_async as run
from hindsight_client_api.models.update_memory_request import UpdateMemoryRequest

from conftest import wait_for
from support import recall_texts, retain


def _op(api, bank, op_id) -> dict:
    return api.get(f"/v1/banks/{bank}/operations/{op_id}").json()


def _recall(api, bank, query, **kw) -> list[dict]:
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": query, **kw})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_the_llm_says_a_new_fact_updates_an_old_one(llm_api, bank, stub):
    first = retain(llm_api, bank, {"content": "Alice lives in Lisbon.", "timestamp": "2022-01-10T09:00:00Z"}, wait=True)
    assert first["extraction"] == "succeeded"
    lisbon = first["memory_ids"][0]
    asked = len(stub.requests)
    second = retain(llm_api, bank, {"content": "Alice moved to Porto.", "timestamp": "2024-03-05T09:00:00Z"}, wait=True)
    porto = second["memory_ids"][0]
    # the extraction prompt showed the known fact by reference, and the answer named it
    prompt = stub.requests[asked]["messages"][-1]["content"]
    assert '"known"' in prompt and "Alice lives in Lisbon." in prompt and lisbon not in prompt
    assert _op(llm_api, bank, second["operation_id"])["result"]["superseded"] == 1
    texts, _ = recall_texts(llm_api, bank, "Where does Alice live?")
    assert "Alice moved to Porto." in texts and "Alice lives in Lisbon." not in texts
    chain = {m["text"]: m for m in _recall(llm_api, bank, "Where does Alice live?", include_superseded=True)}
    assert chain["Alice lives in Lisbon."]["superseded_by"] == porto
    assert chain["Alice lives in Lisbon."]["valid_to"].startswith("2024-03-05")
    then = [m["text"] for m in _recall(llm_api, bank, "Where does Alice live?", as_of="2023-01-01T00:00:00Z")]
    assert "Alice lives in Lisbon." in then and "Alice moved to Porto." not in then
    history = llm_api.get(f"/v1/banks/{bank}/memories/{lisbon}/history").json()["versions"]
    assert history[-1]["action"] == "superseded" and history[-1]["actor"] == "llm"
    # an unrelated fact about someone else is not touched
    other = retain(llm_api, bank, {"content": "Bruno lives in Rome."}, wait=True)
    assert _op(llm_api, bank, other["operation_id"])["result"]["superseded"] == 0
    texts, _ = recall_texts(llm_api, bank, "Where does Alice live?")
    assert "Alice moved to Porto." in texts


def test_an_invalid_answer_supersedes_nothing_and_is_not_reported_done(llm_api, bank, stub):
    kept = retain(llm_api, bank, {"content": "Chen works at Acme."}, wait=True)["memory_ids"][0]
    fault = stub.fault("stray_update", task="extract_facts", match="Globex")
    try:
        res = retain(llm_api, bank, {"content": "Chen joined Globex."}, wait=True)
    finally:
        stub.clear_faults()
    del fault
    op = _op(llm_api, bank, res["operation_id"])
    assert op["status"] == "failed" and res["extraction"] == "failed"
    assert "k999" in op["error"]
    fact = llm_api.get(f"/v1/banks/{bank}/memories/{kept}").json()
    assert fact["valid_to"] is None and fact["superseded_by"] is None
    texts, _ = recall_texts(llm_api, bank, "Where does Chen work?")
    assert "Chen works at Acme." in texts and "Chen joined Globex." in texts  # the raw text stays


def test_a_model_drawing_from_an_invalidated_fact_is_refreshed(llm_api, bank):
    facts = retain(llm_api, bank, {"content": "Dara likes green tea. Dara plays chess."}, wait=True)["memory_ids"]
    r = llm_api.post(f"/v1/banks/{bank}/mental-models", json={"name": "Dara", "source_query": "What does Dara like?"})
    model = r.json()["mental_model_id"]
    wait_for(lambda: _op(llm_api, bank, r.json()["operation_id"])["status"] == "succeeded")
    first = llm_api.get(f"/v1/banks/{bank}/mental-models/{model}").json()
    drawn = set(first["based_on"]["memories"])
    assert drawn & set(facts)
    tea = next(m for m in facts if m in drawn and "tea" in llm_api.get(f"/v1/banks/{bank}/memories/{m}").json()["text"])
    llm_api.post(f"/v1/banks/{bank}/memories/{tea}/invalidate", json={"reason": "she never said that"})

    def refreshed_again():
        now = llm_api.get(f"/v1/banks/{bank}/mental-models/{model}").json()
        return now["last_refreshed_at"] != first["last_refreshed_at"] and now["status"] == "ready"

    wait_for(refreshed_again, timeout=60)
    now = llm_api.get(f"/v1/banks/{bank}/mental-models/{model}").json()
    assert tea not in now["based_on"]["memories"] and "green tea" not in now["content"]
    ops = llm_api.get(f"/v1/banks/{bank}/operations", params={"limit": 50}).json()["operations"]
    assert any((o.get("payload") or {}).get("reason") == "memories changed" for o in ops), ops


def test_hindsight_client_update_memory_and_history(server, api):
    bank = f"curate-{uuid.uuid4().hex[:8]}"
    client = Hindsight(base_url=server.url)
    try:
        client.retain(bank, "Ema's favourite colour is red.")
        mid = api.get(f"/v1/banks/{bank}/memories").json()["memories"][0]["id"]
        out = run(
            client.memory.update_memory(
                bank, mid, UpdateMemoryRequest(text="Ema's favourite colour is blue.", reason="she corrected it")
            )
        )
        assert out["text"] == "Ema's favourite colour is blue." and out["state"] == "valid"
        out = run(client.memory.update_memory(bank, mid, UpdateMemoryRequest(state="invalidated", reason="joke")))
        assert out["state"] == "invalidated"
        assert client.recall(bank, "Ema's favourite colour").results == []
        run(client.memory.update_memory(bank, mid, UpdateMemoryRequest(state="valid")))
        assert client.recall(bank, "Ema's favourite colour").results[0].text == "Ema's favourite colour is blue."
        history = run(client.memory.get_observation_history(bank, mid))
        assert [v["action"] for v in history["history"]] == ["created", "edited", "invalidated", "restored"]
        assert history["history"][1]["reason"] == "she corrected it"
    finally:
        client.close()


def test_cli_corrects_invalidates_restores_and_shows_history(server, api, bank):
    import json
    import os
    import subprocess
    import sys

    env = {**os.environ, "HINDSIGHT_URL": server.url}

    def run(*a):
        return subprocess.run(
            [sys.executable, "-m", "hindsight.cli.main", *a], env=env, capture_output=True, text=True, timeout=60
        )

    old = json.loads(run("retain", bank, "Ivan lives in Kyiv.", "--timestamp", "2021-01-01T00:00:00Z").stdout)
    old_id = old["memory_ids"][0]
    new = run("retain", bank, "Ivan moved to Lviv.", "--timestamp", "2023-01-01T00:00:00Z", "--supersedes", old_id)
    assert new.returncode == 0, new.stderr
    assert "Kyiv" not in run("recall", bank, "Where does Ivan live?").stdout
    assert "Kyiv" in run("recall", bank, "Where does Ivan live?", "--as-of", "2022-01-01T00:00:00Z").stdout
    chain = run("recall", bank, "Where does Ivan live?", "--include-superseded").stdout
    assert "until 2023-01-01" in chain
    new_id = json.loads(new.stdout)["memory_ids"][0]
    edited = run("memories", "update", bank, new_id, "--text", "Ivan moved to Lviv in 2023.", "--reason", "year")
    assert edited.returncode == 0 and json.loads(edited.stdout)["changed"] == ["text"]
    assert f"supersedes: {old_id}" in run("memories", "history", bank, new_id).stdout
    assert run("memories", "invalidate", bank, new_id, "--reason", "not sure").returncode == 0
    back = run("recall", bank, "Where does Ivan live?").stdout  # what it had replaced stands again
    assert "Lviv" not in back and "Kyiv" in back
    assert run("memories", "restore", bank, new_id).returncode == 0
    history = run("memories", "history", bank, new_id)
    assert history.returncode == 0
    lines = [line.split()[2] for line in history.stdout.splitlines() if line.startswith("v")]
    assert lines == ["created", "edited", "invalidated", "restored"] and "(year)" in history.stdout
    assert "supersedes:" not in history.stdout
    assert "restored by open (its successor" in run("memories", "history", bank, old_id).stdout
    bad = run("memories", "update", bank, new_id, "--valid-to", "1999-01-01T00:00:00Z")
    assert bad.returncode == 1 and "valid_to" in bad.stderr and "Traceback" not in bad.stderr
    missing = run("memories", "get", bank, "00000000-0000-4000-8000-000000000000")
    assert missing.returncode == 1 and "404" in missing.stderr


def test_superseding_a_raw_unit_ends_its_facts_before_and_after_extraction(llm_api, bank):
    done = retain(llm_api, bank, {"content": "Zoe owns a red bicycle. Zoe plays chess."}, wait=True)
    raw = llm_api.get(f"/v1/banks/{bank}/memories/{done['memory_ids'][0]}/lineage").json()["sources"][0]["id"]
    retain(llm_api, bank, {"content": "Zoe sold the red bicycle.", "supersedes": [raw]}, wait=True)
    texts, _ = recall_texts(llm_api, bank, "Does Zoe have a bicycle?")
    assert "Zoe owns a red bicycle." not in texts and "Zoe plays chess." not in texts
    # the same before the facts exist: they end with their raw unit once extracted
    slow = retain(llm_api, bank, {"content": "Yan owns a blue canoe. [[sleep:2]]"}, wait=False)
    retain(llm_api, bank, {"content": "Yan sold the blue canoe.", "supersedes": slow["memory_ids"][:1]}, wait=False)
    wait_for(lambda: _op(llm_api, bank, slow["operation_id"])["status"] == "succeeded", timeout=60)
    hits = _recall(llm_api, bank, "Does Yan have a canoe?", include_superseded=True)
    canoe = [m for m in hits if "owns a blue canoe" in m["text"]]
    assert canoe and all(m["valid_to"] for m in canoe)
