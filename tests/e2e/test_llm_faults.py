"""A misbehaving LLM, mode by mode (hindsight/stub_llm.py FAULTS), against the real server and
the real litellm path: reflect fails with a typed error naming the cause on REST, MCP and the
`/v1/default` API (or answers extractively where the caller allows it), retain keeps the raw text
and says how extraction ended, a failed refresh keeps the model's content, rate limits make
operations wait without using up attempts, and each failed call is one log line."""

from __future__ import annotations

import asyncio
import re
import time
import uuid
from datetime import datetime

import httpx
import pytest

from hindsight.text import estimate_tokens

from conftest import Server, fresh_database, llm_env, mcp_session, wait_for
from support import metric, metric_samples, op_done, recall_texts, retain, tool_error

MODEL = "openai/stub-model"
KEY = "stub-key"
LLM_TIMEOUT = 3  # the `hang` fault sleeps 30 s
# Each failing mode: the HTTP status and the cause every face reports.
FAILING = {
    "rate_limit": (503, "rate_limit"),
    "error": (502, "provider_error"),
    "hang": (504, "timeout"),
    "invalid_json": (502, "malformed"),
    "wrong_schema": (502, "malformed"),
    "truncated": (502, "truncated"),
    "empty_content": (502, "empty"),
    "empty_answer": (502, "empty"),
    "huge": (502, "too_long"),
}
WORDS = {
    "rate_limit": "the LLM provider is rate-limiting requests",
    "provider_error": "the LLM provider failed",
    "timeout": "the LLM did not answer in time",
    "malformed": "the LLM's answer was malformed",
    "truncated": "the LLM's answer was cut off at its token limit",
    "empty": "the LLM's answer was empty",
    "too_long": "the LLM's answer was too long",
}
FACT = "Ana plays chess in Lisbon."


@pytest.fixture(scope="module")
def llm():
    from hindsight.stub_llm import StubLLM

    s = StubLLM().start()
    yield s
    s.stop()


@pytest.fixture(scope="module")
def faulty(pg_url, llm):
    env = llm_env(llm, fresh_database(pg_url, "llm_faults"), llm_timeout=LLM_TIMEOUT, worker_concurrency=4)
    s = Server(env).start()
    yield s
    s.stop()


@pytest.fixture
def api(faulty, llm):
    llm.clear_faults()
    with faulty.http() as c:
        yield c
    llm.clear_faults()


def log_lines(server: Server, *needles: str) -> list[str]:
    return [ln for ln in server.log_path.read_text().splitlines() if all(n in ln for n in needles)]


def deferred(api, bank: str, op_id: str) -> dict | None:
    """The operation while it waits in the queue for a rate limit (with the reason), else None."""
    op = api.get(f"/v1/banks/{bank}/operations/{op_id}").json()
    return op if op["status"] == "queued" and op["error"] else None


def failed_calls(llm, since: int) -> int:
    """Requests the stub answered with a fault since event `since`."""
    return sum(1 for e in llm.events[since:] if e.how != "ok")


async def reflect_everywhere(server: Server, bank: str, query: str, **extra) -> dict:
    """The same reflect on REST, the `/v1/default` API and MCP."""
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as http:
        rest = await http.post(f"/v1/banks/{bank}/reflect", json={"query": query, **extra})
        compat = await http.post(f"/v1/default/banks/{bank}/reflect", json={"query": query, **extra})
    async with mcp_session(f"{server.url}/mcp/{bank}/") as client:
        result = await client.call_tool("reflect", {"query": query, **extra})
        mcp = tool_error(result) if result.is_error else result.structured_content
    return {"rest": rest, "compat": compat, "mcp": mcp}


