"""The ASGI application: FastAPI for REST, the MCP router for /mcp, one engine behind both."""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import AsyncIterator

from fastapi import FastAPI
from starlette.middleware.cors import CORSMiddleware

from .. import __version__
from ..config import Settings
from ..engine.core import Engine
from ..engine.errors import NotFound
from ..mcp.routing import MCPRouter
from ..mcp.surfaces import build_server, http_session_manager
from ..metrics import HTTP_REQUESTS, HTTP_SECONDS
from . import banks, compat, documents, errors, keys, memories, mental_models, system
from .console import console
from .drain import Drain
from .edge import Edge

log = logging.getLogger("hindsight")


class App:
    """Checks every request at the edge (api/edge.py) and counts it, then routes /mcp and
    /mcp/... to the MCP router without Starlette's slash redirects, and the rest to FastAPI.
    Stopping drains it (api/drain.py)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.engine = Engine(settings)
        self.mcp: MCPRouter | None = None  # while the MCP servers run (the lifespan)
        self.api = FastAPI(
            title="Hindsight",
            version=__version__,
            lifespan=self._lifespan,
            description="Postgres-native memory banks for AI agents (REST face; MCP at /mcp).",
            responses=errors.ERROR_RESPONSES,
        )
        self.api.state.engine = self.engine
        errors.install(self.api)
        for module in (system, banks, memories, mental_models, documents, keys):
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
            if settings.mcp_enabled:
                single = http_session_manager(build_server(engine, False))
                multi = http_session_manager(build_server(engine, True))
                await stack.enter_async_context(single.run())
                await stack.enter_async_context(multi.run())
                self.mcp = MCPRouter(engine, single, multi)
            log.warning(
                "hindsight %s ready: %s; %s; MCP %s; auth %s",
                __version__,
                engine.database_label,
                engine.llm_label,
                "on /mcp" if settings.mcp_enabled else "disabled",
                "API keys" if settings.auth_enabled else "open (no API key required)",
            )
            try:
                yield
            finally:
                self.mcp = None
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
        if refused is not None:
            return await errors.send_error(refused, scope, receive, send)
        path = scope["path"]
        if path == "/mcp" or path.startswith("/mcp/"):
            if self.mcp is None:
                why = "MCP is disabled on this server" if not self.settings.mcp_enabled else "server is starting"
                return await errors.send_error(NotFound(why), scope, receive, send)
            return await self.mcp(scope, receive, send)
        await self.api(scope, receive, send)


def create_app(settings: Settings) -> App:
    return App(settings)


def _route_label(scope) -> str:
    """The route template, never the path itself: bank ids must not become label values."""
    path = scope["path"]
    if path == "/mcp" or path.startswith("/mcp/"):
        return "/mcp" if path.rstrip("/") == "/mcp" else "/mcp/{bank_id}"
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"
