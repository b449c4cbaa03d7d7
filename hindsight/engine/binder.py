"""Bind parameters for dynamic SQL, numbered as they are added.

Why: statements whose conditions depend on the request used placeholders counted by hand
(`4 + len(f.params)`), which breaks silently when a condition is added or moved. Values are
always bound, never formatted into the SQL.
"""

from __future__ import annotations

from typing import Any


class Binder:
    """`Binder(a, b)` holds $1 and $2; `Binder(first=4)` numbers from $4, for a fragment that
    follows a statement's fixed parameters."""

    def __init__(self, *values: Any, first: int = 1):
        self.values: list[Any] = list(values)
        self.first = first

    def __call__(self, value: Any, cast: str | None = None) -> str:
        """Bind `value`; returns its placeholder (with `::cast` when given)."""
        self.values.append(value)
        n = self.first + len(self.values) - 1
        return f"${n}::{cast}" if cast else f"${n}"

    @property
    def next(self) -> int:
        """The number the next bound value will get."""
        return self.first + len(self.values)
