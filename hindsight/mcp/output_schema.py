"""Tool output schemas in the shape that is cheapest for clients to check.

The official MCP SDK client validates every structured tool result against the tool's output
schema with `jsonschema`, in Python, on the caller's CPU. A recall result carries ~100
memories of ~16 fields each, and pydantic writes each optional field as
`anyOf: [{type: X}, {type: null}]` plus a `title` and a `default`: checking one result cost
the client ~60-70 ms of CPU, three times what the server spent answering it (bench/README.md,
"Where the time goes (issue 27)"). The same constraints written as `type: [X, "null"]`,
without the annotations no client checks (`title`, `default`), cost ~40% less. Descriptions
stay: they tell an agent what a field means.
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
