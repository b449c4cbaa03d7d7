"""Bind parameters for dynamic SQL, numbered as they are added.

Why: statements whose conditions depend on the request used placeholders counted by hand
(`4 + len(f.params)`), which breaks silently when a condition is added or moved. A statement in
hindsight/sql/ numbers its fixed parameters; a `Binder` continues that numbering for the
fragments filled into its `/*slots*/` (db/sql.fill). Values are always bound, never formatted
into the SQL.
"""

from __future__ import annotations

import re
from typing import Any


class Binder:
    """`Binder(a, b)` holds $1 and $2 (a statement's fixed parameters); each call binds the next."""

    def __init__(self, *values: Any):
        self.values: list[Any] = list(values)

    def __call__(self, value: Any, cast: str | None = None) -> str:
        """Bind `value`; returns its placeholder (with `::cast` when given)."""
        self.values.append(value)
        return f"${len(self.values)}::{cast}" if cast else f"${len(self.values)}"


_MARK = re.compile("\x00(\\d+)\x00")


class Fragment:
    """SQL built once whose values are bound later, into each statement that uses it: a recall's
    filters go into every arm and the details statement, each with its own numbering. Binds like a
    Binder, leaving a mark (NUL-delimited, which no SQL we build contains) that `into` turns into
    the statement's next placeholder."""

    def __init__(self) -> None:
        self.sql = ""
        self._values: list[tuple[Any, str | None]] = []

    def __call__(self, value: Any, cast: str | None = None) -> str:
        self._values.append((value, cast))
        return f"\x00{len(self._values) - 1}\x00"

    def into(self, p: Binder) -> str:
        """This fragment's SQL, its values bound in `p`."""
        return _MARK.sub(lambda m: p(*self._values[int(m.group(1))]), self.sql)

    @property
    def binds(self) -> bool:
        """Whether the fragment binds any value (a condition of the caller's own, where the rest is
        fixed text)."""
        return bool(self._values)
