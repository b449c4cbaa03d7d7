"""The README's tables of settings and MCP tools say what the code says (hindsight/docs.py)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from hindsight.docs import update

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_tables_match_the_code():
    text = README.read_text()
    assert "<!-- generated:settings -->" in text and "<!-- generated:tools -->" in text
    assert update(text) == text, "README.md is out of date with the code: run `hindsight docs README.md`"


def test_docs_check_fails_on_a_drifted_table(tmp_path):
    stale = tmp_path / "README.md"
    stale.write_text(README.read_text().replace("| `recall` | both |", "| `recall` | multi-bank |"))
    run = [sys.executable, "-m", "hindsight.cli.main", "docs"]
    check = subprocess.run([*run, "--check", str(stale)], capture_output=True, text=True)
    assert check.returncode == 1 and "out of date" in check.stderr
    assert subprocess.run([*run, str(stale)], capture_output=True, text=True).returncode == 0
    assert stale.read_text() == README.read_text()
