"""A small, safe filter language for recall and document search, compiled to parameterised SQL.

Clients write expressions such as `source_type = "pdf" and tags contains "manual"` or
`metadata.speaker = "Melanie" and (mentioned_at >= "2023-05-01" or type = "world")`. We parse them
ourselves (never pass client text to SQL): every field name is looked up in a fixed table of SQL
expressions, every value becomes a bind parameter with an explicit cast, and the parser limits
length, nesting and the number of comparisons. Grammar:

    expr       := term ("or" term)*
    term       := factor ("and" factor)*
    factor     := "not" factor | "(" expr ")" | comparison
    comparison := field op value
    op         := = | == | != | <> | < | <= | > | >= | contains | like | in
    value      := "string" | 'string' | number | true | false | [value, ...]   (a list only after `in`)

`contains` tests membership for list fields (tags), a substring for text; `like` is SQL LIKE
(`%` any run, `_` one character); `in` takes a list. Keywords are case-insensitive.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any, NoReturn

from hindsight.engine.errors import InvalidArgument
from hindsight.engine.rules.text import instant_problem
from hindsight.language.entities import canonical

INT_MIN, INT_MAX = -(2**31), 2**31 - 1
MAX_CHARS = 2_000
MAX_COMPARISONS = 50
MAX_DEPTH = 20
MAX_LIST = 100

_TOKEN = re.compile(
    r"""
    \s*(?:
      (?P<str>"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*')
    | (?P<num>-?\d+(?:\.\d+)?)(?![\w.])
    | (?P<op>==|!=|<>|<=|>=|=|<|>)
    | (?P<punct>[()\[\],])
    | (?P<word>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z0-9_\-]+)*)
    )""",
    re.VERBOSE,
)
KEYWORDS = {"and", "or", "not", "contains", "like", "in", "true", "false"}


@dataclass(frozen=True)
class Field:
    """How one filterable field maps to SQL. kind: text, list, time, int, meta (a JSON key),
    entity (an entity name linked to a memory), page (a chunk's page range)."""

    sql: str
    kind: str


MEMORY_FIELDS = {
    "type": Field("m.kind", "text"),
    "context": Field("m.context", "text"),
    "text": Field("m.text", "text"),
    "document_id": Field("m.document_id", "text"),
    "tags": Field("m.tags", "list"),
    "entities": Field("m.id", "entity"),
    "created_at": Field("m.created_at", "time"),
    "mentioned_at": Field("m.mentioned_at", "time"),
    "occurred_start": Field("m.occurred_start", "time"),
    "occurred_end": Field("m.occurred_end", "time"),
    "metadata": Field("m.metadata", "meta"),
}

CHUNK_FIELDS = {
    "source_type": Field("d.source_type", "text"),
    "source_name": Field("d.source_name", "text"),
    "file_path": Field("d.source_name", "text"),
    "source_url": Field("d.source_url", "text"),
    "document_id": Field("c.document_id::text", "text"),
    "headline": Field("c.headline", "text"),
    "text": Field("c.text", "text"),
    "content": Field("c.text", "text"),
    "tags": Field("d.tags", "list"),
    "page": Field("c", "page"),
    "chunk_index": Field("c.position", "int"),
    "created_at": Field("d.created_at", "time"),
    "updated_at": Field("d.updated_at", "time"),
}

_SQL_OPS = {"=": "=", "==": "=", "!=": "<>", "<>": "<>", "<": "<", "<=": "<=", ">": ">", ">=": ">="}


class _Parser:
    def __init__(self, text: str, fields: dict[str, Field], bind: Callable[..., str]):
        self.text = text
        self.fields = fields
        self.tokens = self._tokenize(text)
        self.i = 0
        self.bind_value = bind
        self.comparisons = 0

    # ---- lexing ---------------------------------------------------------------------
    def _tokenize(self, text: str) -> list[tuple[str, Any, int]]:
        out, pos = [], 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if not m or m.end() == pos:
                self.fail(
                    f"unexpected character {text[pos:].lstrip()[:1]!r}",
                    pos + len(text[pos:]) - len(text[pos:].lstrip()),
                )
            kind = m.lastgroup or ""
            raw = m.group(kind)
            start = m.start(kind)
            if kind == "str":
                value: Any = re.sub(r"\\(.)", r"\1", raw[1:-1])
            elif kind == "num":
                value = float(raw) if "." in raw else int(raw)
            elif kind == "word" and raw.lower() in KEYWORDS:
                kind, value = "kw", raw.lower()
            else:
                value = raw
            out.append((kind, value, start))
            pos = m.end()
        return out

    def fail(self, msg: str, pos: int | None = None) -> NoReturn:
        where = f" at position {pos}" if pos is not None else ""
        raise InvalidArgument(f"filter: {msg}{where}", "filter")

    # ---- parsing --------------------------------------------------------------------
    def peek(self):
        return self.tokens[self.i] if self.i < len(self.tokens) else ("end", None, len(self.text))

    def take(self):
        tok = self.peek()
        self.i += 1
        return tok

    def is_kw(self, word: str) -> bool:
        k, v, _ = self.peek()
        return k == "kw" and v == word

    def parse(self) -> str:
        sql = self.expr(0)
        kind, value, pos = self.peek()
        if kind != "end":
            self.fail(f"unexpected {value!r}; expected `and`, `or` or the end", pos)
        return sql

    def expr(self, depth: int) -> str:
        if depth > MAX_DEPTH:
            self.fail(f"nested deeper than {MAX_DEPTH} levels")
        return self.joined("or", self.term, depth)

    def term(self, depth: int) -> str:
        return self.joined("and", self.factor, depth)

    def joined(self, word: str, operand, depth: int) -> str:
        """operand (word operand)*, as one parenthesised SQL condition."""
        parts = [operand(depth)]
        while self.is_kw(word):
            self.take()
            parts.append(operand(depth))
        return parts[0] if len(parts) == 1 else "(" + f" {word.upper()} ".join(parts) + ")"

    def factor(self, depth: int) -> str:
        if self.is_kw("not"):
            self.take()
            return f"(NOT coalesce({self.factor(depth + 1)}, false))"
        kind, value, pos = self.peek()
        if kind == "punct" and value == "(":
            self.take()
            inner = self.expr(depth + 1)
            k, v, p = self.take()
            if (k, v) != ("punct", ")"):
                self.fail("missing `)`", p)
            return inner
        return self.comparison()

    def comparison(self) -> str:
        self.comparisons += 1
        if self.comparisons > MAX_COMPARISONS:
            self.fail(f"more than {MAX_COMPARISONS} comparisons")
        kind, name, pos = self.take()
        if kind != "word":
            self.fail(f"expected a field name, got {name if name is not None else 'the end'!r}", pos)
        root, _, key = name.partition(".")
        f = self.fields.get(root)
        if f is None or (key and f.kind != "meta") or (f.kind == "meta" and not key):
            known = ", ".join(sorted(k + (".<key>" if v.kind == "meta" else "") for k, v in self.fields.items()))
            self.fail(f"unknown field {name!r} (fields: {known})", pos)
        ok, op, opos = self.take()
        if ok == "op":
            op = _SQL_OPS[op]
        elif ok == "kw" and op in ("contains", "like", "in"):
            pass
        else:
            self.fail(f"expected a comparison after {name!r} (=, !=, <, <=, >, >=, contains, like, in)", opos)
        value = self.value(allow_list=(op == "in"))
        return self.compile(f, key, name, op, value, opos)

    def value(self, allow_list: bool):
        kind, value, pos = self.take()
        if kind in ("str", "num"):
            return value
        if kind == "kw" and value in ("true", "false"):
            return value == "true"
        if kind == "punct" and value == "[" and allow_list:
            items: list[Any] = []
            if self.peek()[:2] == ("punct", "]"):
                self.take()
                return items
            while True:
                items.append(self.value(allow_list=False))
                k, v, p = self.take()
                if (k, v) == ("punct", "]"):
                    break
                if (k, v) != ("punct", ","):
                    self.fail("expected `,` or `]` in the list", p)
            if len(items) > MAX_LIST:
                self.fail(f"a list holds at most {MAX_LIST} values", pos)
            return items
        expected = 'a list such as ["a", "b"]' if allow_list else "a quoted string, a number, true or false"
        self.fail(f"expected {expected}", pos)

    # ---- compiling ------------------------------------------------------------------
    def bind(self, value, cast: str) -> str:
        return self.bind_value(value, cast)

    def compile(self, f: Field, key: str, name: str, op: str, value, pos: int) -> str:
        values = value if isinstance(value, list) else [value]
        if f.kind == "text":
            texts = [self.need(v, str, name, pos) for v in values]
            if op == "in":
                return f"({f.sql} = ANY({self.bind(texts, 'text[]')}))"
            if op == "contains":
                return f"(strpos({f.sql}, {self.bind(texts[0], 'text')}) > 0)"
            if op == "like":
                return f"({f.sql} LIKE {self.bind(texts[0], 'text')})"
            return f"({f.sql} {op} {self.bind(texts[0], 'text')})"
        if f.kind == "list":
            texts = [self.need(v, str, name, pos) for v in values]
            if op == "contains":
                return f"({f.sql} @> ARRAY[{self.bind(texts[0], 'text')}])"
            if op == "in":
                return f"({f.sql} && {self.bind(texts, 'text[]')})"
            self.fail(f"{name} is a list: use `contains` (one value) or `in` (any of a list)", pos)
        if f.kind == "entity":
            if op not in ("contains", "in"):
                self.fail(f"{name}: use `contains` or `in`", pos)
            names = [canonical(self.need(v, str, name, pos)) for v in values]
            return (
                "EXISTS (SELECT 1 FROM memory_entities fe JOIN entities fx ON fx.id = fe.entity_id"
                f" WHERE fe.memory_id = {f.sql} AND fx.bank_id = m.bank_id"
                f" AND fx.canonical = ANY({self.bind(names, 'text[]')}))"
            )
        if f.kind == "time":
            if op in ("contains", "like"):
                self.fail(f"{name} is a time: compare it with =, <, <=, >, >= or in", pos)
            times = [self.time(v, name, pos) for v in values]
            if op == "in":
                return f"({f.sql} = ANY({self.bind(times, 'timestamptz[]')}))"
            return f"({f.sql} {op} {self.bind(times[0], 'timestamptz')})"
        if f.kind == "int":
            nums = [self.need(v, int, name, pos) for v in values]
            if op in ("contains", "like"):
                self.fail(f"{name} is a number: compare it with =, <, <=, >, >= or in", pos)
            if op == "in":
                return f"({f.sql} = ANY({self.bind(nums, 'int[]')}))"
            return f"({f.sql} {op} {self.bind(nums[0], 'int')})"
        if f.kind == "page":
            nums = [self.need(v, int, name, pos) for v in values]
            lo, hi = f"{f.sql}.page_start", f"{f.sql}.page_end"
            if op == "=":
                p = self.bind(nums[0], "int")
                return f"({lo} <= {p} AND {hi} >= {p})"
            if op == "in":
                p = self.bind(nums, "int[]")
                return f"EXISTS (SELECT 1 FROM unnest({p}) pg(n) WHERE {lo} <= pg.n AND {hi} >= pg.n)"
            if op in ("<", "<="):
                return f"({lo} {op} {self.bind(nums[0], 'int')})"
            if op in (">", ">="):
                return f"({hi} {op} {self.bind(nums[0], 'int')})"
            if op == "<>":
                p = self.bind(nums[0], "int")
                return f"NOT ({lo} <= {p} AND {hi} >= {p})"
            self.fail(f"{name} is a page number: compare it with =, !=, <, <=, >, >= or in", pos)
        # meta: a key of the JSON metadata; numbers compare as numbers, the rest as text.
        k = self.bind(key, "text")
        if op == "contains":
            v = self.need(values[0], str, name, pos)
            p = self.bind(v, "text")
            return (
                f"(CASE jsonb_typeof({f.sql} -> {k}) WHEN 'array' THEN {f.sql} -> {k} @> jsonb_build_array({p})"
                f" WHEN 'string' THEN strpos({f.sql} ->> {k}, {p}) > 0 ELSE false END)"
            )
        if op == "like":
            return f"({f.sql} ->> {k} LIKE {self.bind(self.need(values[0], str, name, pos), 'text')})"
        if all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values) and values:
            num = f"(CASE WHEN jsonb_typeof({f.sql} -> {k}) = 'number' THEN ({f.sql} ->> {k})::numeric END)"
            if op == "in":
                return f"({num} = ANY({self.bind([self.number(v, name, pos) for v in values], 'numeric[]')}))"
            return f"({num} {op} {self.bind(self.number(values[0], name, pos), 'numeric')})"
        texts = [str(v).lower() if isinstance(v, bool) else str(v) for v in values]
        if op == "in":
            return f"({f.sql} ->> {k} = ANY({self.bind(texts, 'text[]')}))"
        return f"({f.sql} ->> {k} {op} {self.bind(texts[0], 'text')})"

    def need(self, v, typ, name: str, pos: int):
        if typ is int and isinstance(v, float) and v.is_integer():
            v = int(v)
        if not isinstance(v, typ) or isinstance(v, bool):
            what = "a quoted string" if typ is str else "a whole number"
            self.fail(f"{name} takes {what}, got {v!r}", pos)
        if typ is int and not INT_MIN <= v <= INT_MAX:  # the columns compared are 32-bit integers
            self.fail(f"{name}: {v} is out of range ({INT_MIN} to {INT_MAX})", pos)
        return v

    def number(self, v, name: str, pos: int) -> float:
        """A number for a metadata comparison, within what a float (and PostgreSQL's numeric
        parameter) holds."""
        try:
            out = float(v)
        except OverflowError:
            out = math.inf
        if not math.isfinite(out):
            self.fail(f"{name}: {v!r} is too large a number", pos)
        return out

    def time(self, v, name: str, pos: int) -> datetime:
        if not isinstance(v, str):
            self.fail(f'{name} takes an ISO 8601 date in quotes, e.g. "2024-05-01"', pos)
        try:
            t = datetime.fromisoformat(v.replace("Z", "+00:00"))
        except ValueError:
            self.fail(f"{name}: {v!r} is not an ISO 8601 date or time", pos)
        if p := instant_problem(t):
            self.fail(f"{name}: {v!r} {p}", pos)
        return t if t.tzinfo else t.replace(tzinfo=UTC)


def compile_filter(text: str | None, fields: dict[str, Field], bind: Callable[..., str]) -> str | None:
    """Parse `text` into a SQL condition, its values bound with `bind(value, cast)` (a Binder or
    a Fragment); None when there is no filter."""
    if text is None or not str(text).strip():
        return None
    if not isinstance(text, str):
        raise InvalidArgument("filter: must be a string expression", "filter")
    if len(text) > MAX_CHARS:
        raise InvalidArgument(f"filter: longer than {MAX_CHARS} characters", "filter")
    return _Parser(text, fields, bind).parse()
