"""One rule for what a client may send, checked once, at the edge.

Why: a NUL character, an unpaired surrogate or a date PostgreSQL cannot hold would otherwise pass
validation and fail deep inside a request (asyncpg refuses to encode a lone surrogate;
PostgreSQL text cannot hold NUL; `0001-01-01T00:00:00+14:00` overflows when turned into UTC), a
500 or a reset connection. None of them ever carries meaning, so they are refused, with the
argument named, before anything runs.

Every request model derives from `Strict`: its validator walks each field's value (strings in
lists, dict keys and values, to any depth) after the field's own validation, so a nested model
names its own fields (`items.3.content`) and a field's type rules come first (a string where a
list is expected stays a type error: nothing is coerced).
"""

from __future__ import annotations

import math
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ValidationInfo, field_validator

# What PostgreSQL's timestamptz and Python's datetime both hold, with a day's slack either way
# so that a window around an instant ("that day") still fits.
EARLIEST = datetime(1, 1, 2, tzinfo=UTC)
# Free JSON (metadata, a bank's disposition) may nest this deep: far beyond any real use, and
# well within what the answers can serialise (pydantic stops at 255 levels, which made one
# memory with deeper metadata break every listing and recall of its bank).
MAX_DEPTH = 32
LATEST = datetime(9999, 12, 30, tzinfo=UTC)


def text_problem(value: str) -> str | None:
    """What makes `value` unstorable text, or None."""
    if "\x00" in value:
        return "contains a NUL character (\\u0000), which text cannot hold"
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        return "contains an unpaired surrogate (\\ud800-\\udfff), which is not valid Unicode"
    return None


def instant_problem(value: datetime) -> str | None:
    """What makes `value` a time we cannot store or compute with, or None."""
    try:
        utc = value.astimezone(UTC) if value.tzinfo is not None else value.replace(tzinfo=UTC)
    except OverflowError:
        utc = None
    if utc is None or not EARLIEST <= utc <= LATEST:
        return "must be between 0001-01-02 and 9999-12-30 (UTC)"
    return None


def problem(value: Any, where: str = "", depth: int = 0) -> str | None:
    """The first unstorable string, number or time in `value`, with where it is (`[2]`, `.key`)."""
    found: str | None = None
    if depth > MAX_DEPTH:
        found = f"is nested deeper than {MAX_DEPTH} levels"
    elif isinstance(value, str):
        found = text_problem(value)
    elif isinstance(value, float) and not math.isfinite(value):
        found = "is not a finite number (NaN and Infinity are not JSON)"
    elif isinstance(value, datetime):
        found = instant_problem(value)
    elif isinstance(value, (list, tuple, set, frozenset)):
        for i, v in enumerate(value):
            if p := problem(v, f"{where}[{i}]", depth + 1):
                return p
    elif isinstance(value, dict):
        for k, v in value.items():
            if isinstance(k, str) and (p := text_problem(k)):
                return f"{where} key {k!r} {p}".strip()
            if p := problem(v, f"{where}.{k}", depth + 1):
                return p
    if found is None:
        return None
    return f"{where.lstrip('.')} {found}".strip()


class Strict(BaseModel):
    """The base of every model built from a client's input."""

    @field_validator("*", mode="after")
    @classmethod
    def _storable(cls, value: Any, info: ValidationInfo) -> Any:
        if isinstance(value, BaseModel):  # a nested request model checked its own fields
            return value
        if p := problem(value):
            raise ValueError(p)
        return value