@pytest.mark.parametrize("mode", list(FAILING))
def test_reflect_names_how_the_llm_failed_on_every_face(faulty, llm, api, bank, mode):
    status, cause = FAILING[mode]
    retain(api, bank, {"content": FACT})
    before, events = metric_samples(api.get("/metrics").text), len(llm.events)
    got = asyncio.run(reflect_everywhere(faulty, bank, f"What does Ana play? [[fault:{mode}]]"))

    rest, compat, mcp = got["rest"], got["compat"], got["mcp"]
    assert rest.status_code == status, rest.text
    body = rest.json()
    assert body["error"] == "llm_unavailable" and body["cause"] == cause, body
    assert body["message"].startswith(f"reflect: {WORDS[cause]} (") and MODEL in body["message"], body
    if cause == "rate_limit":
        assert rest.headers["Retry-After"] == "1" and body["message"].endswith("; retry after 1 s")
    else:
        assert "Retry-After" not in rest.headers
    assert compat.status_code == status and compat.json()["cause"] == cause
    assert compat.json()["detail"] == compat.json()["message"] == body["message"]  # Hindsight's clients read detail
    # MCP: the tool's result flagged isError (SEP-1303), in the same words, with the cause and the wait
    assert mcp["error"] == "llm_unavailable" and mcp["message"] == body["message"] and mcp["cause"] == cause, mcp
    assert (mcp.get("retry_after") == 1) == (cause == "rate_limit")

    # One log line per failed call, naming the operation, bank, model and cause; no traceback.
    calls = failed_calls(llm, events)
    lines = log_lines(faulty, "hindsight.llm", f"bank {bank},")
    assert calls >= 3 and len(lines) == calls, (calls, lines)
    assert all(f"LLM call failed: {cause} (" in ln and "operation reflect" in ln and MODEL in ln for ln in lines)
    assert not log_lines(faulty, "Traceback") and not log_lines(faulty, "unexpected error")
    after = metric_samples(api.get("/metrics").text)
    grew = metric(after, "hindsight_llm_calls_total", operation="reflect", model=MODEL, outcome=cause) - metric(
        before, "hindsight_llm_calls_total", operation="reflect", model=MODEL, outcome=cause
    )
    assert grew == calls


@pytest.mark.parametrize("mode", ["hang", "huge", "empty_answer"])
def test_reflect_may_fall_back_to_the_extractive_answer(faulty, api, bank, mode):
    _, cause = FAILING[mode]
    retain(api, bank, {"content": FACT})
    got = asyncio.run(
        reflect_everywhere(faulty, bank, f"What does Ana play? [[fault:{mode}]]", on_llm_failure="extractive")
    )
    rest = got["rest"].json()
    assert got["rest"].status_code == 200 and rest["mode"] == "extractive", rest
    assert rest["llm_error"]["cause"] == cause and rest["llm_error"]["message"].startswith(WORDS[cause])
    assert rest["note"].startswith(f"The LLM failed ({cause})") and "Ana plays chess" in rest["answer"]
    assert rest["based_on"]["memories"]
    assert rest["usage"]["calls"] == (0 if mode == "hang" else 2)  # answers count (and cost), timeouts do not
    compat = got["compat"].json()
    assert got["compat"].status_code == 200 and compat["mode"] == "extractive" and compat["llm_error"]["cause"] == cause
    assert compat["text"] == rest["answer"]
    assert got["mcp"]["mode"] == "extractive" and got["mcp"]["llm_error"]["cause"] == cause


def test_the_fallback_can_be_the_servers_default(pg_url, llm, bank):
    env = llm_env(llm, fresh_database(pg_url, "llm_fallback"), reflect_on_llm_failure="extractive")
    s = Server(env).start()
    try:
        with s.http() as api:
            retain(api, bank, {"content": FACT})
            r = api.post(f"/v1/banks/{bank}/reflect", json={"query": "What does Ana play? [[fault:invalid_json]]"})
            assert r.status_code == 200 and r.json()["llm_error"]["cause"] == "malformed", r.text
            asked = {"query": "What does Ana play? [[fault:invalid_json]]", "on_llm_failure": "error"}
            r = api.post(f"/v1/banks/{bank}/reflect", json=asked)  # the request's own choice wins
            assert r.status_code == 502 and r.json()["cause"] == "malformed"
    finally:
        s.stop()


