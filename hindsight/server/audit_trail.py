"""Every request that reads or changes a bank (its memories, settings, documents, models,
operations, audit log, connected apps) or the API keys leaves one audit record: when, who, which
bank, what operation, the outcome and the request id; never what the request or its answer said.

The record is made here, when the answer has been sent, from what the request's scope holds: the
REST route FastAPI matched (its name is the operation, its template the route, its path the bank),
the principal the request authenticated as, and the note the faces fill in (web/audit.py): the
MCP tool called and the bank it acted on, a bank named in a body, a tool's error inside an HTTP
200. A request refused before it was routed (a 401 before its body was read) is matched to its
route here. MCP requests that call no tool (initialize, tools/list) read nothing of a bank and
leave no record unless refused.

Records are handed to the engine's writer (engine/audit/trail.py), which writes them in batches
off the request's path.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from starlette.routing import BaseRoute, Match

from hindsight.bank_ids import valid_bank_id
from hindsight.engine.audit.trail import AuditTrail
from hindsight.engine.errors import NotFound
from hindsight.oauth.resource import endpoint_bank
from hindsight.server.auth_first import is_mcp
from hindsight.server.request_metrics import route_label
from hindsight.web.audit import AUDIT, REQUEST_ID, AuditNote
from hindsight.web.scope import PRINCIPAL

# The REST routes on the record: a bank's, the banks', the keys', the audit log's, the consent page's,
# and those that read a bank by an id alone (a chunk, a file), whose route names the bank it found.
AUDITED_ROUTES = (
    "/v1/banks",
    "/v1/keys",
    "/v1/audit-logs",
    "/v1/oauth/",
    "/v1/default/banks",
    "/v1/default/chunks",
    "/v1/default/files/",
)
# An error's code by its HTTP status, for a refusal no face described.
OUTCOMES = {
    400: "bad_request",
    401: "unauthorized",
    403: "forbidden",
    404: "not_found",
    405: "method_not_allowed",
    409: "conflict",
    413: "too_large",
    422: "invalid_argument",
    429: "rate_limited",
    500: "internal",
    502: "llm_unavailable",
    503: "unavailable",
    504: "timeout",
}


def outcome_of(status: int) -> str:
    return "ok" if status < 400 else OUTCOMES.get(status, f"http_{status}")


def plain(text: str | None, limit: int = 300) -> str | None:
    """A value from a request, fit for the log: no NUL, no unpaired surrogate, bounded."""
    if text is None:
        return None
    return text.encode("utf-8", "replace").decode("utf-8").replace("\x00", "")[:limit]


def _mcp_bank(path: str) -> str | None:
    """The bank an MCP URL names, or None when it names none (or no valid one: the routes inside
    answer that 404, and the record carries no bank)."""
    try:
        return endpoint_bank(path)
    except NotFound:
        return None


class AuditTrailMiddleware:
    """Middleware, outside every refusal (drain, host and origin, authentication, body limits), so
    that what was refused is on the record too. `trail()` is the engine's writer; `rest` the REST
    application's routes as declared, for requests refused before routing."""

    def __init__(self, app, trail: Callable[[], AuditTrail], rest: list[BaseRoute]):
        self.app = app
        self.trail = trail
        self.rest = rest

    async def __call__(self, scope, receive, send):
        path = scope["path"] if scope["type"] == "http" else ""
        if not (path.startswith(AUDITED_ROUTES) or is_mcp(path)) or not self.trail().enabled:
            return await self.app(scope, receive, send)
        # an MCP request's bank is its URL's (or the tool's, once it is called): a refusal at the
        # door (a 401 before the body is read) names it too
        note = AuditNote(transport="mcp", bank_id=_mcp_bank(path)) if is_mcp(path) else AuditNote()
        scope[AUDIT] = note
        status = 500
        started, t0 = time.time(), time.perf_counter()

        async def watched(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, watched)
        finally:
            self._record(scope, note, status, started, time.perf_counter() - t0)

    def _record(self, scope, note: AuditNote, status: int, started: float, seconds: float) -> None:
        bank: object
        if note.transport == "mcp":
            if note.action is None and status < 400:
                return
            action, route, bank = note.action or "mcp", route_label(scope), note.bank_id
        else:
            found = scope.get("route")
            params = scope.get("path_params") or {}
            if found is None:
                found, params = self._match(scope)
            template = getattr(found, "path", None)
            if not isinstance(template, str) or not template.startswith(AUDITED_ROUTES):
                return
            route = template
            action, bank = getattr(found, "name", None) or "unknown", note.bank_id or params.get("bank_id")
        who = note.who or scope.get(PRINCIPAL)
        self.trail().record(
            bank if isinstance(bank, str) and valid_bank_id(bank) else None,
            note.transport,
            action,
            scope.get("method"),
            route,
            status,
            note.outcome or outcome_of(status),
            plain(who.key_id or who.kind) if who is not None else None,
            scope.get(REQUEST_ID) or "",
            started,
            seconds,
        )

    def _match(self, scope) -> tuple[object | None, dict]:
        """The REST route a request refused before routing was for, and its path's values."""
        partial = None
        for route in self.rest:
            match, child = route.matches(scope)
            if match == Match.FULL:
                return route, child.get("path_params", {})
            if match == Match.PARTIAL and partial is None:
                partial = (route, child.get("path_params", {}))
        return partial or (None, {})
