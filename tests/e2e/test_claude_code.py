"""The real Claude Code client connects to both MCP URLs, with and without an API key."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

from conftest import ADMIN_KEY

CLAUDE = os.environ.get("HINDSIGHT_CLAUDE_BIN") or shutil.which("claude")
CLAUDE = str(Path(CLAUDE).resolve()) if CLAUDE else None
pytestmark = pytest.mark.skipif(
    not CLAUDE or not Path(CLAUDE).exists(), reason="Claude Code binary not installed (.ci/run installs it)"
)


def claude(home: Path, *args: str) -> str:
    env = {"HOME": str(home), "PATH": os.environ.get("PATH", "")}
    p = subprocess.run([CLAUDE, *args], env=env, capture_output=True, text=True, timeout=180, cwd=home)
    return p.stdout + p.stderr


def test_claude_mcp_list_connects(server, auth_server, bank, tmp_path):
    claude(tmp_path, "mcp", "add", "--transport", "http", "per-bank", f"{server.url}/mcp/{bank}/")
    claude(tmp_path, "mcp", "add", "--transport", "http", "multi", f"{server.url}/mcp", "--header", "X-Bank-Id: bob")
    claude(
        tmp_path,
        "mcp",
        "add",
        "--transport",
        "http",
        "keyed",
        f"{auth_server.url}/mcp/{bank}/",
        "--header",
        f"Authorization: Bearer {ADMIN_KEY}",
    )
    claude(
        tmp_path,
        "mcp",
        "add",
        "--transport",
        "http",
        "keyed-multi",
        f"{auth_server.url}/mcp",
        "--header",
        f"Authorization: Bearer {ADMIN_KEY}",
        "--header",
        "X-Bank-Id: bob",
    )
    claude(tmp_path, "mcp", "add", "--transport", "http", "nokey", f"{auth_server.url}/mcp/{bank}/")
    out = claude(tmp_path, "mcp", "list")
    lines = {line.split(":")[0]: line for line in out.splitlines() if ": http" in line}
    for name in ("per-bank", "multi", "keyed", "keyed-multi"):
        assert "Connected" in lines[name] and "✘" not in lines[name], out
    assert "Connected" not in lines["nokey"].replace("Failed to connect", ""), out