def test_cli_reflect_says_how_the_llm_failed(faulty, api, bank):
    import os
    import subprocess
    import sys

    retain(api, bank, {"content": FACT})
    env = {**os.environ, "HINDSIGHT_URL": faulty.url}

    def run(*a):
        cmd = [sys.executable, "-m", "hindsight.cli.main", "reflect", bank, "What does Ana play? [[fault:error]]", *a]
        return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120)

    failed = run()
    assert failed.returncode == 1 and "502 llm_unavailable: reflect: the LLM provider failed" in failed.stderr
    assert "Traceback" not in failed.stderr
    fallback = run("--on-llm-failure", "extractive")
    assert fallback.returncode == 0 and "Ana plays chess" in fallback.stdout, fallback.stderr
    assert "The LLM failed (provider_error)" in fallback.stderr


async def retain_everywhere(server: Server, content: str, banks: dict[str, str]) -> dict:
    """One retain per face, each in its own bank, at once: REST waiting, REST queued, MCP
    waiting, `/v1/default` synchronous and asynchronous. Returns each face's extraction
    operation (its id) and what the call said about it."""

    async def rest(http, bank, wait):
        r = await http.post(f"/v1/banks/{bank}/memories", json={"content": content}, params={"wait": wait})
        assert r.status_code == 200, r.text
        return r.json()["operation_id"], r.json()["extraction"]

    async def compat(http, bank, is_async):
        r = await http.post(
            f"/v1/default/banks/{bank}/memories", json={"items": [{"content": content}], "async": is_async}
        )
        assert r.status_code == 200 and r.json()["success"], r.text
        if not is_async:
            return r.json()["operation_id"], r.json()["extraction"]
        op_id = r.json()["operation_id"]  # the retain itself; its result names the extraction

        async def extraction():
            op = (await http.get(f"/v1/banks/{bank}/operations/{op_id}")).json()
            return op["result"]["operation_id"] if op["status"] == "succeeded" else None

        for _ in range(300):
            if found := await extraction():
                return found, None
            await asyncio.sleep(0.1)
        raise AssertionError("the queued retain was not stored")

    async def mcp(bank):
        async with mcp_session(f"{server.url}/mcp/{bank}/") as client:
            data = (await client.call_tool("retain", {"content": content, "wait": True})).structured_content
            return data["operation_id"], data["extraction"]

    async with httpx.AsyncClient(base_url=server.url, timeout=120) as http:
        done = await asyncio.gather(
            rest(http, banks["rest"], True),
            rest(http, banks["rest_queued"], False),
            mcp(banks["mcp"]),
            compat(http, banks["compat"], False),
            compat(http, banks["compat_async"], True),
        )
    return dict(zip(["rest", "rest_queued", "mcp", "compat", "compat_async"], done))


def faces_banks() -> dict[str, str]:
    tag = uuid.uuid4().hex[:8]
    return {face: f"f_{face}_{tag}" for face in ("rest", "rest_queued", "mcp", "compat", "compat_async")}


@pytest.mark.parametrize("mode", [m for m in FAILING if m != "rate_limit"])
def test_retain_keeps_the_raw_text_and_says_how_extraction_ended(faulty, llm, api, mode):
    _, cause = FAILING[mode]
    content = f"Bruno restores old boats in Porto. [[fault:{mode}]]"
    banks = faces_banks()
    got = asyncio.run(retain_everywhere(faulty, content, banks))
    empty = mode == "empty_answer"
    expected = "empty" if empty else "failed"
    for face, (op_id, said) in got.items():
        bank = banks[face]
        op = op_done(api, bank, op_id)
        if said is not None and face != "rest_queued":
            assert said == expected, (face, said)
        if empty:  # nothing is not something: said so, and the raw text stays in recall
            assert op["status"] == "succeeded" and op["result"]["extraction"] == "empty", (face, op)
            assert op["result"]["new_facts"] == 0 and op["error"] is None
        else:
            assert op["status"] == "failed" and op["attempts"] == 2, (face, op)
            assert op["error"].startswith(WORDS[cause]) and MODEL in op["error"], (face, op["error"])
        texts, _ = recall_texts(api, bank, "Who restores boats?")
        assert texts == [content], (face, texts)  # raw content stored, recallable, not duplicated
    assert not log_lines(faulty, "Traceback") and not log_lines(faulty, "ProgramLimitExceeded")
    for face, (op_id, _) in got.items():
        lines = log_lines(faulty, "hindsight.llm", f"operation retain {op_id}, bank {banks[face]},")
        assert empty or (lines and all(f"LLM call failed: {cause} (" in ln for ln in lines)), (face, lines)


