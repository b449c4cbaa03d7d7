"""The import structure of the `hindsight` package, room by room, as a Mermaid graph: which rooms
import which (run-time imports only, as the import contracts in pyproject.toml count them).

    .venv/bin/python scripts/import_map.py            # the rooms of the package and of the engine
    .venv/bin/python scripts/import_map.py --depth 2  # top-level packages only
    .venv/bin/python scripts/import_map.py --all      # every arrow, also those a chain implies

A room is a top-level package or module of `hindsight` (api, mcp, engine, db, ...), and, with the
default depth 3, a sub-package or module of `hindsight.engine` (engine.search, engine.memory, ...).
docs/architecture.md shows this graph; tests/unit/test_imports.py checks that it is current.
"""

from __future__ import annotations

import argparse
import sys
from collections import defaultdict
from pathlib import Path

import grimp

# Modules that only tests and benchmarks use: not rooms of the server.
HARNESS = {"hindsight.testing", "hindsight.stub_llm", "hindsight.fuzzing"}


def room(module: str, depth: int) -> str | None:
    parts = module.split(".")
    if ".".join(parts[:2]) in HARNESS or len(parts) < 2:
        return None
    if depth >= 3 and parts[1] == "engine" and len(parts) >= 3:
        return ".".join(parts[1:3])
    return parts[1]


def edges(depth: int = 3) -> dict[str, set[str]]:
    graph = grimp.build_graph("hindsight", exclude_type_checking_imports=True)
    out: dict[str, set[str]] = defaultdict(set)
    for importer in graph.modules:
        a = room(importer, depth)
        if a is None:
            continue
        out.setdefault(a, set())
        for imported in graph.find_modules_directly_imported_by(importer):
            b = room(imported, depth)
            if b is not None and b != a:
                out[a].add(b)
    return out


def reduced(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The arrows no longer chain of arrows implies (a transitive reduction): the graph a reader
    can follow, with the same reach."""

    def reach(start: str, skip: str) -> set[str]:
        seen: set[str] = set()
        todo = [n for n in graph.get(start, ()) if n != skip]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(graph.get(n, ()))
        return seen

    return {a: {b for b in targets if b not in reach(a, b)} for a, targets in graph.items()}


def mermaid(graph: dict[str, set[str]]) -> str:
    ident = {name: name.replace(".", "_") for name in graph}
    lines = ["flowchart TD"]
    for a in sorted(graph):
        for b in sorted(graph[a]):
            lines.append(f"    {ident[a]}[{a}] --> {ident.get(b, b.replace('.', '_'))}[{b}]")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--depth", type=int, default=3, choices=(2, 3))
    ap.add_argument("--all", action="store_true", help="every arrow, not only those no chain implies")
    args = ap.parse_args()
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    graph = edges(args.depth)
    print(mermaid(graph if args.all else reduced(graph)))


if __name__ == "__main__":
    main()
