"""`hindsight directives`: the command line over a running server, as a person would type it."""

from __future__ import annotations

import json
import subprocess
import sys


def test_directives_from_the_command_line(server, bank):
    def cli(*args: str) -> str:
        done = subprocess.run(
            [sys.executable, "-m", "hindsight.cli.main", "directives", "--url", server.url, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        return done.stdout

    made = json.loads(cli("create", bank, "Language", "Answer in French.", "--priority", "5", "--tag", "fr"))
    assert made["priority"] == 5 and made["tags"] == ["fr"] and made["is_active"] is True
    listed = cli("list", bank)
    assert made["directive_id"] in listed and "Answer in French." in listed and "[fr]" in listed
    off = json.loads(cli("update", bank, made["directive_id"], "--inactive"))
    assert off["is_active"] is False and off["content"] == "Answer in French."
    assert cli("list", bank).strip() == ""  # inactive ones are left out
    assert "(inactive)" in cli("list", bank, "--all")
    assert json.loads(cli("delete", bank, made["directive_id"]))["deleted"] is True
    bad = subprocess.run(
        [sys.executable, "-m", "hindsight.cli.main", "directives", "--url", server.url, "get", bank, "nope"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert bad.returncode != 0 and "directive_id" in bad.stderr
