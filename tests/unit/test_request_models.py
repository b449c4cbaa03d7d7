"""The request models are the contract of each operation (defaults, limits, cleaning), and one
wording of what is wrong serves every face (engine/rules/validation.py); MCP arguments are generated
from the models (mcp/servers.py)."""

from __future__ import annotations

import inspect

import pytest
from pydantic import ValidationError

from hindsight.docs import tools_table
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.knowledge.documents import DocumentDelete, ImportDocumentsRequest
from hindsight.engine.knowledge.rag import DocumentSearchRequest, RagSearchRequest
from hindsight.engine.memory.schemas import RetainBatchRequest, RetainRequest
from hindsight.engine.queue.schemas import OperationQuery
from hindsight.engine.reflection.mental_models import MentalModelChange, MentalModelUpdate
from hindsight.engine.rules.validation import describe, parse
from hindsight.engine.search.schemas import RecallRequest
from hindsight.mcp.catalog import TOOLS
from hindsight.mcp.servers import arguments


def message(model, **values) -> str:
    with pytest.raises(InvalidArgument) as e:
        parse(model, values)
    return e.value.message


def test_defaults_and_limits_live_in_the_models():
    assert DocumentSearchRequest(query="x").top_k == 5 and RagSearchRequest(search_phrases=["x"]).top_k == 10
    assert OperationQuery().limit == 50 and RecallRequest(query="x").max_tokens == 4096
    assert message(RecallRequest, query="x", top_k=51) == "top_k: Input should be less than or equal to 50"
    assert message(RagSearchRequest, search_phrases=["a"] * 6).startswith("search_phrases: ")
    assert message(RagSearchRequest, search_phrases=["ok", " "]) == "search_phrases.1: must not be blank"
    assert message(OperationQuery, limit=501) == "limit: Input should be less than or equal to 500"
    assert message(DocumentSearchRequest, query="x", strictness=1, min_score=0.5).endswith(
        "give strictness or min_score, not both"
    )
    assert message(DocumentDelete, doc_id="5b0f4f0e-1d4b-4f3c-9a43-6b9f1f0a2c11") == (
        "confirm: deleting a document needs confirm=true"
    )
    assert message(DocumentDelete, doc_id="nope", confirm=True) == "doc_id: 'nope' is not a document id (a UUID)"


def test_tags_are_cleaned_the_same_for_every_operation():
    assert RetainRequest(content="x", tags=[" b", "a", "a"]).tags == ["a", "b"]
    # a string is never taken for a list (MCP decodes lists sent as JSON text before validating)
    assert message(RecallRequest, query="x", tags='["b", "a"]') == "tags: Input should be a valid list"
    assert message(RecallRequest, query="x", tags="a") == "tags: Input should be a valid list"
    assert message(RetainRequest, content="x", tags=[""]).startswith("tags: each tag must be")


def test_one_wording_names_nested_arguments_and_request_parts():
    assert message(RetainBatchRequest, items=[{"content": "ok"}, {"content": 3}]) == (
        "items.1.content: Input should be a valid string"
    )
    assert message(RetainBatchRequest, items=[]).startswith("items: ")
    # FastAPI's locations start with where the argument was; the client knows it by name
    http = [{"loc": ("query", "limit"), "msg": "bad"}, {"loc": ("body",), "msg": "Field required"}]
    assert describe(http, http=True) == ("limit: bad; body: Field required", "limit")
    assert describe([{"type": "json_invalid", "loc": ("body", 1), "msg": "x"}], http=True)[0] == "body: malformed JSON"


def test_already_validated_parts_are_not_validated_again():
    change = MentalModelChange(mental_model_id="team", name="Team", tags=["b", "a"])
    update = change.changes()
    assert isinstance(update, MentalModelUpdate) and update.model_fields_set == {"name", "tags"}
    assert update.tags == ["a", "b"] and update.source_query is None
    item = RetainRequest(content="x", wait=True).item()
    assert "wait" not in item.model_fields_set and item.content == "x"


def test_mcp_arguments_are_the_model_fields_required_first():
    params = arguments(ImportDocumentsRequest)
    assert [p.name for p in params] == list(ImportDocumentsRequest.model_fields)
    recall = arguments(RecallRequest)
    assert recall[0].name == "query" and recall[0].default is inspect.Parameter.empty
    assert {p.name: p.default for p in recall}["max_tokens"] == 4096
    assert arguments(None) == []


