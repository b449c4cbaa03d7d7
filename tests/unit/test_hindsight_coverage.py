"""Every operation of Hindsight's API and every name of its MCP tools is served here or listed
with why not (api/compat/reference.py, mcp/catalog.py), and the lists are Hindsight's own (its
OpenAPI document and tool names, kept beside this project in ../shared/hindsight/)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from hindsight.api.compat.reference import NOT_SERVED, OPERATIONS
from hindsight.docs import served_operations, unnamed
from hindsight.mcp.catalog import HINDSIGHT_TOOLS, NOT_SERVED_TOOLS, TOOLS

SHARED = Path(__file__).resolve().parents[2].parent / "shared" / "hindsight"
METHODS = ("get", "post", "put", "patch", "delete")


def test_every_operation_is_served_or_listed_with_why():
    served = served_operations()
    for method, path, op in OPERATIONS:
        here = (method, unnamed(path)) in served
        assert here or op in NOT_SERVED, f"{method} {path} ({op}) is neither served nor listed in NOT_SERVED"
        assert not (here and op in NOT_SERVED), f"{op} is served: take it out of NOT_SERVED"
    assert set(NOT_SERVED) <= {op for _, _, op in OPERATIONS}
    assert all(reason.strip() for reason in NOT_SERVED.values())


def test_every_tool_name_is_served_or_listed_with_why():
    ours = {td.name for td in TOOLS}
    for name in HINDSIGHT_TOOLS:
        assert (name in ours) != (name in NOT_SERVED_TOOLS), name
    assert set(NOT_SERVED_TOOLS) <= set(HINDSIGHT_TOOLS)


@pytest.mark.skipif(not SHARED.exists(), reason="../shared/hindsight/ is not beside this checkout")
def test_the_lists_are_hindsights_own():
    spec = json.loads((SHARED / "openapi-0.9.1.json").read_text())
    theirs = [
        (method.upper(), path, op["operationId"])
        for path, ops in spec["paths"].items()
        for method, op in ops.items()
        if method in METHODS
    ]
    assert list(OPERATIONS) == theirs
    assert sum(1 for _, path, _ in theirs if path.startswith("/v1/default/")) == 83
    names = [n.strip() for n in (SHARED / "mcp-tools-0.9.1.txt").read_text().splitlines() if n.strip()]
    assert list(HINDSIGHT_TOOLS) == names and len(names) == 39
