"""The single-bank and multi-bank MCP servers, generated from `catalog.TOOLS` through the SDK's
public surfaces only.

Each tool's MCP arguments are its request model's fields, each published with the field's own
JSON schema but typed `Any` for the SDK, so the SDK checks only that required arguments are
present and the request model validates them once. The caller (principal, bank from the URL or
header, end-user headers) reaches the tool through the SDK's dependency injection (`Resolve`),
from the state the router put in the ASGI scope after authenticating the HTTP request. A server
middleware turns unknown tools into -32602 and, for the tools RAG clients read that way
(rag_search, verify_document_access), copies the structured result's fields to the top of the
JSON-RPC result.

Errors follow the MCP specification (2025-11-25, SEP-1303): whatever goes wrong in a tool's own
work or with its arguments (a missing or invalid argument, a bank or memory that does not exist,
a key that may not do it, a limit, the LLM or the database failing) is the tool's result, flagged
`isError`, so that the model reads what went wrong and can correct itself (`tool_error`).
Protocol faults (an unknown tool or method, a malformed request) stay JSON-RPC errors.

Both servers are stateless with JSON responses: any process can answer any request.
"""

from __future__ import annotations

import inspect
import json
import logging
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Annotated, Any, cast

from mcp.server.mcpserver import Context, MCPServer, Resolve
from mcp.server.mcpserver.exceptions import ToolError, UnexpectedToolError
from mcp.server.mcpserver.tools import Tool
from mcp.server.transport_security import TransportSecuritySettings
from mcp.shared.exceptions import MCPError
from mcp_types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent, ToolAnnotations
from pydantic import BaseModel, ValidationError, WithJsonSchema

from hindsight.bank_ids import valid_bank_id
from hindsight.engine.access.keys import Principal
from hindsight.engine.errors import HindsightError, InvalidArgument, known
from hindsight.engine.rules.validation import inline_defs, invalid, parse
from hindsight.mcp.catalog import TOOLS
from hindsight.mcp.output_schema import cheap_to_validate, with_tool_error
from hindsight.mcp.tools import Call, ToolDef
from hindsight.metrics import MCP_CALLS, MCP_SECONDS
from hindsight.web.audit import AuditNote

if TYPE_CHECKING:
    from hindsight.engine.facade import Engine

log = logging.getLogger("hindsight.mcp")

SCOPE_KEY = "hindsight"


@dataclass
class RequestState:
    """What the router resolved for one HTTP request (or what `hindsight mcp` fixes for stdio)."""

    who: Principal
    bank_id: str | None = None  # from the URL: the single-bank surface
    header_bank: str | None = None  # X-Bank-Id
    end_user: dict = field(default_factory=dict)  # x-user-id / x-session-tags, for document access
    audit: AuditNote | None = None  # the request's audit note (web/audit.py): the tool and its bank


async def _from_scope(ctx: Context) -> RequestState:
    """Async although it never waits: the SDK runs a synchronous resolver on a worker thread,
    a hop there and back on every tool call."""
    request = ctx.request_context.request
    state = (getattr(request, "scope", None) or {}).get(SCOPE_KEY)
    if state is None:  # a server wired without the router: ours to fix, not the caller's
        raise MCPError(INTERNAL_ERROR, "request did not pass through the hindsight MCP router")
    return state


class ContractTool(Tool):
    """A tool whose missing required arguments are a tool error in the words the request models
    use for every other argument error (naming each one), not the SDK's text. Every other check
    is the request model's, inside the tool."""

    async def run(self, arguments: dict[str, Any], context: Any, convert_result: bool = False) -> Any:
        try:
            return await super().run(arguments, context, convert_result)
        except ToolError as exc:
            # UnexpectedToolError: the SDK's check of our result failed, not the caller's arguments
            if isinstance(exc.__cause__, ValidationError) and not isinstance(exc, UnexpectedToolError):
                MCP_CALLS.labels(self.name, "error").inc()
                return tool_error(invalid(exc.__cause__))
            raise


