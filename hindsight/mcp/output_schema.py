"""Tool output schemas in the shape that is cheapest for clients to check.

The official MCP SDK client validates every structured tool result against the tool's output
schema with `jsonschema`, in Python, on the caller's CPU. A recall result carries ~100
memories of ~16 fields each, and pydantic writes each optional field as
`anyOf: [{type: X}, {type: null}]` plus a `title` and a `default`: checking one result costs
the client more CPU than the server spent answering it (bench/README.md, "Where the time goes
(issue 27)"). The same constraints written as `type: [X, "null"]`, without the annotations no
client checks (`title`, `default`), cost markedly less. Descriptions
stay: they tell an agent what a field means.

A tool's failure is its result too (SEP-1303: flagged `isError`, mcp/servers.py `tool_error`),
with the error's body as structured content. The SDK clients check only successful results, but
others (MCP Inspector) check every structured result they get, so each published schema also
admits that body (`with_tool_error`).
"""

from __future__ import annotations

from typing import Any

_DROPPED = frozenset({"title", "default"})
_SCHEMA_MAPS = frozenset({"properties", "$defs", "definitions", "patternProperties", "dependentSchemas"})
_SCHEMA_LISTS = frozenset({"anyOf", "oneOf", "allOf", "prefixItems"})
_SCHEMA_ONE = frozenset({"items", "additionalProperties", "not", "contains", "propertyNames", "if", "then", "else"})


def cheap_to_validate(schema: Any) -> Any:
    """The same constraints, with optional fields as type lists and without titles or defaults."""
    if not isinstance(schema, dict):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _DROPPED:
            continue
        if key in _SCHEMA_MAPS and isinstance(value, dict):
            out[key] = {name: cheap_to_validate(sub) for name, sub in value.items()}
        elif key in _SCHEMA_LISTS and isinstance(value, list):
            out[key] = [cheap_to_validate(sub) for sub in value]
        elif key in _SCHEMA_ONE:
            out[key] = cheap_to_validate(value)
        else:
            out[key] = value
    return _nullable(out)


# The structured content of a tool error: the body REST answers for the same error.
TOOL_ERROR = {
    "type": "object",
    "description": "A tool error (the result is flagged isError): the body REST answers for the same error.",
    "properties": {
        "error": {"type": "string", "description": "The code: invalid_argument, not_found, forbidden, ..."},
        "message": {"type": "string", "description": "What went wrong, naming the argument at fault first."},
        "field": {"type": ["string", "null"], "description": "The argument at fault, when there is one."},
        "cause": {"type": "string", "description": "How the LLM failed (llm_unavailable only)."},
        "retry_after": {"type": "integer", "description": "Seconds to wait before the same call may succeed."},
    },
    "required": ["error", "message"],
}


def with_tool_error(schema: dict[str, Any] | None) -> dict[str, Any] | None:
    """A tool's output schema that also admits a tool error's body: the result's own schema or
    TOOL_ERROR, its definitions kept at the top where their references point. A result is
    checked against its own schema first, so a successful result costs a client no more."""
    if schema is None:
        return None
    defs = {**schema.get("$defs", {}), "ToolError": TOOL_ERROR}
    own = {k: v for k, v in schema.items() if k != "$defs"}
    return {"type": "object", "$defs": defs, "anyOf": [own, {"$ref": "#/$defs/ToolError"}]}


def _nullable(schema: dict[str, Any]) -> dict[str, Any]:
    """`anyOf: [S, {type: null}]` becomes S with "null" added to its type (and to its `enum`, an
    optional Literal's values), when S names one type and nothing but `anyOf` would then mean
    something else."""
    options = schema.get("anyOf")
    if not isinstance(options, list) or len(options) != 2 or {"type": "null"} not in options:
        return schema
    other = options[0] if options[1] == {"type": "null"} else options[1]
    if not isinstance(other.get("type"), str) or set(other) & set(schema) - {"anyOf"}:
        return schema
    if "const" in other:
        return schema
    merged = {k: v for k, v in schema.items() if k != "anyOf"}
    merged.update(other)
    merged["type"] = [other["type"], "null"]
    if "enum" in other:  # an optional Literal: its values, and null
        merged["enum"] = [*other["enum"], None]
    return merged
