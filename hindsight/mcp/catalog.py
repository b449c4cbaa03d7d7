"""Every MCP tool, in one list: the bank tools (tools.py) and the collection aliases
(collections.py). The servers (surfaces.py), the generated documentation (docs.py) and the tests
read this list.

HINDSIGHT_TOOLS are the names Hindsight 0.9.1's MCP server offers (its `_ALL_TOOLS`, kept beside
this project in `../shared/hindsight/mcp-tools-0.9.1.txt`): each is a tool here by the same name,
taking the arguments its agents send, or is listed in NOT_SERVED_TOOLS with why
(tests/unit/test_hindsight_coverage.py checks both, and docs/mcp.md's table is made from them)."""

from __future__ import annotations

from hindsight.mcp import collections, tools

TOOLS = [*tools.TOOLS, *collections.TOOLS]

HINDSIGHT_TOOLS = (
    "retain", "sync_retain", "recall", "reflect", "list_banks", "create_bank", "list_mental_models",
    "get_mental_model", "create_mental_model", "update_mental_model", "delete_mental_model",
    "refresh_mental_model", "clear_mental_model", "list_directives", "create_directive", "delete_directive",
    "list_memories", "get_memory", "update_memory", "invalidate_memory", "list_documents", "get_document",
    "delete_document", "list_operations", "get_operation", "cancel_operation", "list_tags", "get_bank",
    "get_bank_stats", "update_bank", "delete_bank", "clear_memories", "get_knowledge_base_tree",
    "search_knowledge_base", "get_knowledge_page", "create_knowledge_folder", "create_knowledge_page",
    "update_knowledge_node", "delete_knowledge_node",
)  # fmt: skip

# Hindsight tool names no tool here serves, and why (none today; the coverage test reads this).
NOT_SERVED_TOOLS: dict[str, str] = {}