def arguments(model: type[BaseModel] | None) -> list[inspect.Parameter]:
    """The MCP arguments of a request model: its fields, required ones first."""
    if model is None:
        return []
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    out = []
    for name, f in model.model_fields.items():
        prop = {k: v for k, v in inline_defs(schema["properties"][f.alias or name], defs).items() if k != "default"}
        # `str` stays `str` so the SDK does not read a JSON-looking string as a list or object.
        default = inspect.Parameter.empty if f.is_required() else f.get_default(call_default_factory=True)
        ann: Any = Annotated[str, WithJsonSchema(prop)] if f.annotation is str else Annotated[Any, WithJsonSchema(prop)]
        out.append(inspect.Parameter(f.alias or name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=ann))
    return sorted(out, key=lambda p: p.default is not inspect.Parameter.empty)


def _json_types(prop: dict) -> set[str]:
    """The JSON types a field's schema allows."""
    kinds = {prop["type"]} if isinstance(prop.get("type"), str) else set(prop.get("type") or ())
    for alt in prop.get("anyOf", []) + prop.get("oneOf", []):
        kinds |= _json_types(alt)
    return kinds


def json_encoded(model: type[BaseModel] | None) -> dict[str, type]:
    """The arguments an LLM agent may send JSON-encoded: lists and objects (never a field that
    also takes a string), by name, with the Python type the decoded value must have."""
    if model is None:
        return {}
    schema = model.model_json_schema()
    defs = schema.get("$defs", {})
    out: dict[str, type] = {}
    for name, f in model.model_fields.items():
        kinds = _json_types(inline_defs(schema["properties"][f.alias or name], defs))
        if "string" not in kinds and kinds & {"array", "object"}:
            out[f.alias or name] = list if "array" in kinds else dict
    return out


def decode_json_arguments(args: dict[str, Any], encoded: dict[str, type]) -> None:
    """Agents often send a list or an object as its JSON text: decode those in place. A string
    that is not such JSON stays a string, which the request model refuses (never a list of one)."""
    for name, kind in encoded.items():
        value = args.get(name)
        if isinstance(value, str) and value.strip()[:1] in ("[", "{"):
            try:
                decoded = json.loads(value)
            except ValueError:
                continue
            if isinstance(decoded, kind):
                args[name] = decoded


def _bank_arguments(td: ToolDef, multi: bool) -> list[inspect.Parameter]:
    if not (multi and td.scope == "bank"):
        return []
    names = ["bank_id", "collection_id"] if td.collection_alias else ["bank_id"]
    return [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=None, annotation=str | None) for n in names]


# The injected request state's parameter: a name no tool argument takes (update_memory has `state`).
STATE_PARAM = "hindsight_request_state"


def _select_bank(td: ToolDef, multi: bool, state: RequestState, args: dict, default: str) -> tuple[str, str, str]:
    """The bank a call acts on, where it came from (url, argument, alias, header, default) and
    the name the client gave it (for error messages). Multi-bank: argument (bank_id, or its
    synonym collection_id) > X-Bank-Id > HINDSIGHT_MCP_BANK_ID."""
    if td.bank_argument:
        return args.get(td.bank_argument) or "", "argument", td.bank_argument
    if td.scope == "global":
        return "", "none", "bank_id"
    if not multi:
        return state.bank_id or "", "url", "bank_id"
    argument, alias = args.pop("bank_id", None), args.pop("collection_id", None)
    if argument and alias and argument != alias:
        raise InvalidArgument(
            "collection_id: is a synonym of bank_id; give one of them (or the same value)", "collection_id"
        )
    if argument:
        return argument, "argument", "bank_id"
    if alias:
        return alias, "alias", "collection_id"
    if state.header_bank:
        return state.header_bank, "header", "X-Bank-Id"
    return default, "default", "bank_id"


def tool_error(exc: HindsightError, named: str = "bank_id") -> CallToolResult:
    """A tool's failure as its result (SEP-1303): `isError`, the message as text for the model,
    and the body REST answers for the same error as structured content for a program (`error`:
    the code, `message`, `field`, an LLM failure's `cause`), with `retry_after` (seconds) for an
    error that goes away by itself (the database restarting, an LLM rate limit), as Retry-After
    says on REST. The engine names a bad bank `bank_id`; `named` is what the client called it."""
    body = exc.to_dict()
    if exc.field == "bank_id" and named != "bank_id":
        body["message"] = body["message"].replace("bank_id:", f"{named}:", 1)
        body["field"] = named
    if exc.retry_after is not None:
        body["retry_after"] = exc.retry_after
    return CallToolResult(
        content=[TextContent(type="text", text=body["message"])], structured_content=body, is_error=True
    )


