"""The README's two commands stop on a failed install, with pip's own message.

They used to pipe pip through `grep ... || true`, so a failed install went on silently and the
user met a missing command or module later instead of the real error.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def test_a_failed_install_stops_the_script_with_pips_message(tmp_path):
    project = tmp_path / "project"
    shutil.copytree(ROOT / "scripts", project / "scripts")
    (project / "pyproject.toml").write_text(
        '[build-system]\nrequires = ["hatchling>=1.24"]\nbuild-backend = "hatchling.build"\n'
        '[project]\nname = "broken-install"\nversion = "0"\n'
        'dependencies = ["hindsight-no-such-package-0x41>=1"]\n'
        "[tool.hatch.build.targets.wheel]\nbypass-selection = true\n"
    )
    proc = subprocess.run(
        ["bash", "scripts/serve.sh"],
        cwd=project,
        capture_output=True,
        text=True,
        timeout=600,
        env={"PATH": "/usr/bin:/bin", "PYTHON": sys.executable, "HOME": str(tmp_path)},
    )
    output = proc.stdout + proc.stderr
    assert proc.returncode != 0, output
    assert "hindsight-no-such-package-0x41" in output and "ERROR" in output, output
    assert "hindsight: command not found" not in output and "No such file" not in output, output
