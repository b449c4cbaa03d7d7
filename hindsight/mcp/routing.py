"""ASGI routing in front of the MCP servers.

`/mcp` and `/mcp/` (no redirect) go to the multi-bank server, `/mcp/{bank_id}` and
`/mcp/{bank_id}/` to the single-bank server. Authentication happens here, once per HTTP request
(an API key, or an OAuth token where the endpoints are a protected resource: oauth/resource.py),
and a bank-scoped key is refused at the door for a bank path or X-Bank-Id header it may not reach
(with the engine's check; a `bank_id` argument is checked by the operation itself). Known client habits are accepted: a
missing or `*/*` Accept header is treated as accepting JSON and SSE, and a GET (Claude Code sends
one before initialize) gets the SDK's 405, which clients read as "no standalone stream".
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from hindsight.bank_ids import invalid_bank_id, valid_bank_id
from hindsight.engine.errors import known
from hindsight.mcp.on_demand import OnDemand
from hindsight.mcp.servers import SCOPE_KEY, RequestState
from hindsight.oauth.resource import endpoint_bank
from hindsight.web.audit import note_of
from hindsight.web.errors import InvalidHeader, MethodNotAllowed, send_error
from hindsight.web.scope import PRINCIPAL, header

if TYPE_CHECKING:
    from hindsight.engine.access.keys import Principal
    from hindsight.engine.facade import Engine


_ACCEPT = b"application/json, text/event-stream"


class MCPRouter:
    """Resolves who calls and which bank an HTTP request is for, then hands it to the single- or
    multi-bank server (each built by its first request, on_demand.py): through its SDK session
    manager, a plain request in one exchange (single_exchange.py). Refusals are engine errors,
    answered by api/errors.py like every other."""

    def __init__(
        self, engine: Engine, single: OnDemand, multi: OnDemand, authenticate: Callable[[Any], Awaitable[Principal]]
    ):
        self.engine = engine
        self.single = single  # the servers, each built by its first request
        self.multi = multi
        # who calls, from the request (server/app.py: the OAuth guard, or the API key alone)
        self.authenticate = authenticate

    async def __call__(self, scope, receive, send):
        note = note_of(scope)
        try:
            who, bank_id, header_bank = await self._admit(scope)
        except Exception as exc:  # authenticating reads the keys from the database
            error = known(exc)
            if error is None:
                raise
            return await send_error(error, scope, receive, send)
        if note is not None:
            note.who = who
        headers = [(k, v) for k, v in scope["headers"] if k != b"accept"]
        accept = header(scope, b"accept")
        if not accept or accept.strip() in ("*/*", "application/*"):
            accept = _ACCEPT.decode()
        elif "application/json" in accept and "text/event-stream" not in accept:
            accept += ", text/event-stream"
        headers.append((b"accept", accept.encode()))
        scope = dict(scope, headers=headers, path="/mcp", raw_path=b"/mcp")
        scope[SCOPE_KEY] = RequestState(
            who=who,
            bank_id=bank_id,
            header_bank=header_bank,
            # what RAG callers send about the end user (rag_search filters on them)
            end_user={"x-user-id": header(scope, b"x-user-id"), "x-session-tags": header(scope, b"x-session-tags")},
            audit=note,
        )
        exchange = await (self.single if bank_id is not None else self.multi).exchange()
        await exchange(scope, receive, send)

    async def _admit(self, scope) -> tuple[Principal, str | None, str | None]:
        """(caller, bank from the URL, bank from X-Bank-Id), or the error that refuses the request."""
        bank_id = endpoint_bank(scope["path"])
        who = scope.get(PRINCIPAL) or await self.authenticate(scope)
        header_bank = (header(scope, b"x-bank-id") or "").strip() or None
        if header_bank is not None and not valid_bank_id(header_bank):
            raise InvalidHeader(f"X-Bank-Id: {invalid_bank_id(header_bank)}", "X-Bank-Id")
        if bank_id is not None or header_bank is not None:
            # the engine's own check, made early so a key never sees a bank's tool list
            self.engine.require(who, bank_id or header_bank or "")
        if scope["method"] in ("GET", "DELETE"):
            # Stateless server: no standalone SSE stream to open and no session to end.
            raise MethodNotAllowed("this MCP endpoint is stateless: POST JSON-RPC messages", "POST")
        return who, bank_id, header_bank
