"""A handshake-era MCP request answered in one exchange, as the SDK answers a 2026-07-28 one.

Claude Code, MCP Inspector, hosted connectors and curl speak the handshake-era protocol
(2024-11-05 to 2025-11-25). On our stateless, JSON-response servers the SDK answers each such
POST by building a transport with four memory streams and a message-router task, a JSON-RPC
dispatcher, a server task in its task group and a task for the request, then tearing them down,
several times a `ping`'s own cost in event-loop time (bench/README.md, "MCP: one exchange for the
handshake era"). None of it carries anything here: the answer is one
JSON body and a stateless server has no session to route to. So a well-formed request (one
JSON-RPC request other than `initialize`, JSON in and out) goes through the SDK's own
single-exchange driver (`serve_one`, what the SDK runs for a 2026-07-28 request) and is answered
exactly as the transport would have answered it. Everything else (`initialize`, notifications,
malformed bodies, wrong headers, the 2026-07-28 era) goes to the SDK's transport as before, so
its errors and edge cases stay the SDK's; tests/contract/test_mcp_exchange.py checks both paths give the
same bytes. One answer differs on purpose: a handler that raises something unexpected (a bug) is
-32603 "Internal server error", as on the 2026-07-28 path, where the SDK's dispatcher answered
code 0 with the exception's text.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import anyio
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.runner import serve_one
from mcp.server.streamable_http import check_accept_headers
from mcp.server.transport_security import RequestBodyLimitMiddleware
from mcp.shared.dispatcher import CallOptions
from mcp.shared.exceptions import NoBackChannelError
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from mcp.shared.jsonrpc_dispatcher import handler_exception_to_error_data, progress_token_from_params
from mcp.shared.message import MessageMetadata, ServerMessageMetadata
from mcp.shared.transport_context import TransportContext
from mcp_types import (
    DEFAULT_NEGOTIATED_VERSION,
    INTERNAL_ERROR,
    ErrorData,
    JSONRPCError,
    JSONRPCRequest,
    JSONRPCResponse,
    ProgressToken,
    RequestId,
    jsonrpc_message_adapter,
)
from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS
from starlette.datastructures import Headers
from starlette.requests import Request
from starlette.responses import Response

log = logging.getLogger("hindsight.mcp")

_JSON = "application/json"
# what the SDK's transport gives a stateless JSON-response request (no back-channel, no headers)
_TRANSPORT = TransportContext(kind="streamable-http", can_send_request=False)


@dataclass
class _Exchange:
    """The dispatch context of one request answered by one JSON body: no back-channel (the SDK's
    stateless transport refuses server-initiated requests too), and notifications dropped, as
    that transport drops them in JSON-response mode (no wire carries them)."""

    request_id: RequestId
    message_metadata: MessageMetadata
    progress_token: ProgressToken | None = None
    transport: TransportContext = _TRANSPORT
    can_send_request: bool = False
    cancel_requested: anyio.Event = field(default_factory=anyio.Event)

    async def send_raw_request(
        self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None
    ) -> dict[str, Any]:
        raise NoBackChannelError(method)

    async def notify(self, method: str, params: Mapping[str, Any] | None, opts: CallOptions | None = None) -> None:
        return None

    async def progress(self, progress: float, total: float | None = None, message: str | None = None) -> None:
        return None


class SingleExchange:
    """ASGI front of one of the SDK's stateless session managers (the app enters its `run()`)."""

    def __init__(self, manager: Any):
        self.manager = manager
        # the same body limit the manager applies (413 before the body is parsed)
        self.app = RequestBodyLimitMiddleware(self._serve, manager.max_request_body_size)

    async def __call__(self, scope, receive, send) -> None:
        await self.app(scope, receive, send)

    async def _serve(self, scope, receive, send) -> None:
        # The limit middleware has gathered the body into its one `http.request` message.
        message = await receive() if scope["method"] == "POST" else None
        if message is not None and (message["type"] != "http.request" or message.get("more_body", False)):
            # The client hung up before its body was whole: nobody to answer (the transport
            # would log an error and write a 500 to the closed connection).
            return
        headers = Headers(scope=scope)
        request = _plain_request(scope, headers, message.get("body", b"")) if message is not None else None
        if request is None:
            return await self.manager.handle_request(scope, _replay(message, receive), send)
        version = headers.get(MCP_PROTOCOL_VERSION_HEADER) or DEFAULT_NEGOTIATED_VERSION
        http_request = Request(scope, _replay(message, receive))
        dctx = _Exchange(
            request_id=request.id,
            message_metadata=ServerMessageMetadata(request_context=http_request, can_send_request=False),
            progress_token=progress_token_from_params(request.params),
        )
        answer: JSONRPCResponse | JSONRPCError
        try:
            result = await serve_one(
                self.manager.app,
                dctx,
                request.method,
                request.params,
                connection=Connection.from_envelope(version, None, None),
                lifespan_state=self.manager._lifespan_state,
            )
            answer = JSONRPCResponse(jsonrpc="2.0", id=request.id, result=result)
        except Exception as exc:
            error = handler_exception_to_error_data(exc)
            if error is None:
                log.exception("MCP handler for %r raised", request.method)
                error = ErrorData(code=INTERNAL_ERROR, message="Internal server error")
            answer = JSONRPCError(jsonrpc="2.0", id=request.id, error=error)
        # written as the SDK's transport writes it (its header order too)
        text = answer.model_dump_json(by_alias=True, exclude_unset=True)
        await Response(text, status_code=200, headers={"Content-Type": _JSON})(scope, receive, send)


def _plain_request(scope, headers: Headers, body: bytes) -> JSONRPCRequest | None:
    """The request, when the SDK's transport would hand this POST to its dispatcher as one
    request and answer it with JSON; None for anything it treats otherwise."""
    version = headers.get(MCP_PROTOCOL_VERSION_HEADER)
    if version is not None and version not in HANDSHAKE_PROTOCOL_VERSIONS:
        return None  # the 2026-07-28 era and unknown versions: the SDK's classifier answers
    content_type = headers.get("content-type") or ""
    # the transport's two Content-Type checks (transport_security's, then its own)
    if not content_type.lower().startswith(_JSON):
        return None
    if _JSON not in (part.strip() for part in content_type.split(";")[0].split(",")):
        return None
    if not check_accept_headers(Request(scope))[0]:
        return None
    if b'"id"' not in body or b'"initialize"' in body:
        # Not parsed twice: a body with no `"id"` is a notification or not a request at all, and
        # one naming `initialize` may be that (an id spelt with escapes goes the SDK's way too).
        return None
    try:
        message = jsonrpc_message_adapter.validate_python(pydantic_core.from_json(body), by_name=False)
    except ValueError:  # not JSON, or not a JSON-RPC message (ValidationError is a ValueError)
        return None
    if not isinstance(message, JSONRPCRequest) or message.method == "initialize":
        return None
    return message


def _replay(message: dict | None, receive):
    """`receive` with the message already read handed back first."""
    pending = [message] if message is not None else []

    async def replayed():
        return pending.pop() if pending else await receive()

    return replayed
