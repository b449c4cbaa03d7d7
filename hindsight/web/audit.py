"""What a request's audit record says that only the face that served it knows: the MCP tool called
and the bank it acted on (the router and the tool's handler fill it in), the bank a route found in
its body, how a tool call ended inside an HTTP 200. The server shell keeps one note in each
request's scope (server/audit_trail.py) and writes the record from it when the answer is sent."""

from __future__ import annotations

from collections.abc import MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from hindsight.engine.access.keys import Principal

# The scope key of the request's note; the request id's (server/request_id.py).
AUDIT = "hindsight.audit"
REQUEST_ID = "hindsight.request_id"


@dataclass(slots=True)
class AuditNote:
    transport: str = "http"
    action: str | None = None  # an MCP tool's name; REST routes are named by their route
    bank_id: str | None = None  # when the path does not name the bank (MCP, a bank named in a body)
    who: Principal | None = None  # when no middleware saw the principal (routes that authenticate)
    outcome: str | None = None  # an MCP tool's error code (its HTTP answer is a 200)


def note_of(scope: MutableMapping[str, Any]) -> AuditNote | None:
    return scope.get(AUDIT)


def about_bank(scope: MutableMapping[str, Any], bank_id: str | None) -> None:
    """The request acted on `bank_id` though its path does not say so (a bank named in its body)."""
    note = scope.get(AUDIT)
    if note is not None and bank_id:
        note.bank_id = bank_id


def acted_as(scope: MutableMapping[str, Any], who: Principal) -> None:
    """The principal a route authenticated itself (the consent page's decision)."""
    note = scope.get(AUDIT)
    if note is not None:
        note.who = who
