"""The single-bank and multi-bank MCP servers, generated from `tools.TOOLS`.

Both run stateless with JSON responses: any server process can answer any request (no session
affinity behind a load balancer), and the bank and caller come from the HTTP request, which the
routing layer has already authenticated and resolved into the ASGI scope.
"""

from __future__ import annotations

import functools
import inspect
from typing import TYPE_CHECKING, Any, cast

from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.shared.exceptions import MCPError
from mcp_types import CallToolResult, ToolAnnotations
from pydantic import ValidationError

from ..engine.banks import check_bank_id
from ..engine.errors import Forbidden, HindsightError, InvalidArgument, Unauthorized
from ..engine.validation import describe_validation
from ..metrics import MCP_CALLS, MCP_SECONDS, timed
from . import collections as _collections  # noqa: F401  (registers the collection alias tools)
from .tools import TOOLS, Call, ToolDef

if TYPE_CHECKING:
    from ..engine import Engine


INVALID_PARAMS = -32602
# JSON-RPC leaves -32000..-32099 to implementations; we use -32001 for authentication and
# authorisation failures (a bank the key may not reach), documented in docs/mcp.md.
ACCESS_DENIED = -32001
SCOPE_KEY = "hindsight"


TOP_LEVEL_RESULT = {td.name for td in TOOLS if td.top_level_result}
TOP_LEVEL_META = "hindsight/top-level-result"


def error_code(exc: HindsightError) -> int:
    return ACCESS_DENIED if isinstance(exc, (Forbidden, Unauthorized)) else INVALID_PARAMS


class HindsightMCPServer(MCPServer):
    """Argument validation failures are protocol errors (-32602 naming the argument), as the MCP
    spec asks, rather than the SDK's default of a tool result flagged `isError`."""

    async def _handle_call_tool(self, ctx, params) -> Any:
        if self._tool_manager.get_tool(params.name) is None:
            raise MCPError(INVALID_PARAMS, f"unknown tool {params.name!r}")
        try:
            result = await self.call_tool(
                params.name,
                params.arguments or {},
                Context(request_context=ctx, mcp_server=self, input_params=params, subscriptions=self._subscriptions),
            )
            if params.name in TOP_LEVEL_RESULT and isinstance(result, CallToolResult) and result.structured_content:
                # RAG-over-MCP clients read `status`/`segments` (or `has_access`) at the top of `result`;
                # the SDK re-validates results against the spec, so the router lifts them (routing.py).
                result.meta = {**(result.meta or {}), TOP_LEVEL_META: True}
            return result
        except ToolError as exc:
            if isinstance(exc.__cause__, ValidationError):
                raise MCPError(INVALID_PARAMS, describe_validation(exc.__cause__)) from None
            return CallToolResult(content=[{"type": "text", "text": str(exc)}], is_error=True)


def request_state(ctx: Context) -> dict:
    request = ctx.request_context.request
    scope = getattr(request, "scope", None) or {}
    state = scope.get(SCOPE_KEY)
    if state is None:
        raise MCPError(ACCESS_DENIED, "request did not pass through the hindsight MCP router")
    return state


def resolve_bank(argument: str | None, alias: str | None, header: str | None, default: str) -> tuple[str, str]:
    """Multi-bank mode: argument (bank_id, or its synonym collection_id) > X-Bank-Id > default."""
    if argument and alias and argument != alias:
        raise InvalidArgument(
            "collection_id: is a synonym of bank_id; give one of them (or the same value)", "collection_id"
        )
    if argument or alias:
        return check_bank_id(argument or alias, "bank_id" if argument else "collection_id"), "argument"
    if header:
        return check_bank_id(header, "X-Bank-Id"), "header"
    return check_bank_id(default), "default"


def _wrap(td: ToolDef, engine, multi: bool, local_state: dict | None = None):
    sig = inspect.signature(td.fn, eval_str=True)
    params = list(sig.parameters.values())[1:]  # drop `call`
    extra = []
    if multi and td.scope == "bank":
        extra.append(inspect.Parameter("bank_id", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=str | None))
        if td.collection_alias:
            extra.append(
                inspect.Parameter("collection_id", inspect.Parameter.KEYWORD_ONLY, default=None, annotation=str | None)
            )
    ctx_param = inspect.Parameter("ctx", inspect.Parameter.KEYWORD_ONLY, annotation=Context)
    positional = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY) for p in params]

    @functools.wraps(td.fn)
    async def wrapper(ctx: Context, **kwargs):
        state = local_state or request_state(ctx)
        bank_id = kwargs.pop("bank_id", None) if multi and td.scope == "bank" else None
        alias = kwargs.pop("collection_id", None) if multi and td.collection_alias else None
        try:
            source = "url"
            if td.scope == "bank":
                if multi:
                    bank_id, source = resolve_bank(
                        bank_id, alias, state.get("header_bank"), engine.settings.mcp_bank_id
                    )
                else:
                    bank_id = state["bank_id"]
            call = Call(
                engine=engine,
                who=state["who"],
                bank_id=bank_id or "",
                headers=state.get("caller") or {},
                bank_source=source,
            )
            with timed(MCP_SECONDS, td.name):
                result = await td.fn(call, **kwargs)
            MCP_CALLS.labels(td.name, "ok").inc()
            return result
        except HindsightError as exc:
            MCP_CALLS.labels(td.name, "error").inc()
            raise MCPError(error_code(exc), exc.message) from None

    cast(Any, wrapper).__signature__ = sig.replace(parameters=positional + extra + [ctx_param])
    hints = {p.name: p.annotation for p in positional + extra}
    hints["ctx"] = Context
    hints["return"] = sig.return_annotation
    wrapper.__annotations__ = hints
    del wrapper.__wrapped__
    return wrapper


def build_server(engine: Engine, multi: bool, local_state: dict | None = None) -> HindsightMCPServer:
    """`local_state` replaces the per-request state for transports without HTTP (stdio)."""
    name = "hindsight" if multi else "hindsight-bank"
    server = HindsightMCPServer(
        name=name,
        instructions=(
            "Hindsight memory. Call recall before answering questions about the user or past work; "
            "call retain to store facts, preferences, decisions and events worth remembering."
            + (
                " Tools take an optional bank_id; without it the X-Bank-Id header or the server "
                "default selects the bank."
                if multi
                else ""
            )
        ),
        log_level=cast(Any, engine.settings.log_level.upper()),
    )
    for td in TOOLS:
        if td.scope == "global" and not multi:
            continue
        description = td.description
        if multi and td.scope == "bank":
            description += (
                "\n\n`bank_id` (optional) selects the bank; default: X-Bank-Id header, then the server default."
            )
            if td.collection_alias:
                description += " `collection_id` is a synonym of `bank_id` (a collection is a bank)."
        server.add_tool(
            _wrap(td, engine, multi, local_state),
            name=td.name,
            description=description,
            annotations=ToolAnnotations(
                title=td.name.replace("_", " ").capitalize(),
                read_only_hint=td.read_only,
                destructive_hint=td.destructive,
                idempotent_hint=td.idempotent,
                open_world_hint=False,
            ),
        )
    return server
