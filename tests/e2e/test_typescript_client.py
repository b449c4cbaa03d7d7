"""Hindsight's TypeScript client from npm (@vectorize-io/hindsight-client), unchanged, driven by
Node against our server: tests/e2e/node/hindsight_client.cjs does the calls and checks."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

MODULES = Path(
    os.environ.get("HINDSIGHT_NODE_MODULES") or Path(__file__).resolve().parents[2] / ".cache/node/node_modules"
)
SCRIPT = Path(__file__).resolve().parent / "node" / "hindsight_client.cjs"
pytestmark = pytest.mark.skipif(
    not shutil.which("node") or not (MODULES / "@vectorize-io/hindsight-client/package.json").exists(),
    reason="node or the npm package @vectorize-io/hindsight-client is not installed (.ci/run installs it)",
)


def test_typescript_client_round_trip(server, bank):
    env = {**os.environ, "NODE_PATH": str(MODULES), "HINDSIGHT_URL": server.url, "BANK": f"ts::{bank}"}
    proc = subprocess.run(["node", str(SCRIPT)], env=env, capture_output=True, text=True, timeout=120)
    lines = [ln for ln in proc.stdout.splitlines() if ln.startswith("{")]
    assert proc.returncode == 0 and lines, proc.stdout + proc.stderr
    result = json.loads(lines[-1])
    assert result["ok"] and result["api_version"], result
