"""Tool output schemas rewritten for cheap client-side checks (mcp/output_schema.py) accept and
refuse what pydantic's own schemas do, for every tool's result model."""

from __future__ import annotations

import copy

import jsonschema
import pytest
from pydantic import TypeAdapter

from hindsight.engine.errors import InvalidArgument
from hindsight.engine.search.schemas import RecallResult
from hindsight.mcp.catalog import TOOLS
from hindsight.mcp.output_schema import cheap_to_validate, with_tool_error
from hindsight.mcp.servers import tool_error


def _valid(schema, instance) -> bool:
    return jsonschema.Draft202012Validator(schema).is_valid(instance)


def test_optional_fields_become_type_lists_and_annotations_go():
    schema = {
        "type": "object",
        "title": "Doc",
        "properties": {
            "title": {"type": "string", "title": "Title"},  # a field named like the keyword stays
            "when": {"anyOf": [{"type": "string", "format": "date-time"}, {"type": "null"}], "default": None},
            "either": {"anyOf": [{"type": "string"}, {"type": "integer"}]},
            "ref_or_null": {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]},
        },
        "$defs": {"X": {"type": "object", "title": "X", "properties": {"default": {"type": "integer"}}}},
    }
    out = cheap_to_validate(schema)
    assert out["properties"]["title"] == {"type": "string"}
    assert out["properties"]["when"] == {"type": ["string", "null"], "format": "date-time"}
    assert out["properties"]["either"] == schema["properties"]["either"]
    assert out["properties"]["ref_or_null"] == {"anyOf": [{"$ref": "#/$defs/X"}, {"type": "null"}]}
    assert out["$defs"]["X"] == {"type": "object", "properties": {"default": {"type": "integer"}}}
    assert "title" not in out
    assert schema["properties"]["when"]["default"] is None  # the input is left as it was


def test_an_optional_literal_keeps_null_among_its_values():
    schema = {"anyOf": [{"enum": ["written", "generated"], "type": "string"}, {"type": "null"}], "default": None}
    out = cheap_to_validate(schema)
    assert out == {"enum": ["written", "generated", None], "type": ["string", "null"]}
    assert _valid(out, None) and _valid(out, "written") and not _valid(out, "other")
    constant = {"anyOf": [{"const": "x", "type": "string"}, {"type": "null"}]}
    assert _valid(cheap_to_validate(constant), None) and not _valid(cheap_to_validate(constant), "y")


def _output_schemas():
    return [(td.name, TypeAdapter(td.response).json_schema(mode="serialization")) for td in TOOLS if td.response]


def test_every_tool_schema_judges_results_as_before():
    recall = {
        "bank_id": "b",
        "query": "q",
        "total_tokens": 2,
        "results": [
            {"id": "1", "text": "t", "type": "world", "context": "general", "occurred_start": None, "score": 0.5},
            {"id": "2", "text": "u", "type": "world", "context": "general", "occurred_start": "2024-05-01T00:00:00Z"},
        ],
    }
    original = RecallResult.model_json_schema(mode="serialization")
    cheap = cheap_to_validate(original)
    bad_type = copy.deepcopy(recall)
    bad_type["results"][0]["occurred_start"] = 5
    missing = copy.deepcopy(recall)
    del missing["results"][1]["text"]
    bad_score = copy.deepcopy(recall)
    bad_score["results"][0]["score"] = "high"
    for instance in (recall, bad_type, missing, bad_score):
        assert _valid(original, instance) == _valid(cheap, instance)
    assert _valid(cheap, recall) and not _valid(cheap, bad_type)


@pytest.mark.parametrize("name,schema", _output_schemas())
def test_each_rewritten_schema_is_a_valid_schema(name, schema):
    jsonschema.Draft202012Validator.check_schema(cheap_to_validate(schema))


@pytest.mark.parametrize("name,schema", _output_schemas())
def test_each_published_schema_admits_the_tools_error_and_nothing_else_new(name, schema):
    """A tool error's body (mcp/servers.py tool_error) passes the published schema, for clients
    that check every structured result (MCP Inspector); a result passes or fails as before."""
    published = with_tool_error(cheap_to_validate(schema))
    jsonschema.Draft202012Validator.check_schema(published)
    assert published["type"] == "object"
    error = tool_error(InvalidArgument("query: is required", "query")).structured_content
    assert _valid(published, error) and _valid(published, {**error, "retry_after": 5, "cause": "rate_limit"})
    assert not _valid(published, {"message": "no code"}) and not _valid(published, {"error": "x", "message": 5})


def test_a_result_checks_against_its_own_schema_within_the_published_one():
    original = RecallResult.model_json_schema(mode="serialization")
    published = with_tool_error(cheap_to_validate(original))
    good = {"bank_id": "b", "query": "q", "total_tokens": 0, "results": []}
    assert _valid(published, good) and not _valid(published, {**good, "results": "none"})
