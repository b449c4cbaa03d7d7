"""What an ASGI request scope carries that the faces read: its headers, and the principal that
authenticated it before its body was read (server/auth_first.py), kept for the route or the MCP
router so that no request is authenticated twice."""

from __future__ import annotations

from typing import Any

# The scope key of the principal authenticated before the body was read.
PRINCIPAL = "hindsight.principal"


def header(scope: dict[str, Any], name: bytes) -> str | None:
    """The first value of header `name` (lower case), as text."""
    for k, v in scope.get("headers", []):
        if k == name:
            return v.decode("latin-1")
    return None


def authorization(scope: dict[str, Any]) -> str | None:
    return header(scope, b"authorization")