def test_rate_limits_make_operations_wait_without_using_attempts(faulty, llm, api):
    """A provider that keeps refusing: the operations wait (Retry-After, re-queued with
    run_after), never fail, never use an attempt; once it answers again they finish."""
    banks = faces_banks()
    faces = ("rest_queued", "mcp", "compat_async")
    tokens = {face: uuid.uuid4().hex[:8] for face in faces}
    for face in faces:
        llm.fault("rate_limit", match=tokens[face], retry_after=2)

    def content(face: str) -> str:
        return f"Chen grows peppers on the roof ({tokens[face]})."

    async def go():
        ops = {}
        async with httpx.AsyncClient(base_url=faulty.url, timeout=120) as http:
            r = await http.post(f"/v1/banks/{banks['rest_queued']}/memories", json={"content": content("rest_queued")})
            ops["rest_queued"] = r.json()["operation_id"]
            body = {"items": [{"content": content("compat_async")}], "async": True}
            r = await http.post(f"/v1/default/banks/{banks['compat_async']}/memories", json=body)
            ops["compat_async"] = r.json()["operation_id"]
        async with mcp_session(f"{faulty.url}/mcp/{banks['mcp']}/") as client:
            data = (await client.call_tool("retain", {"content": content("mcp")})).structured_content
            ops["mcp"] = data["operation_id"]
        return ops

    ops = asyncio.run(go())

    def refused(face: str) -> list[float]:
        return [e.at for e in llm.events if e.how == "rate_limit" and e.match == tokens[face]]

    wait_for(lambda: all(len(refused(face)) >= 4 for face in faces), timeout=60)
    for face in faces:
        # Retry-After: 2 sets every wait, within an attempt and before a re-queued operation runs.
        times = refused(face)
        assert min(b - a for a, b in zip(times, times[1:])) >= 1.9, (face, times)
    for face in ("rest_queued", "mcp"):
        op = api.get(f"/v1/banks/{banks[face]}/operations/{ops[face]}").json()
        assert op["status"] in ("queued", "running") and op["attempts"] <= 1, op
    waiting = wait_for(lambda: deferred(api, banks["mcp"], ops["mcp"]))
    assert WORDS["rate_limit"] in waiting["error"] and "not counted as an attempt" in waiting["error"]
    assert waiting["attempts"] == 0
    assert datetime.fromisoformat(waiting["run_after"]) > datetime.fromisoformat(waiting["updated_at"])
    assert log_lines(faulty, "hindsight.worker", str(ops["mcp"]), "waiting for the LLM provider")

    llm.clear_faults()  # the provider answers again: everything queued finishes, once
    for face, op_id in ops.items():
        op = op_done(api, banks[face], op_id)
        assert op["status"] == "succeeded" and op["attempts"] == 1, (face, op)
        if face == "compat_async":  # the retain was stored; its extraction is the next operation
            op = op_done(api, banks[face], op["result"]["operation_id"])
            assert op["status"] == "succeeded" and op["attempts"] == 1, op
        texts, _ = recall_texts(api, banks[face], "Who grows peppers?")
        assert texts == [content(face)], (face, texts)


@pytest.mark.parametrize("form", ["seconds", "date"])
def test_retry_after_sets_the_next_wait(faulty, llm, api, bank, form):
    """One 429 asking for 3 s: the next call comes no sooner (the backoff alone would be
    0.25-0.75 s), and the operation succeeds on its first attempt."""
    token = uuid.uuid4().hex[:8]
    llm.fault("rate_limit", times=1, match=token, retry_after=3, retry_after_form=form)
    events = len(llm.events)
    res = retain(api, bank, {"content": f"Dara rows on the river ({token})."})
    assert res["extraction"] == "succeeded"
    refused, answered = [e for e in llm.events[events:] if e.task == "extract_facts"][:2]
    assert (refused.how, answered.how) == ("rate_limit", "ok")
    # An HTTP date has whole seconds: "in 3 s" may read as a little over 2.
    assert answered.at - refused.at >= (2.9 if form == "seconds" else 1.9), answered.at - refused.at
    op = api.get(f"/v1/banks/{bank}/operations/{res['operation_id']}").json()
    assert op["attempts"] == 1 and op["result"]["llm_calls"] == 1  # the refused call cost nothing


