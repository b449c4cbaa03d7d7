"""The server does not load httpx's command-line client (rich, pygments: ~2.6 MB of its memory)
when the environment has them installed, as the test environment does (hindsight/cli/__init__.py)."""

from __future__ import annotations

import subprocess
import sys


def test_httpx_command_line_client_is_not_imported():
    code = (
        "import sys, importlib.util\n"
        "import hindsight.cli.main, httpx\n"
        "print(importlib.util.find_spec('rich') is not None, 'rich' in sys.modules, 'pygments' in sys.modules,"
        " callable(httpx.main), httpx.AsyncClient is not None)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    installed, rich, pygments, main, client = (w == "True" for w in out)
    assert not rich and not pygments and main and client
    assert installed  # otherwise this test checks nothing: the test extras install rich
