"""ASGI routing in front of the MCP servers.

`/mcp` and `/mcp/` (no redirect) go to the multi-bank server, `/mcp/{bank_id}` and
`/mcp/{bank_id}/` to the single-bank server. Authentication happens here, once per HTTP request,
and a bank-scoped key is refused at the door for a bank path or X-Bank-Id header it may not reach
(with the engine's check; a `bank_id` argument is checked by the operation itself). Known client habits are accepted: a
missing or `*/*` Accept header is treated as accepting JSON and SSE, and a GET (Claude Code sends
one before initialize) gets the SDK's 405, which clients read as "no standalone stream".
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from ..config import BANK_ID_RULE, valid_bank_id
from ..engine.errors import known
from .surfaces import SCOPE_KEY, RequestState

if TYPE_CHECKING:
    from ..engine import Engine


_ACCEPT = b"application/json, text/event-stream"


async def send_json(send, status: int, body: dict, headers: list | None = None) -> None:
    data = json.dumps(body).encode()
    await send(
        {
            "type": "http.response.start",
            "status": status,
            "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(data)).encode())]
            + (headers or []),
        }
    )
    await send({"type": "http.response.body", "body": data})


def _header(scope, name: bytes) -> str | None:
    for k, v in scope.get("headers", []):
        if k == name:
            return v.decode("latin-1")
    return None


class MCPRouter:
    def __init__(self, engine: Engine, single, multi):
        self.engine = engine
        self.single = single  # session managers
        self.multi = multi

    async def __call__(self, scope, receive, send):
        path = scope["path"].rstrip("/")
        parts = path.split("/")[2:]  # after "", "mcp"
        if len(parts) > 1:
            return await send_json(send, 404, {"error": "not_found", "message": f"no MCP endpoint at {scope['path']}"})
        bank_id = parts[0] if parts else None
        if bank_id is not None and not valid_bank_id(bank_id):
            return await send_json(
                send,
                404,
                {
                    "error": "not_found",
                    "message": f"invalid bank id {bank_id!r} in the URL; use {BANK_ID_RULE}",
                },
            )
        try:
            who = await self.engine.authenticate(_header(scope, b"authorization"))
            header_bank = (_header(scope, b"x-bank-id") or "").strip() or None
            if header_bank is not None and not valid_bank_id(header_bank):
                return await send_json(
                    send,
                    400,
                    {
                        "error": "invalid_argument",
                        "field": "X-Bank-Id",
                        "message": f"X-Bank-Id: invalid bank id {header_bank!r}",
                    },
                )
            if bank_id is not None or header_bank is not None:
                # the engine's own check, made early so a key never sees a bank's tool list
                self.engine.require(who, bank_id or header_bank or "")
        except Exception as exc:  # authenticating reads the keys from the database
            error = known(exc)
            if error is None:
                raise
            extra = [(k.lower().encode(), v.encode()) for k, v in error.http_headers().items()]
            return await send_json(send, error.status, error.to_dict(), extra)

        if scope["method"] in ("GET", "DELETE"):
            # Stateless server: no standalone SSE stream to open and no session to end.
            return await send_json(
                send,
                405,
                {
                    "error": "method_not_allowed",
                    "message": "this MCP endpoint is stateless: POST JSON-RPC messages",
                },
                [(b"allow", b"POST")],
            )
        headers = [(k, v) for k, v in scope["headers"] if k != b"accept"]
        accept = _header(scope, b"accept")
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
            caller={"x-user-id": _header(scope, b"x-user-id"), "x-session-tags": _header(scope, b"x-session-tags")},
        )
        manager = self.single if bank_id is not None else self.multi
        await manager.handle_request(scope, receive, send)
