"""The structure of the code holds: the layer contracts in pyproject.toml (import-linter: the
surfaces over the engine over its foundations; the server never imports the test harness), and
no import cycle anywhere among our modules. Type-only imports are left out (they are not imports
at run time); there is no lazy import left to hide a cycle behind."""

from __future__ import annotations

import subprocess
import sys
import tomllib
from pathlib import Path

import grimp

ROOT = Path(__file__).resolve().parents[2]


def test_layer_contracts_are_kept():
    lint = Path(sys.executable).parent / "lint-imports"
    r = subprocess.run([str(lint), "--no-cache"], cwd=ROOT, capture_output=True, text=True)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-2000:]
    contracts = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]["contracts"]
    assert f"{len(contracts)} kept, 0 broken" in r.stdout


def test_no_import_cycle():
    graph = grimp.build_graph("hindsight", exclude_type_checking_imports=True)
    cycles = sorted(
        {
            tuple(sorted((a, b)))
            for a in graph.modules
            for b in graph.find_modules_directly_imported_by(a)
            if graph.chain_exists(importer=b, imported=a)
        }
    )
    assert not cycles, cycles


def test_the_drawing_in_docs_architecture_is_current():
    """docs/architecture.md draws the rooms and their imports; scripts/import_map.py draws them
    from the code. They must be the same drawing."""
    drawn = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "import_map.py")], capture_output=True, text=True, check=True
    ).stdout.strip()
    doc = (ROOT / "docs" / "architecture.md").read_text()
    documented = doc.split("<!-- import-map -->")[1].split("<!-- /import-map -->")[0]
    documented = documented.strip().removeprefix("```mermaid").removesuffix("```").strip()
    assert documented == drawn, "run scripts/import_map.py and update docs/architecture.md"
