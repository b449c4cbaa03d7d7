"""Turning untrusted input into engine request models, with one wording of what is wrong.

Every face (MCP, REST, the CLI, Hindsight's /v1/default API) reports invalid input through
`describe`: "<argument>: <what is wrong>", joined with "; ", the argument named as the client
sent it (dotted for nested items: `items.3.content`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from hindsight.engine.errors import InvalidArgument
from hindsight.engine.rules.text import text_problem

M = TypeVar("M", bound=BaseModel)
# pydantic's own words for a string with a lone surrogate ("unable to parse raw data as a unicode
# string") say nothing a client can act on; ours are engine/rules/text.py's.
UNICODE = str(text_problem("\ud800"))


def describe(errors: Iterable[Any], prefix: str = "", http: bool = False) -> tuple[str, str | None]:
    """The message for validation errors, and the first argument named. `http`: FastAPI's, whose
    locations start with where the argument was (body, query, path, header), which the client
    knows by the argument's own name."""
    parts, first = [], None
    for err in errors:
        if err.get("type") == "json_invalid":
            parts.append("body: malformed JSON")
            continue
        loc = [str(p) for p in err.get("loc", ())]
        if http and len(loc) > 1:
            loc = loc[1:]
        where = prefix + ".".join(loc) if loc else prefix.rstrip(".") or "body"
        first = first or where.split(".", 1)[0]
        msg = UNICODE if err.get("type") == "string_unicode" else str(err.get("msg", "invalid"))
        parts.append(f"{where}: {msg.removeprefix('Value error, ')}")
    return "; ".join(parts), first


def invalid(exc: ValidationError, prefix: str = "") -> InvalidArgument:
    message, field = describe(exc.errors(), prefix)
    return InvalidArgument(message, field)


def inline_defs(node: Any, defs: dict) -> Any:
    """A JSON schema with `$ref`s to a model's `$defs` replaced by what they name: an MCP tool's
    arguments and an OpenAPI body stand alone, without the model's `$defs` beside them."""
    if isinstance(node, dict):
        ref = node.get("$ref")
        if isinstance(ref, str) and ref.startswith("#/$defs/"):
            return inline_defs(defs[ref.removeprefix("#/$defs/")], defs)
        return {k: inline_defs(v, defs) for k, v in node.items() if k != "$defs"}
    if isinstance(node, list):
        return [inline_defs(v, defs) for v in node]
    return node


def parse(model: type[M], values: dict[str, Any], prefix: str = "") -> M:
    """A request model from arguments (None means not given); failures name the argument."""
    try:
        return model.model_validate({k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        raise invalid(exc, prefix) from None