def test_reflect_waits_for_a_short_retry_after(faulty, llm, api, bank):
    retain(api, bank, {"content": FACT})
    token = uuid.uuid4().hex[:8]
    llm.fault("rate_limit", times=1, match=token, retry_after=1.5)
    t = time.monotonic()
    r = api.post(f"/v1/banks/{bank}/reflect", json={"query": f"What does Ana play? {token}"})
    assert r.status_code == 200 and r.json()["mode"] == "llm", r.text
    assert time.monotonic() - t >= 1.5


async def refresh_everywhere(server: Server, bank: str, models: dict[str, str]) -> dict[str, str]:
    """A refresh of one model per face (REST, MCP, `/v1/default`); their operation ids."""
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as http:
        rest = (await http.post(f"/v1/banks/{bank}/mental-models/{models['rest']}/refresh")).json()
        compat = (await http.post(f"/v1/default/banks/{bank}/mental-models/{models['compat']}/refresh")).json()
    async with mcp_session(f"{server.url}/mcp/{bank}/") as client:
        mcp = (await client.call_tool("refresh_mental_model", {"mental_model_id": models["mcp"]})).structured_content
    return {"rest": rest["operation_id"], "compat": compat["operation_id"], "mcp": mcp["operation_id"]}


@pytest.mark.parametrize("mode", list(FAILING))
def test_a_failed_refresh_keeps_the_models_content(faulty, llm, api, bank, mode):
    _, cause = FAILING[mode]
    retain(api, bank, {"content": FACT})
    token = uuid.uuid4().hex[:8]
    models = {}
    for face in ("rest", "mcp", "compat"):
        created = api.post(
            f"/v1/banks/{bank}/mental-models",
            json={"name": f"Games {face}", "source_query": f"What games does Ana play? ({token})"},
        ).json()
        assert op_done(api, bank, created["operation_id"])["status"] == "succeeded"
        models[face] = created["mental_model_id"]
    good = {face: api.get(f"/v1/banks/{bank}/mental-models/{m}").json() for face, m in models.items()}
    assert all(g["status"] == "ready" and "Ana plays chess" in g["content"] for g in good.values())

    llm.fault(mode, task="reflect", match=token)  # the LLM misbehaves for these models' refreshes
    ops = asyncio.run(refresh_everywhere(faulty, bank, models))
    for face, op_id in ops.items():
        if mode == "rate_limit":  # waiting, not failing
            op = wait_for(lambda op_id=op_id: deferred(api, bank, op_id))
            assert op["attempts"] == 0 and "not counted as an attempt" in op["error"], op
        else:
            op = op_done(api, bank, op_id)
            assert op["status"] == "failed" and op["attempts"] == 2, (face, op)
            assert op["error"].startswith(f"mental-model refresh: {WORDS[cause]} ("), op["error"]
        now = api.get(f"/v1/banks/{bank}/mental-models/{models[face]}").json()
        assert now["content"] == good[face]["content"] and now["status"] == "ready", now
        assert WORDS[cause] in now["last_error"], now["last_error"]
        history = api.get(f"/v1/banks/{bank}/mental-models/{models[face]}/history").json()
        assert [h["version"] for h in history] == [1]
    compat = api.get(f"/v1/default/banks/{bank}/mental-models/{models['compat']}").json()
    assert compat["content"] == good["compat"]["content"] and compat["last_refresh_failed_at"]

    llm.clear_faults()
    if mode == "rate_limit":  # the waiting refreshes now finish
        for op_id in ops.values():
            assert op_done(api, bank, op_id)["status"] == "succeeded"
    else:
        assert (
            op_done(
                api, bank, api.post(f"/v1/banks/{bank}/mental-models/{models['rest']}/refresh").json()["operation_id"]
            )["status"]
            == "succeeded"
        )
        assert api.get(f"/v1/banks/{bank}/mental-models/{models['rest']}").json()["last_error"] is None


