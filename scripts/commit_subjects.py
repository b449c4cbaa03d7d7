"""Commit subjects of at most 72 characters (CONTRIBUTING.md, "Commits and changes").

    python scripts/commit_subjects.py               # every commit since the rule began (scripts/test.sh)
    python scripts/commit_subjects.py --message F   # one message file (the pre-commit commit-msg hook)

Exits 1 naming each subject that is too long. Commits made before the rule began are not held
to it; a clone without them (shallow) checks what it has.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

LIMIT = 72
# The last commit not held to the rule (the one before the check first ran): those after it are.
SINCE = "ab26581"


def too_long(subjects: list[str]) -> list[str]:
    return [s for s in subjects if len(s) > LIMIT]


def since(rev: str) -> list[str]:
    known = subprocess.run(["git", "cat-file", "-e", f"{rev}^{{commit}}"], capture_output=True).returncode == 0
    spec = [f"{rev}..HEAD"] if known else ["HEAD"]
    out = subprocess.run(["git", "log", "--format=%s", *spec], capture_output=True, text=True, check=True).stdout
    return out.splitlines()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--message", help="a commit message file (the commit-msg hook's argument)")
    args = ap.parse_args()
    if args.message:
        with open(args.message, encoding="utf-8") as f:
            lines = [line for line in f.read().splitlines() if not line.startswith("#")]
        subjects = lines[:1]
    else:
        subjects = since(SINCE)
    bad = too_long(subjects)
    for s in bad:
        print(f"commit subject longer than {LIMIT} characters ({len(s)}): {s}", file=sys.stderr)
    if bad:
        print("say the rest in the body, after a blank line (CONTRIBUTING.md)", file=sys.stderr)
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