class Internal(HindsightError):
    """A bug in a tool: the caller learns that much, the log gets the traceback."""

    status = 500
    code = "internal"

    def __init__(self) -> None:
        super().__init__("internal error in the tool (logged on the server); this call did not complete")


def protocol_error(message: str) -> MCPError:
    """A JSON-RPC error, for protocol faults only: a tool or prompt this server does not have."""
    return MCPError(INVALID_PARAMS, message)


def _handler(td: ToolDef, engine: Engine, multi: bool, resolver, local: bool = False):
    """`local`: a transport without HTTP (stdio), whose calls the handler puts on the audit log
    itself (over HTTP the server shell does, from the note the router put in the request)."""
    params = arguments(td.request) + _bank_arguments(td, multi)
    encoded = json_encoded(td.request)

    async def handler(**args: Any) -> Any:
        state: RequestState = args.pop(STATE_PARAM)
        if not local:
            return await served(state, args)
        note, started, t0 = AuditNote(transport="mcp"), time.time(), time.perf_counter()
        try:
            return await served(replace(state, audit=note), args)
        except BaseException:
            note.outcome = note.outcome or "internal"
            raise
        finally:
            bank = note.bank_id if isinstance(note.bank_id, str) and valid_bank_id(note.bank_id) else None
            seconds = time.perf_counter() - t0
            outcome = note.outcome or "ok"
            who = state.who.key_id or "stdio"  # `hindsight mcp` acts for whoever started it
            engine.audit.record(bank, "mcp", td.name, None, None, 200, outcome, who, uuid.uuid4().hex, started, seconds)

    async def served(state: RequestState, args: dict[str, Any]) -> Any:
        named = "bank_id"
        note = state.audit
        if note is not None:
            note.action = td.name
        with MCP_SECONDS.labels(td.name).time():
            try:
                default = state.who.default_bank or engine.settings.mcp_bank_id
                bank_id, source, named = _select_bank(td, multi, state, args, default)
                if note is not None:
                    note.bank_id = bank_id or args.get("bank_id") or None  # create_bank names it in its request
                call = Call(
                    engine=engine,
                    who=state.who,
                    bank_id=bank_id,
                    headers=state.end_user,
                    bank_source=source,
                    audit=note,
                )
                decode_json_arguments(args, encoded)
                result = await td.fn(call, parse(td.request, args) if td.request is not None else None)
            except Exception as exc:
                error = known(exc)
                if error is None:
                    log.exception("MCP tool %s failed", td.name)
                    error = Internal()
                MCP_CALLS.labels(td.name, "error").inc()
                if note is not None:
                    note.outcome = error.code
                return tool_error(error, named)
        MCP_CALLS.labels(td.name, "ok").inc()
        return lean(result) if td.lean_result else result

    state_param = inspect.Parameter(
        STATE_PARAM, inspect.Parameter.KEYWORD_ONLY, annotation=Annotated[RequestState, Resolve(resolver)]
    )
    handler.__name__ = td.name
    handler.__doc__ = td.description
    cast(Any, handler).__signature__ = inspect.Signature([*params, state_param], return_annotation=td.response)
    handler.__annotations__ = {p.name: p.annotation for p in [*params, state_param]} | {"return": td.response}
    return handler


def lean(result: BaseModel) -> CallToolResult:
    """The result without its null fields, its text block compact JSON. Why: a recall result is
    up to ~100 memories of ~20 fields, a third of them null in the usual memory (no document, not
    superseded, never invalidated). Written the SDK's way (nulls, JSON indented by two), a recall
    cut to 4,096 tokens of memories reached the agent as ~71 KB of text, ~18,000 tokens; this way
    ~43 KB. The official SDK client also checks every field of the structured copy against the
    output schema on each call, in Python; the schema marks these fields optional. Only the
    result's own fields go: values inside a memory's metadata are the caller's, nulls too."""
    text = result.model_dump_json(by_alias=True, exclude_none=True)  # one serialisation: NaN is null in both
    # json.loads, not pydantic_core.from_json (40 µs faster here): that stops at 200 levels, and
    # metadata read back may be nearly that deep inside the levels a result adds around it.
    return CallToolResult(content=[TextContent(type="text", text=text)], structured_content=json.loads(text))