def test_a_failing_refresh_is_not_asked_again_every_tick(faulty, llm, api, bank):
    """New memories make a model stale; its refresh fails; the sweep (every 0.3 s here, 1 s of
    debounce) leaves it alone for its cool-down instead of queueing it again and again."""
    retain(api, bank, {"content": FACT})
    token = uuid.uuid4().hex[:8]
    body = {"name": "Games", "source_query": f"What games does Ana play? ({token})"}
    created = api.post(f"/v1/banks/{bank}/mental-models", json=body).json()
    assert op_done(api, bank, created["operation_id"])["status"] == "succeeded"
    llm.fault("error", task="reflect", match=token)
    retain(api, bank, {"content": "Ana also plays go on Sundays."})

    def refreshes() -> list[dict]:
        return api.get(f"/v1/banks/{bank}/operations", params={"type": "refresh_mental_model"}).json()["operations"]

    wait_for(lambda: any(o["status"] == "failed" for o in refreshes()))
    time.sleep(4)  # a dozen sweeps
    assert sorted(o["status"] for o in refreshes()) == ["failed", "succeeded"], refreshes()


def test_a_model_never_holds_more_than_its_max_tokens(faulty, api, bank):
    """The bound is the model's own max_tokens, asked for in the prompt and checked on the answer:
    a model that follows it fills the model; one that writes twice as much fails the refresh."""
    retain(api, bank, {"content": "Ines " + "keeps a long diary of every chess game she played in Lisbon, " * 6})
    for name, query in (("Diary", "What does Ines keep?"), ("Verbose", "What does Ines keep? [[fault:verbose]]")):
        body = {"name": name, "source_query": query, "max_tokens": 64}
        assert api.post(f"/v1/banks/{bank}/mental-models", json=body).status_code == 202
    diary = wait_for(lambda: m if (m := api.get(f"/v1/banks/{bank}/mental-models/diary").json())["content"] else None)
    assert diary["status"] == "ready" and 0 < estimate_tokens(diary["content"]) <= 64 and "Ines" in diary["content"]
    verbose = wait_for(
        lambda: m if (m := api.get(f"/v1/banks/{bank}/mental-models/verbose").json())["status"] == "failed" else None
    )
    assert verbose["content"] is None and WORDS["too_long"] in verbose["last_error"]
    assert "the limit is 64" in verbose["last_error"]


def test_injected_instructions_stay_text_in_their_own_bank(faulty, llm, api, bank):
    from hindsight.stub_llm import FOREIGN_MEMORY_ID, FOREIGN_MODEL_ID, INJECTION

    res = retain(api, bank, {"content": "Omar fixes bicycles. [[fault:injected]]"})
    assert res["extraction"] == "succeeded"
    texts, _ = recall_texts(api, bank, "override instructions victim")
    assert INJECTION in texts  # stored as what it is: text the LLM wrote, in this bank only
    assert api.get("/v1/banks/victim").status_code == 404
    r = api.post(f"/v1/banks/{bank}/reflect", json={"query": "Who fixes bicycles? [[fault:injected]]"})
    assert r.status_code == 200, r.text
    cited = r.json()["based_on"]
    assert FOREIGN_MEMORY_ID not in cited["memories"] and FOREIGN_MODEL_ID not in cited["mental_models"]
    assert cited["memories"]  # the ids it was given stay
    assert api.get("/v1/banks/victim").status_code == 404
    assert KEY not in faulty.log_path.read_text()  # the API key never reaches the log


def test_metrics_count_llm_failures_by_cause(faulty, api):
    text = api.get("/metrics").text
    outcomes = set(re.findall(r'hindsight_llm_calls_total\{[^}]*outcome="([a-z_]+)"', text))
    assert outcomes and outcomes <= {"ok", *WORDS}, outcomes
