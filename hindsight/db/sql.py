"""Every SQL statement the server runs, by name, from `hindsight/sql/*.sql` (one file per concept).

Why: statements written inline were spread over some twenty modules, where reviewing what the
server asks of PostgreSQL meant reading all of them. In the files each statement opens with a
header line `-- name --` and a comment saying why it exists (the layout of procrastinate's
queries.sql); its parameters are $1, $2, ... as asyncpg binds them.

A statement whose conditions depend on the request marks where each fragment goes with a SQL
comment, e.g. `/*filter*/`, so the file is valid SQL as it stands. `fill` puts the
fragments in; their values are bound through an `engine.binder.Binder` that continues the
statement's own numbering, so no placeholder is counted by hand and no value is ever formatted
into SQL. Fragments are SQL our code builds (column lists, conditions), never client text.
"""

from __future__ import annotations

import re
from pathlib import Path

FOLDER = Path(__file__).resolve().parent.parent / "sql"
_HEADER = re.compile(r"^-- ([a-z][a-z0-9_]*) --$")
_MARKER = re.compile(r"/\*([a-z_]+)\*/")


def fill(sql: str, **parts: str) -> str:
    """`sql` with each `/*slot*/` replaced by its fragment; every slot must be given (empty to drop it)."""
    slots = set(_MARKER.findall(sql))
    if set(parts) != slots:
        raise KeyError(f"fragments {sorted(slots)} expected, got {sorted(parts)}")
    return _MARKER.sub(lambda m: parts[m.group(1)], sql)


def parse(text: str, source: str = "<sql>") -> dict[str, tuple[str, str]]:
    """The statements of one file by name: (reason, SQL)."""
    out: dict[str, tuple[str, str]] = {}
    name: str | None = None
    reason: list[str] = []
    body: list[str] = []

    def close() -> None:
        if name is None:
            return
        sql = "\n".join(body).strip().rstrip(";").strip()
        if not reason or not sql:
            raise ValueError(f"{source}: statement {name!r} needs a reason and SQL")
        out[name] = (" ".join(reason), sql)

    for line in text.splitlines():
        header = _HEADER.match(line.strip())
        if header:
            close()
            name, reason, body = header.group(1), [], []
            if name in out:
                raise ValueError(f"{source}: statement {name!r} defined twice")
        elif name is not None and not body and line.startswith("--"):
            reason.append(line.removeprefix("--").strip())
        elif name is not None and (body or line.strip()):
            body.append(line)
    close()
    return out


class Queries:
    """All statements by name, as attributes holding the SQL (a plain `str`, as asyncpg wants):
    `Q.operation_get`. `reasons` keeps each statement's comment."""

    def __init__(self, folder: Path = FOLDER):
        self._sql: dict[str, str] = {}
        self.reasons: dict[str, str] = {}
        for path in sorted(folder.glob("*.sql")):
            for name, (reason, sql) in parse(path.read_text(), path.name).items():
                if name in self._sql:
                    raise ValueError(f"{path.name}: statement {name!r} is also defined elsewhere")
                self._sql[name], self.reasons[name] = sql, reason

    def __getattr__(self, name: str) -> str:
        try:
            return self.__dict__["_sql"][name]
        except KeyError:
            raise AttributeError(f"no SQL statement named {name!r} in hindsight/sql/") from None

    def names(self) -> list[str]:
        return sorted(self._sql)


Q = Queries()