# Arguments that choose a bank, in the spellings clients use. Other arguments a tool does not
# take are ignored (LLM agents add stray ones), but one of these would put the call on a bank the
# client did not mean: the URL's, or the server default's.
BANK_WORDS = {"bank_id", "bank", "bankId", "collection_id", "collectionId", "collection"}


def _middleware(accepted: dict[str, set[str]], top_level: set[str], multi: bool):
    """`accepted`: each tool's argument names on this surface."""

    async def middleware(ctx, call_next):
        params = ctx.params if isinstance(ctx.params, dict) else {}
        if ctx.method == "prompts/get":
            # This server has no prompts. The SDK takes a name it does not know for its own fault
            # (an error logged with its traceback, -32603) where it is the caller's, as an
            # unknown resource is (-32602).
            raise protocol_error(f"unknown prompt {params.get('name')!r}")
        if ctx.method != "tools/call":
            return await call_next(ctx)
        name = params.get("name")
        if not isinstance(name, str) or name not in accepted:
            raise protocol_error(f"unknown tool {name!r}")
        args = params.get("arguments")
        for word in sorted(BANK_WORDS & set(args or ()) - accepted[name]) if isinstance(args, dict) else ():
            where = "the multi-bank endpoint /mcp/ takes `bank_id`" if not multi else "use `bank_id`"
            MCP_CALLS.labels(name, "error").inc()
            return tool_error(
                InvalidArgument(f"{word}: {name} does not take it here (the bank is chosen elsewhere: {where})", word)
            )
        result = await call_next(ctx)
        if (
            name in top_level
            and isinstance(result, dict)
            and not result.get("isError")
            and isinstance(result.get("structuredContent"), dict)
        ):
            # RAG-over-MCP clients read `status`/`segments` (or `has_access`) at the top of the result.
            result = {**result["structuredContent"], **result}
        return result

    return middleware


def _description(td: ToolDef, multi: bool) -> str:
    if not (multi and td.scope == "bank"):
        return td.description
    extra = "`bank_id` (optional) selects the bank; default: X-Bank-Id header, then the server default."
    if td.collection_alias:
        extra += " `collection_id` is a synonym of `bank_id` (a collection is a bank)."
    return f"{td.description}\n\n{extra}"


def build_server(engine: Engine, multi: bool, local_state: RequestState | None = None) -> MCPServer:
    """`local_state` replaces the per-request state for transports without HTTP (stdio)."""

    async def fixed_state() -> RequestState:
        return cast(RequestState, local_state)

    resolver = fixed_state if local_state is not None else _from_scope
    tools = [td for td in TOOLS if multi or td.scope == "bank"]
    server = MCPServer(
        name="hindsight" if multi else "hindsight-bank",
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
        tools=[_tool(td, engine, multi, resolver, local_state is not None) for td in tools],
    )
    accepted = {td.name: {p.name for p in arguments(td.request) + _bank_arguments(td, multi)} for td in tools}
    server.middleware.append(_middleware(accepted, {td.name for td in tools if td.top_level_result}, multi))
    return server


def _tool(td: ToolDef, engine: Engine, multi: bool, resolver, local: bool = False) -> Tool:
    tool = ContractTool.from_function(
        _handler(td, engine, multi, resolver, local),
        name=td.name,
        description=_description(td, multi),
        annotations=ToolAnnotations(
            title=td.name.replace("_", " ").capitalize(),
            read_only_hint=td.read_only,
            destructive_hint=td.destructive,
            idempotent_hint=td.idempotent,
            open_world_hint=False,
        ),
    )
    # read live by the SDK (FuncMetadata), so the published schema is this one
    tool.fn_metadata.output_schema = with_tool_error(cheap_to_validate(tool.fn_metadata.output_schema))
    if td.lean_result:
        # A lean result is the dump of the tool's own response model, so the SDK's check of it
        # against that model on the way out can only pass and costs event-loop time a call
        # (bench/README.md, "Small retains in the query lane"). The schema stays.
        tool.fn_metadata.output_model = None
    return tool


def http_session_manager(server: MCPServer):
    """The SDK's own Streamable HTTP session manager, stateless with JSON responses. Routing and
    authentication are ours (routing.py). The SDK's DNS-rebinding guard is off: it allows only
    localhost names and would refuse a server reached by any other; no Host header is checked."""
    server.streamable_http_app(
        json_response=True,
        stateless_http=True,
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return server.session_manager
