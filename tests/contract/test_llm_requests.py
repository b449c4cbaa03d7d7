"""The LLM request log, in process against the stub LLM: every call a bank makes, answered or not,
with its outcome (the cause of a failure), tokens and duration, in our shape and the reference's;
the prompt and the answer only when HINDSIGHT_API_LLM_LOG_CONTENT keeps them."""

from __future__ import annotations

import uuid

import httpx
import pytest

from conftest import fresh_database, llm_env, running_app


@pytest.fixture(scope="module")
def plain_db(pg_url):
    return fresh_database(pg_url, "contract_llm_log")


@pytest.fixture(scope="module")
def content_db(pg_url):
    return fresh_database(pg_url, "contract_llm_log_content")


@pytest.fixture(scope="module")
async def plain_rest(plain_db, stub):
    async with running_app(llm_env(stub, plain_db)) as application:
        async with httpx.AsyncClient(transport=httpx.ASGITransport(app=application), base_url="http://127.0.0.1") as c:
            yield c


async def test_every_call_is_logged_with_its_outcome(plain_rest, stub, bank):
    rest = plain_rest
    marker = uuid.uuid4().hex
    r = await rest.post(f"/v1/banks/{bank}/memories", json={"content": f"Ravi keeps bees ({marker})."})
    assert r.status_code == 200, r.text
    ok = await rest.post(f"/v1/banks/{bank}/reflect", json={"query": "Who keeps bees?"})
    assert ok.status_code == 200, ok.text
    # one provider error, then an answer (a retry); then an answer that is never JSON
    stub.fault("error", times=1, task="reflect", match="bees, once")
    r = await rest.post(f"/v1/banks/{bank}/reflect", json={"query": "Who keeps bees, once?"})
    assert r.status_code == 200, r.text
    stub.fault("invalid_json", task="reflect", match="bees, never")
    try:
        r = await rest.post(f"/v1/banks/{bank}/reflect", json={"query": "Who keeps bees, never?"})
        assert r.status_code == 502 and r.json()["cause"] == "malformed", r.text
    finally:
        stub.clear_faults()

    log = (await rest.get(f"/v1/banks/{bank}/llm-requests", params={"operation": "reflect"})).json()
    outcomes = [c["status"] for c in log["requests"]]
    assert outcomes == ["malformed", "malformed", "ok", "provider_error", "ok"], outcomes  # newest first
    assert log["total"] == 5
    first = log["requests"][-1]
    assert first["prompt_tokens"] > 0 and first["completion_tokens"] > 0 and first["duration_ms"] >= 0
    assert first["model"] == "openai/stub-model" and first["purpose"] == "reflect" and first["attempt"] == 1
    refused = log["requests"][3]
    assert refused["prompt_tokens"] == 0 and "HTTP 500" in refused["error"] and refused["attempt"] == 1
    assert all(c["request"] is None and c["response"] is None for c in log["requests"])  # content is off
    failed = (await rest.get(f"/v1/banks/{bank}/llm-requests", params={"status": "failed"})).json()
    assert failed["total"] == 3
    page = (await rest.get(f"/v1/banks/{bank}/llm-requests", params={"limit": 2, "offset": 1})).json()
    assert len(page["requests"]) == 2 and page["requests"][0]["id"] == log["requests"][1]["id"]

    stats = (await rest.get(f"/v1/banks/{bank}/llm-requests/stats", params={"operation": "reflect"})).json()
    assert stats["calls"] == 5 and stats["failed"] == 3 and len(stats["buckets"]) == 7
    assert stats["outcomes"] == {"ok": 2, "malformed": 2, "provider_error": 1}
    assert stats["buckets"][-1]["calls"] == 5
    # the usage table counts the calls the provider answered, as before
    usage = (await rest.get(f"/v1/banks/{bank}/usage")).json()
    reflect = next(u for u in usage["by_operation"] if u["operation"] == "reflect")
    assert reflect["calls"] == 4

    ref = (await rest.get(f"/v1/default/banks/{bank}/llm-requests", params={"status": "error"})).json()
    assert ref["total"] == 3 and {i["status"] for i in ref["items"]} == {"error"}
    assert {i["metadata"]["cause"] for i in ref["items"]} == {"malformed", "provider_error"}
    item = ref["items"][0]
    assert item["provider"] == "openai" and item["scope"] == "reflect" and item["input"] is None
    assert item["started_at"] <= item["ended_at"]
    assert (await rest.get(f"/v1/default/banks/{bank}/llm-requests", params={"memory_id": "x"})).json()["items"] == []
    assert (await rest.get(f"/v1/default/banks/{bank}/llm-requests", params={"provider": "anthropic"})).json()[
        "total"
    ] == 0
    ref_stats = (await rest.get(f"/v1/default/banks/{bank}/llm-requests/stats", params={"period": "1d"})).json()
    assert ref_stats["trunc"] == "hour" and len(ref_stats["buckets"]) == 24
    assert sum(b["statuses"].get("error", 0) for b in ref_stats["buckets"]) == 3

    for bad in ({"status": "weird"}, {"limit": 0}, {"operation_id": "nope"}, {"since": "yesterday"}):
        r = await rest.get(f"/v1/banks/{bank}/llm-requests", params=bad)
        assert r.status_code == 422, (bad, r.text)
    # another bank sees none of these calls
    other = (await rest.get(f"/v1/banks/{bank}_other/llm-requests")).json()
    assert other["total"] == 0


async def test_prompts_and_answers_only_when_kept(content_db, stub, bank):
    async with running_app(llm_env(stub, content_db, llm_log_content="true")) as application:
        async with httpx.AsyncClient(
            transport=httpx.ASGITransport(app=application), base_url="http://127.0.0.1"
        ) as rest:
            await rest.post(f"/v1/banks/{bank}/memories", json={"content": "Lena paints murals."})
            r = await rest.post(f"/v1/banks/{bank}/reflect", json={"query": "What does Lena paint?"})
            assert r.status_code == 200, r.text
            log = await rest.get(f"/v1/banks/{bank}/llm-requests", params={"operation": "reflect"})
            # the answered call (on a loaded machine an attempt may time out and be retried)
            call = next(c for c in log.json()["requests"] if c["status"] == "ok")
            assert any("What does Lena paint?" in m["content"] for m in call["request"])
            assert "murals" in call["response"]
            ref = (await rest.get(f"/v1/default/banks/{bank}/llm-requests", params={"operation": "reflect"})).json()
            ref = next(i for i in ref["items"] if i["status"] == "success")
            assert ref["input"] == call["request"] and ref["output"] == call["response"]


async def test_calls_for_a_bank_never_made_answer_and_log_nothing(plain_rest, bank):
    """The LLM probe and the extraction preview of a bank that does not exist answer (they store
    nothing of the bank's); their calls have no bank to be logged under, and make no bank."""
    p = f"/v1/default/banks/{bank}_never"
    probe = await plain_rest.post(f"{p}/health/llm", json={})
    assert probe.status_code == 200 and probe.json()["operations"], probe.text
    preview = await plain_rest.post(f"{p}/memories/dry-run-extract", json={"content": "Ana moved to Lisbon."})
    assert preview.status_code == 200 and preview.json()["facts"], preview.text
    assert (await plain_rest.get(f"/v1/banks/{bank}_never")).status_code == 404
