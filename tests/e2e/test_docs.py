"""The documentation's tables of settings and MCP tools say what the code says (hindsight/docs.py),
and the README's quick start works as written."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

from hindsight.docs import documentation, tables_in, update

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"
MCP_DOC = ROOT / "docs" / "mcp.md"


def test_generated_tables_match_the_code():
    found: set[str] = set()
    for f in documentation(ROOT):
        text = f.read_text()
        found |= tables_in(text)
        assert update(text) == text, f"{f.name} is out of date with the code: run `hindsight docs`"
    assert found == {"settings", "tools", "hindsight_tools", "hindsight_api", "citus", "citus_triggers"}
    assert "settings" in tables_in(README.read_text()) and "tools" in tables_in(MCP_DOC.read_text())


def test_docs_check_fails_on_a_drifted_table(tmp_path):
    stale = tmp_path / "mcp.md"
    stale.write_text(MCP_DOC.read_text().replace("| `recall` | both |", "| `recall` | multi-bank |"))
    run = [sys.executable, "-m", "hindsight.cli.main", "docs"]
    check = subprocess.run([*run, "--check", str(stale)], capture_output=True, text=True)
    assert check.returncode == 1 and "out of date" in check.stderr and "mcp.md" in check.stderr
    assert subprocess.run([*run, str(stale)], capture_output=True, text=True).returncode == 0
    assert stale.read_text() == MCP_DOC.read_text()
    # Without paths it checks the README and docs/ of the current folder: this repository's are current.
    assert subprocess.run([*run, "--check"], capture_output=True, text=True, cwd=ROOT).returncode == 0


def test_relative_links_resolve():
    """Every relative link of the README and docs/ names a file that exists."""
    for f in documentation(ROOT):
        for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", f.read_text()):
            if "://" not in target:
                assert (f.parent / target).exists(), f"{f.name} links to missing {target}"


def _block(text: str, lang: str, after: str) -> str:
    start = text.index(after)
    return re.search(rf"```{lang}\n(.*?)```", text[start:], re.S).group(1)


def test_readme_quick_start_runs_as_written(server, bank):
    text = README.read_text()
    curl = _block(text, "bash", "## Five lines").replace("localhost:8888", server.url.split("://", 1)[1])
    curl = curl.replace("/banks/alice/", f"/banks/{bank}/")
    assert shutil.which("curl"), "curl is needed to check the README's curl example"
    out = subprocess.run(["bash", "-ec", curl], capture_output=True, text=True, check=True).stdout
    assert '"memory_ids"' in out and '"results"' in out and "Santa Maria hospital" in out

    python = _block(text, "python", "## Five lines")
    python = python.replace("http://127.0.0.1:8888", server.url).replace('"alice"', f'"{bank}_py"')
    run = subprocess.run([sys.executable, "-c", python], capture_output=True, text=True, check=True)
    assert "Santa Maria hospital" in run.stdout
