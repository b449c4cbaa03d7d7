"""The ASGI application: FastAPI for REST, the MCP router for /mcp, one engine behind both."""

from __future__ import annotations

import contextlib
import gc
import logging
import re
import time
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from hindsight import __version__, malloc
from hindsight.api import banks, compat, documents, errors, json_weight, keys, memories, mental_models, oauth, system
from hindsight.api.console import console
from hindsight.api.drain import Drain
from hindsight.api.edge import Edge
from hindsight.config import Settings
from hindsight.engine.access.keys import PRINCIPAL, Principal
from hindsight.engine.errors import HindsightError, NotFound, TooLarge, known
from hindsight.engine.facade import Engine
from hindsight.mcp.routing import MCPRouter
from hindsight.mcp.servers import build_server, http_session_manager
from hindsight.metrics import HTTP_REQUESTS, HTTP_SECONDS
from hindsight.oauth import endpoints as oauth_endpoints
from hindsight.oauth.resource import Guard, endpoint_bank

log = logging.getLogger("hindsight")


class App:
    """Checks every request at the edge (api/edge.py) and counts it, then routes /mcp and
    /mcp/... to the MCP router without Starlette's slash redirects, and the rest to FastAPI.
    Stopping drains it (api/drain.py)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.engine = Engine(settings)
        self.mcp: MCPRouter | None = None  # while the MCP servers run (the lifespan)
        # OAuth (hindsight/oauth/): the MCP endpoints' guard when they are a protected resource,
        # and the authorization server's endpoints; both need the started engine's runtime.
        self.guard: Guard | None = None
        self.oauth: oauth_endpoints.Endpoints | None = None
        self.api = FastAPI(
            title="Hindsight",
            version=__version__,
            lifespan=self._lifespan,
            description="Postgres-native memory banks for AI agents (REST face; MCP at /mcp).",
            responses=errors.ERROR_RESPONSES,
        )
        self.api.state.engine = self.engine
        errors.install(self.api)
        for module in (system, banks, memories, mental_models, documents, keys, oauth):
            self.api.include_router(module.router)
        compat.install(self.api)
        self.api.mount("/ui", console(), name="ui")
        self.edge = Edge(settings)
        self.drainer = Drain()
        # Pages of the origins the operator allowed get CORS answers (their browsers need them);
        # any other page is refused by the edge before it gets here.
        self.checked = self._checked
        if self.edge.origins or self.edge.any_origin:
            self.checked = CORSMiddleware(
                self._checked,
                allow_origins=["*"] if self.edge.any_origin else sorted(self.edge.origins),
                allow_methods=["*"],
                allow_headers=["*"],
                expose_headers=["mcp-session-id", "www-authenticate"],
            )

    @contextlib.asynccontextmanager
    async def _lifespan(self, _: FastAPI) -> AsyncIterator[None]:
        engine, settings = self.engine, self.settings
        if not engine.started:  # `hindsight serve` starts it earlier; plain ASGI hosts start it here
            await engine.start()
        async with contextlib.AsyncExitStack() as stack:
            if settings.oauth_resource:
                external = None
                if settings.oauth_issuer:  # PyJWT loads only for an external issuer (~2 MB)
                    from hindsight.oauth.external import IssuerTokens

                    external = IssuerTokens(settings)
                self.guard = Guard(engine.rt, engine.authenticate, external)
            self.oauth = oauth_endpoints.Endpoints(engine.rt)
            if settings.mcp_enabled:
                single = http_session_manager(build_server(engine, False))
                multi = http_session_manager(build_server(engine, True))
                await stack.enter_async_context(single.run())
                await stack.enter_async_context(multi.run())
                self.mcp = MCPRouter(engine, single, multi, self._mcp_principal)
            log.warning(
                "hindsight %s ready: %s; %s; MCP %s; auth %s",
                __version__,
                engine.lifecycle.database_label,
                engine.lifecycle.llm_label,
                "on /mcp" if settings.mcp_enabled else "disabled",
                _auth_label(settings),
            )
            # What start-up made (modules, the app, the model: ~150,000 objects) lives as long as
            # the process: frozen, a full collection no longer walks it (~80 ms of the event loop
            # each time). A request's objects die by reference count; collecting the young
            # generation every 10,000 allocations instead of 700 stops promoting the objects of
            # requests in flight. Under the LoCoMo load, collections took 5.1 s of the loop and
            # now 0.3 s (bench/README.md, "Garbage collection after start-up").
            gc.collect()
            gc.freeze()
            gc.set_threshold(10_000, 10, 10)
            malloc.started()
            try:
                yield
            finally:
                self.mcp = None
                self.guard = None
                self.oauth = None
        await engine.close()

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.api(scope, receive, send)
        status = 500
        t0 = time.perf_counter()

        async def counted(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.drainer(scope, receive, counted, self.checked)
        finally:
            route = _route_label(scope)
            HTTP_SECONDS.labels(scope["method"], route).observe(time.perf_counter() - t0)
            HTTP_REQUESTS.labels(scope["method"], route, str(status)).inc()

    async def drain(self, grace: float) -> None:
        """Stop taking requests and let those in flight finish (api/drain.py); the server stops after."""
        worker = self.engine.worker if self.engine.started else None
        await self.drainer.drain(grace, worker.release_waiters if worker else None)

    async def _checked(self, scope, receive, send):
        refused = self.edge.refusal(scope)
        if refused is None:
            try:
                await self._authenticate_first(scope)
                receive = self._bounded(scope, receive)
            except HindsightError as exc:
                refused = exc
            except Exception as exc:  # checking a key reads the database
                if (refused := known(exc)) is None:
                    raise
        if refused is not None:
            return await errors.send_error(refused, scope, receive, send)
        path = scope["path"]
        target = self.api
        if path == "/mcp" or path.startswith("/mcp/"):
            if self.mcp is None:
                why = "MCP is disabled on this server" if not self.settings.mcp_enabled else "server is starting"
                return await errors.send_error(NotFound(why), scope, receive, send)
            target = self.mcp
        elif oauth_endpoints.handles(path):
            if self.oauth is None:
                return await errors.send_error(NotFound("server is starting"), scope, receive, send)
            target = self.oauth
        started = False

        async def tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await target(scope, receive, tracked)
        except TooLarge as exc:  # from _bounded, while the route or the MCP server read the body
            if not started:
                await errors.send_error(exc, scope, receive, send)
        except Exception as exc:
            # The OAuth endpoints refuse with the engine's errors, and may meet a database outage.
            if not started and (error := known(exc)) is not None:
                return await errors.send_error(error, scope, receive, send)
            # A bug: FastAPI's last handler answered 500 and logged it (api/errors.py), then
            # Starlette re-raises it, which made uvicorn log it again and close the connection.
            if not started:
                raise

    def _bounded(self, scope, receive):
        """`receive`, refusing a body past HINDSIGHT_API_MAX_REQUEST_BYTES: at once when
        Content-Length says so, else as soon as that much has arrived (a chunked body), so a
        huge body is never held in memory whole. Its JSON is weighed as it arrives
        (api/json_weight.py): a body whose parsing would allocate many times its size is refused
        before it is parsed, as soon as no rest of the body could make up for it. A bank import
        file streams to disk under its own limit (api/banks.py)."""
        limit = self.settings.max_request_bytes
        if scope["method"] == "POST" and _BANK_IMPORT.fullmatch(scope["path"]):
            return receive
        too_large = TooLarge(f"body: larger than the limit of {limit} bytes (HINDSIGHT_API_MAX_REQUEST_BYTES)")
        for k, v in scope.get("headers", []):
            if k == b"content-length" and v.isdigit() and int(v) > limit:
                raise too_large
        weight = json_weight.JsonWeight()
        hopeless = max(json_weight.FREE, json_weight.PER_BYTE * limit)

        async def bounded():
            message = await receive()
            weight.feed(message.get("body", b""))
            if weight.size > limit:
                raise too_large
            if weight.weight() > hopeless or (not message.get("more_body", False) and weight.too_heavy()):
                raise TooLarge(
                    f"body: its JSON would take ~{weight.weight() // 2**20} MiB of memory to parse, more than "
                    f"{json_weight.FREE // 2**20} MiB and {json_weight.PER_BYTE} bytes for each byte of the body "
                    "(many small values, very long numbers, or characters past U+FFFF in a long text): "
                    "split the request"
                )
            return message

        return bounded

    async def _authenticate_first(self, scope) -> None:
        """With API keys (or OAuth) on, a request that carries a body is authenticated before
        anything reads it: an anonymous client must not make the server read and parse hundreds of
        megabytes to be told 401. The principal is kept in the scope for the route or the MCP
        router. The consent page's requests authenticate in their route: refusing needs no key."""
        if scope["method"] not in ("POST", "PUT", "PATCH", "DELETE"):
            return
        path = scope["path"]
        if path == "/mcp" or path.startswith("/mcp/"):
            if self.settings.auth_enabled or self.settings.oauth_resource:
                scope[PRINCIPAL] = await self._mcp_principal(scope)
        elif self.settings.auth_enabled and path.startswith("/v1/") and not path.startswith("/v1/oauth/consent/"):
            scope[PRINCIPAL] = await self.engine.authenticate(_authorization(scope))

    async def _mcp_principal(self, scope) -> Principal:
        """Who calls an MCP endpoint: the OAuth guard's answer (a token or an API key, else a 401
        challenge naming the endpoint's resource metadata), or the API key alone."""
        if self.guard is not None:
            return await self.guard.principal(scope, endpoint_bank(scope["path"]))
        return await self.engine.authenticate(_authorization(scope))


def create_app(settings: Settings) -> App:
    return App(settings)


# The one route whose body is not JSON and not held in memory: an export file, streamed to disk.
_BANK_IMPORT = re.compile(r"/v1/banks/[^/]+/import")


def _authorization(scope) -> str | None:
    return next((v.decode("latin-1") for k, v in scope.get("headers", []) if k == b"authorization"), None)


def _auth_label(settings: Settings) -> str:
    keys = "API keys" if settings.auth_enabled else "open (no API key required)"
    if settings.oauth_issuer and settings.oauth_resource:
        return f"{keys}; MCP takes OAuth tokens of {settings.oauth_issuer}"
    if settings.oauth_server:
        return f"{keys}; OAuth 2.1 on MCP (built-in authorization server)"
    return keys


def _route_label(scope) -> str:
    """The route template, never the path itself: bank ids must not become label values."""
    path = scope["path"]
    if path == "/mcp" or path.startswith("/mcp/"):
        return "/mcp" if path.rstrip("/") == "/mcp" else "/mcp/{bank_id}"
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"