def test_every_tool_is_documented_once_with_its_contract():
    table = tools_table()
    assert len({td.name for td in TOOLS}) == len(TOOLS)
    for td in TOOLS:
        assert td.description and f"| `{td.name}` |" in table
        if td.request is not None:
            with pytest.raises(ValidationError):  # a model forbids arguments it does not know
                td.request.model_validate({"no_such_argument": 1})


def test_a_response_schema_is_refused_past_its_values_before_jsonschema_reads_it(monkeypatch):
    # jsonschema checks a schema in pure Python on the event loop, ~0.12 ms a value: 32 KiB of
    # {"allOf": [{}, ...]} (8,170 values) took 1 s. Past 1,000 values it is refused unread.
    import jsonschema

    from hindsight.engine.reflection.reflect import MAX_SCHEMA_VALUES, ReflectRequest

    checked: list = []
    real = jsonschema.validators.validator_for
    monkeypatch.setattr(jsonschema.validators, "validator_for", lambda s, **kw: checked.append(s) or real(s, **kw))
    wide = {"allOf": [{}] * 8_169}
    assert "response_schema: more than 1000 values" in message(ReflectRequest, query="q", response_schema=wide)
    flat = {"enum": list(range(MAX_SCHEMA_VALUES))}
    assert "more than 1000 values" in message(ReflectRequest, query="q", response_schema=flat)
    assert checked == []
    typed = {"type": "object", "properties": {f"p{i}": {"type": "string", "description": "d"} for i in range(100)}}
    assert ReflectRequest(query="q", response_schema=typed).response_schema == typed and checked[0] == typed


def test_a_banks_disposition_and_kept_settings_are_small():
    # Stored with the bank and sent back whole on every read (the disposition in every reflect
    # prompt): 10 MB of nested empty lists took the event loop 0.3 s each time the bank was read.
    from hindsight.engine.banks.schemas import BankUpdate

    lists = {"a": [[] for _ in range(10_000)]}
    assert message(BankUpdate, disposition=lists) == "disposition: larger than 16 KiB of JSON (UTF-8)"
    assert message(BankUpdate, client_settings={"k": "x" * 17_000}).startswith("client_settings: larger than 16 KiB")
    # Measured as UTF-8: a 4,000-character Chinese reflect_mission (Hindsight's bank config) is kept.
    assert parse(BankUpdate, {"disposition": {"skepticism": 4}, "client_settings": {"reflect_mission": "任务" * 2_000}})
    deep: dict = {}
    for _ in range(2_000):  # past json.dumps' recursion: refused by the depth check, not a 500
        deep = {"d": deep}
    assert "nested deeper than" in message(BankUpdate, disposition=deep)


def test_a_response_schema_may_not_ask_for_regular_expressions():
    # jsonschema would run them with Python's re over the LLM's answer, on the event loop:
    # ^(a+)+$ against 40 a's and a b backtracks for hours, and the caller can steer the answer.
    from hindsight.engine.reflection.reflect import ReflectRequest

    evil = {"type": "object", "properties": {"name": {"type": "string", "pattern": "^(a+)+$"}}}
    assert message(ReflectRequest, query="q", response_schema=evil).startswith(
        "response_schema: properties.name.pattern: regular expressions (pattern, patternProperties) are not supported"
    )
    keyed = {"type": "object", "patternProperties": {"^(a|a)*$": {"type": "string"}}}
    assert "patternProperties: regular expressions" in message(ReflectRequest, query="q", response_schema=keyed)
    nested = {"anyOf": [{"type": "string"}, {"items": {"propertyNames": {"pattern": "x"}}}]}
    assert "anyOf.1.items.propertyNames.pattern" in message(ReflectRequest, query="q", response_schema=nested)
    # A property named pattern, and data that holds the word, are not regular expressions.
    named = {
        "type": "object",
        "properties": {"pattern": {"type": "string"}, "patternProperties": {"type": "object"}},
        "examples": [{"pattern": "x"}],
    }
    assert ReflectRequest(query="q", response_schema=named).response_schema == named
