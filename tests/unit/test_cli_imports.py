"""A server process does not load what it never runs when the environment has it installed, as
the test environment does: httpx's command-line client (rich, pygments; hindsight/cli/__init__.py),
the MCP SDK's rich log handler and uvicorn's watchfiles reloader (hindsight/server/__init__.py),
the client commands' modules (hindsight/cli/main.py, COMMAND_MODULES)."""

from __future__ import annotations

import subprocess
import sys


def _run(code: str) -> list[bool]:
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split()
    return [w == "True" for w in out]


def test_httpx_command_line_client_is_not_imported():
    code = (
        "import sys, importlib.util\n"
        "import hindsight.cli.main, httpx\n"
        "print(importlib.util.find_spec('rich') is not None, 'rich' in sys.modules, 'pygments' in sys.modules,"
        " callable(httpx.main), httpx.AsyncClient is not None)\n"
    )
    installed, rich, pygments, main, client = _run(code)
    assert not rich and not pygments and main and client
    assert installed  # otherwise this test checks nothing: the test extras install rich


def test_a_server_loads_neither_rich_nor_the_watchfiles_reloader_nor_the_client_commands():
    """The modules a server imports and its MCP servers built (which set up logging through the
    SDK): rich, watchfiles and the client commands stay out, and the SDK's fallback handler is a
    plain one."""
    code = (
        "import sys, logging, importlib.util, types\n"
        "import hindsight.cli.main, hindsight.server.serve, hindsight.server.workers\n"
        "from hindsight.config import load_settings\n"
        "from hindsight.mcp.servers import build_server\n"
        "build_server(types.SimpleNamespace(settings=load_settings()), True)\n"
        "import uvicorn.supervisors\n"
        "print(importlib.util.find_spec('watchfiles') is not None, sys.modules.get('rich') is not None,"
        " 'watchfiles' in sys.modules, uvicorn.supervisors.ChangeReload.__name__ == 'StatReload',"
        " all(type(h) is logging.StreamHandler for h in logging.getLogger().handlers),"
        " any(m in sys.modules for m in ('hindsight.cli.migrate', 'hindsight.cli.audit_commands')))\n"
    )
    installed, rich, watchfiles, stat_reload, plain, commands = _run(code)
    assert installed  # otherwise this test checks nothing
    assert not rich and not watchfiles and stat_reload and plain and not commands
