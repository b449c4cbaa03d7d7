"""How an LLM's failures and answers are read: Retry-After in its forms, the cause of an unusable
answer, the waits between attempts, the error every face reports, and the bounds on what an
answer may put in a bank (tests/e2e/test_llm_faults.py drives the same through a real server)."""

from __future__ import annotations

import json
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime
from types import SimpleNamespace

import pytest
from pydantic import ValidationError

from hindsight.config import load_settings
from hindsight.engine.errors import LLMUnavailable, known
from hindsight.engine.memory.extraction import MAX_FACT_CHARS, ExtractedFacts
from hindsight.engine.reflection.reflect import ReflectRequest, _extractive
from hindsight.language.entities import MAX_ENTITY_CHARS, merge_entities
from hindsight.llm import CAUSE_WORDS, CAUSES, LLM, LLMError, Rejected
from hindsight.llm.client import REQUEST_WAIT_LIMIT, Failure, parse_retry_after, rejection
from hindsight.mcp.servers import tool_error
from hindsight.text import estimate_tokens

NOW = datetime(2026, 11, 23, 12, 0, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("headers", "seconds"),
    [
        ({"retry-after": "2"}, 2.0),
        ({"Retry-After": "0.5"}, 0.5),
        ({"retry-after": format_datetime(NOW + timedelta(seconds=30), usegmt=True)}, 30.0),
        ({"retry-after": format_datetime(NOW - timedelta(seconds=30), usegmt=True)}, 0.0),  # already past
        ({"retry-after-ms": "1500", "retry-after": "9"}, 1.5),  # OpenAI's finer header wins
        ({"retry-after": "soon"}, None),
        ({"retry-after": "-3"}, None),
        ({"retry-after": "nan"}, None),
        ({}, None),
        (None, None),
    ],
)
def test_retry_after_in_seconds_or_as_a_date(headers, seconds):
    assert parse_retry_after(headers, now=NOW) == seconds


def test_an_unusable_answer_is_named_in_our_words():
    with pytest.raises(ValidationError) as long_fact:
        ExtractedFacts.model_validate({"facts": [{"item": 0, "text": "x" * (MAX_FACT_CHARS + 1)}]})
    f = rejection(long_fact.value)
    assert f.cause == "too_long" and "facts.0.text" in f.reason and "xxxx" not in f.reason  # no copy of the answer
    with pytest.raises(ValidationError) as wrong:
        ExtractedFacts.model_validate({"result": "ok"})
    assert rejection(wrong.value).cause == "malformed" and "facts: Field required" in rejection(wrong.value).reason
    with pytest.raises(ValueError) as not_json:
        json.loads("Sure! {facts: [")
    assert rejection(not_json.value).reason.startswith("not JSON (")
    assert rejection(Rejected("empty", "no content")).cause == "empty"
    assert rejection(ValueError("facts.0 names item 3")).cause == "malformed"  # a check's plain ValueError


def _llm(**env) -> LLM:
    settings = load_settings({"HINDSIGHT_API_LLM_MODEL": "openai/x", "HINDSIGHT_API_LLM_MAX_RETRIES": "3", **env})
    return LLM(settings, pool=None)


def test_the_wait_before_the_next_attempt():
    llm = _llm()
    wait = llm._next_wait
    rate = Failure("rate_limit", "HTTP 429", retry_after=30)
    assert wait(rate, 1, 4, left=900, in_operation=True) == 30  # the provider's wait, not ours
    assert wait(rate, 1, 4, left=20, in_operation=True) is None  # past the deadline: deferred instead
    assert wait(rate, 1, 4, left=900, in_operation=False) is None  # a request does not hold on for 30 s
    short = Failure("rate_limit", "HTTP 429", retry_after=REQUEST_WAIT_LIMIT)
    assert wait(short, 1, 4, left=60, in_operation=False) == REQUEST_WAIT_LIMIT
    assert wait(Failure("malformed", "not JSON"), 1, 4, left=60, in_operation=False) == 0  # re-asked at once
    backoff = wait(Failure("provider_error", "HTTP 500"), 2, 4, left=60, in_operation=True)
    assert backoff is not None and 0.5 <= backoff <= 1.5
    assert wait(Failure("provider_error", "HTTP 401", retryable=False), 1, 4, left=60, in_operation=True) is None
    assert wait(Failure("timeout", "no answer"), 4, 4, left=900, in_operation=True) is None  # out of attempts


@pytest.mark.parametrize(
    ("cause", "status"),
    [("rate_limit", 503), ("timeout", 504), *((c, 502) for c in CAUSES if c not in ("rate_limit", "timeout"))],
)
def test_an_llm_failure_is_the_same_error_on_every_face(cause, status):
    exc = LLMError(
        cause, f"{CAUSE_WORDS[cause]} (why; model m, 2 attempts)", retry_after=2.2 if cause == "rate_limit" else None
    )
    error = LLMUnavailable.of(exc, "reflect")
    assert error.status == status and error.cause == cause
    body = error.to_dict()
    assert body == {"error": "llm_unavailable", "message": error.message, "cause": cause}
    assert error.message.startswith(f"reflect: {CAUSE_WORDS[cause]} (")
    result = tool_error(error)  # MCP: the tool's result, flagged isError, the REST body as structured content
    assert result.is_error and [c.text for c in result.content] == [error.message]
    if cause == "rate_limit":
        assert error.http_headers() == {"Retry-After": "3"} and result.structured_content == {**body, "retry_after": 3}
        assert error.message.endswith("; retry after 3 s")
    else:
        assert error.http_headers() == {} and result.structured_content == body
    assert isinstance(known(exc), LLMUnavailable)  # one that no engine function named is still not a 500


def test_entity_names_are_bounded():
    long = "Lorem Ipsum " * 50
    kept = merge_entities([(long, "name"), ("Ana", "person")], [("B" * MAX_ENTITY_CHARS, "name")])
    assert kept == [("Ana", "person"), ("B" * MAX_ENTITY_CHARS, "name")]


def test_an_extractive_answer_fits_its_token_limit():
    memories = [SimpleNamespace(id=f"m{i}", text=f"memory {i} " + "word " * 200) for i in range(10)]
    req = ReflectRequest(query="q")
    for limit in (64, 300, 2048):
        result = _extractive("b", req, memories, limit, "note", "why")
        assert estimate_tokens(result.answer) <= limit and result.answer.startswith("Most relevant memories:")
        assert result.based_on.memories and result.mode == "extractive"
    assert len(_extractive("b", req, memories, 32_768, "n", "w").based_on.memories) == 10  # no limit reached
