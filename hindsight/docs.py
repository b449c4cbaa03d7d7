"""The documentation's reference tables, generated from the code so they cannot drift.

`hindsight docs` rewrites the text between `<!-- generated:NAME -->` and
`<!-- /generated:NAME -->` markers in README.md and docs/*.md; `--check` (and tests/e2e/test_docs.py,
run by CI) fails when a file differs from what the code says. Tables: `settings` (every
HINDSIGHT_API_* variable, from config.Settings, in the README), `tools` (every MCP tool, from
mcp.catalog.TOOLS: its surfaces, arguments with their defaults and limits, annotations and
summary, in docs/mcp.md), `hindsight_tools` (each of Hindsight's MCP tool names and what serves
it, in docs/mcp.md), `hindsight_api` (each operation of Hindsight's API and the route that
serves it, from api/compat/reference.py and the REST face's routes, in docs/clients.md), and
`citus` and `citus_triggers` (how the schema lies on a Citus cluster, from db.distribution, in
docs/scaling.md).
"""

from __future__ import annotations

import re
import types
import typing
from pathlib import Path
from typing import Any

from pydantic.fields import FieldInfo

from hindsight.api.compat.reference import NOT_SERVED, OPERATIONS
from hindsight.api.rest import build_rest
from hindsight.config import env_table, load_settings
from hindsight.db.distribution import citus_statements, triggers_table
from hindsight.engine.facade import Engine
from hindsight.mcp.catalog import HINDSIGHT_TOOLS, NOT_SERVED_TOOLS, TOOLS

_MARKERS = re.compile(r"(<!-- generated:(\w+) -->\n)(.*?)(<!-- /generated:\2 -->)", re.S)


def settings_table() -> str:
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    rows += [f"| `{var}` | `{default}` | {desc} |" for var, default, desc in env_table()]
    return "\n".join(rows) + "\n"


def _type(annotation: Any) -> str:
    """A short, readable form of a parameter's type."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Annotated:
        return _type(args[0])
    if origin is typing.Literal:
        return "\\|".join(f'"{a}"' for a in args)
    if origin in (typing.Union, types.UnionType):
        kept = [a for a in args if a is not type(None)]
        return " \\| ".join(_type(a) for a in kept)
    if origin in (list, dict):
        return f"{origin.__name__}[{', '.join(_type(a) for a in args)}]" if args else origin.__name__
    if annotation is Any:
        return "any"
    return getattr(annotation, "__name__", str(annotation))


def _limits(info: FieldInfo) -> str:
    """A field's range (ge/le) or length (min/max), from its constraints."""
    lo = hi = None
    for m in info.metadata:
        lo = getattr(m, "ge", getattr(m, "min_length", lo))
        hi = getattr(m, "le", getattr(m, "max_length", hi))
    return f" ({lo}-{hi})" if lo is not None and hi is not None else ""


def _argument(name: str, info: FieldInfo) -> str:
    text = f"`{name}`: {_type(info.annotation)}{_limits(info)}"
    if info.is_required():
        return text
    default = info.get_default(call_default_factory=True)
    if default is None:
        return text + " (optional)"
    return f"{text} = `{default!r}`" if not isinstance(default, str) else f'{text} = `"{default}"`'


def _arguments(model: Any) -> str:
    """A request model's fields as the MCP arguments they become: required ones first."""
    if model is None:
        return "none"
    fields = sorted(model.model_fields.items(), key=lambda kv: not kv[1].is_required())
    return "; ".join(_argument(info.alias or name, info) for name, info in fields)


def _returns(model: Any) -> str:
    fields = getattr(model, "model_fields", None)
    return "`{" + ", ".join(fields) + "}`" if fields else ""


def _annotations(td) -> str:
    hints = [
        h
        for h, on in (("read-only", td.read_only), ("destructive", td.destructive), ("idempotent", td.idempotent))
        if on
    ]
    return ", ".join(hints) or "write"


def tools_table() -> str:

    rows = [
        "| Tool | Surfaces | Arguments | Returns | Annotations | What it does |",
        "|---|---|---|---|---|---|",
    ]
    for td in TOOLS:
        summary = td.description.split("\n\n", 1)[0].replace("\n", " ")
        surface = "both" if td.scope == "bank" else "multi-bank"
        rows.append(
            f"| `{td.name}` | {surface} | {_arguments(td.request)} | {_returns(td.response)} | {_annotations(td)} | {summary} |"
        )
    return "\n".join(rows) + "\n"


def hindsight_tools_table() -> str:
    """Hindsight's MCP tool names, each with the tool serving it here or why none does."""
    ours = {td.name: td for td in TOOLS}
    rows = ["| Hindsight's tool | Here |", "|---|---|"]
    for name in HINDSIGHT_TOOLS:
        td = ours.get(name)
        if td is None:
            rows.append(f"| `{name}` | {NOT_SERVED_TOOLS.get(name, 'not served')} |")
        else:
            surface = "both surfaces" if td.scope == "bank" else "multi-bank"
            rows.append(f"| `{name}` | `{name}` ({surface}) |")
    return "\n".join(rows) + "\n"


def served_operations() -> dict[tuple[str, str], str]:
    """The REST face's operations, (method, path with its parameters unnamed) -> summary."""
    spec = build_rest(Engine(load_settings({}))).openapi()
    return {
        (method.upper(), unnamed(path)): op.get("summary") or ""
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
    }


def unnamed(path: str) -> str:
    """`/banks/{bank_id}/x/{key:path}` as `/banks/{}/x/{}`: a path of the reference and ours compare."""
    return re.sub(r"\{[^}]+\}", "{}", path)


def hindsight_api_table() -> str:
    """Each operation of Hindsight's API: what serves it here, or why nothing does."""
    served = served_operations()
    rows = ["| Operation | Method and path | Here |", "|---|---|---|"]
    for method, path, op in OPERATIONS:
        summary = served.get((method, unnamed(path)))
        here = summary if summary is not None else f"**not served**: {NOT_SERVED.get(op, 'not served')}"
        cell = here.replace("|", "\\|")
        rows.append(f"| `{op}` | `{method} {path}` | {cell} |")
    return "\n".join(rows) + "\n"


TABLES = {
    "settings": settings_table,
    "tools": tools_table,
    "hindsight_tools": hindsight_tools_table,
    "hindsight_api": hindsight_api_table,
    "citus": citus_statements,
    "citus_triggers": triggers_table,
}


def update(text: str) -> str:
    """`text` with every generated table as the code has it now."""

    def fill(m: re.Match) -> str:
        make = TABLES.get(m.group(2))
        if make is None:
            raise ValueError(f"unknown generated table {m.group(2)!r}")
        return m.group(1) + make() + m.group(4)

    return _MARKERS.sub(fill, text)


def tables_in(text: str) -> set[str]:
    """The generated tables a file holds."""
    return {m.group(2) for m in _MARKERS.finditer(text)}


def documentation(root: Path) -> list[Path]:
    """The files that may hold generated tables: the README and the user documentation."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]
