"""Turning untrusted input into engine models with errors that name the offending argument;
shared by every face so REST and MCP word their errors the same way."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ValidationError

from .errors import InvalidArgument
from .models import RetainItem


def describe_validation(exc: ValidationError, prefix: str = "") -> str:
    parts = []
    for err in exc.errors():
        loc = prefix + ".".join(str(p) for p in err["loc"]) if err["loc"] else prefix.rstrip(".") or "arguments"
        parts.append(f"{loc}: {err['msg'].removeprefix('Value error, ')}")
    return "invalid arguments: " + "; ".join(parts)


def validated(model: type[BaseModel], prefix: str = "", **values: Any):
    """Build an engine model from arguments (None means not given), turning validation failures
    into an error that names the argument."""
    try:
        return model(**{k: v for k, v in values.items() if v is not None})
    except ValidationError as exc:
        raise InvalidArgument(describe_validation(exc, prefix)) from None


def parse_retain_items(raw: Any, batch: bool = True) -> list[RetainItem]:
    """A list of item objects (or one, with batch=False) into RetainItems."""
    if not isinstance(raw, list):
        raise InvalidArgument("items: must be a list of objects", "items")
    items = []
    for i, it in enumerate(raw):
        prefix = f"items.{i}." if batch else ""
        if not isinstance(it, dict):
            where = f"items.{i}" if batch else "body"
            raise InvalidArgument(f"{where}: must be an object with at least 'content'", "items")
        try:
            items.append(RetainItem(**it))
        except ValidationError as exc:
            raise InvalidArgument(describe_validation(exc, prefix)) from None
    return items
