"""Commit subjects of at most 72 characters (scripts/commit_subjects.py, run by scripts/test.sh and
the commit-msg hook): the history since the rule began keeps it, and a longer subject is refused
with its length, while the body may be as long as it needs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "commit_subjects.py"


def check(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True)


def test_the_history_since_the_rule_keeps_it():
    assert check().returncode == 0


def test_a_long_subject_is_refused_and_a_long_body_is_not(tmp_path):
    message = tmp_path / "COMMIT_EDITMSG"
    message.write_text("S" * 73 + "\n\nbody\n")
    refused = check("--message", str(message))
    assert refused.returncode == 1 and "(73)" in refused.stderr
    message.write_text("A short subject\n\n" + "b" * 500 + "\n# a comment line git strips\n")
    assert check("--message", str(message)).returncode == 0
