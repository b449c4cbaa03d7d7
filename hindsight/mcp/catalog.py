"""Every MCP tool, in one list: the bank tools (tools.py) and the collection aliases
(collections.py). The servers (surfaces.py), the generated documentation (docs.py) and the tests
read this list."""

from __future__ import annotations

from hindsight.mcp import collections, tools

TOOLS = [*tools.TOOLS, *collections.TOOLS]
