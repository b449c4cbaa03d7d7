"""The ASGI application: FastAPI for REST, the MCP router for /mcp, one engine behind both."""

from __future__ import annotations

import contextlib
import logging
import time

from fastapi import FastAPI, Request, Response
from fastapi.responses import JSONResponse, PlainTextResponse, RedirectResponse
from starlette.middleware.cors import CORSMiddleware

from .. import __version__
from ..config import Settings
from ..engine import Engine
from ..engine.errors import RETRY_AFTER
from ..mcp.routing import MCPRouter, send_json
from ..mcp.surfaces import build_server, http_session_manager
from ..metrics import HTTP_REQUESTS, HTTP_SECONDS, scrape
from . import banks, compat, documents, errors, keys, memories, mental_models
from .console import console
from .drain import Drain
from .edge import Edge

log = logging.getLogger("hindsight")


def create_app(settings: Settings) -> RootApp:
    engine = Engine(settings)
    holder: dict = {}

    @contextlib.asynccontextmanager
    async def lifespan(app: FastAPI):
        if not engine.started:  # `hindsight serve` starts it earlier; plain ASGI hosts start it here
            await engine.start()
        async with contextlib.AsyncExitStack() as stack:
            if settings.mcp_enabled:
                single = http_session_manager(build_server(engine, False))
                multi = http_session_manager(build_server(engine, True))
                await stack.enter_async_context(single.run())
                await stack.enter_async_context(multi.run())
                holder["mcp"] = MCPRouter(engine, single, multi)
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
                holder.pop("mcp", None)
        await engine.close()

    api = FastAPI(
        title="Hindsight",
        version=__version__,
        lifespan=lifespan,
        description="Postgres-native memory banks for AI agents (REST face; MCP at /mcp).",
        responses=errors.ERROR_RESPONSES,
    )
    api.state.engine = engine
    errors.install(api)
    api.include_router(banks.router)
    api.include_router(memories.router)
    api.include_router(mental_models.router)
    api.include_router(documents.router)
    api.include_router(keys.router)
    compat.install(api)

    @api.get("/health", tags=["system"], summary="Liveness and configuration summary (no key needed)")
    async def health() -> dict:
        """Never touches the database: a live process with a dead database is still live (and
        restarts an embedded one by itself); /health/ready says whether requests can be served."""
        return {
            "status": "ok",
            "version": __version__,
            "database": "external" if settings.database_url else "embedded",
            "embedding_model": engine.embedder.name if engine.started else None,
            "mcp": settings.mcp_enabled,
            "auth": settings.auth_enabled,
            "llm": {p: engine.llm.model_name(p) for p in ("retain", "reflect")} if engine.started else None,
            "mode": "llm" if engine.started and engine.llm.enabled else "offline (no LLM configured)",
            "worker": {
                "concurrency": settings.worker_concurrency,
                "running": len(engine.worker.running) if engine.started else 0,
            },
        }

    @api.get(
        "/metrics",
        tags=["system"],
        summary="Prometheus metrics (open, or admin key with HINDSIGHT_API_METRICS_ADMIN_ONLY)",
        response_class=PlainTextResponse,
        responses={200: {"content": {"text/plain": {"schema": {"type": "string"}}}}},
    )
    async def metrics(request: Request):
        if settings.metrics_admin_only:
            (await engine.authenticate(request.headers.get("authorization"))).require_admin()
        body, content_type = await scrape(engine)
        return Response(body, media_type=content_type)

    @api.get("/", include_in_schema=False)
    async def home():
        return RedirectResponse("/ui/")

    api.mount("/ui", console(), name="ui")

    @api.get("/health/ready", tags=["system"], summary="Readiness: the database answers a ping (no key needed)")
    @api.get("/ready", tags=["system"], include_in_schema=False)
    async def ready():
        """200 only while requests can be served; 503 with the reason otherwise (starting, the
        embedded PostgreSQL restarting, the database not answering within PING_TIMEOUT). The
        `status` field is what Hindsight's clients read."""
        problem = await engine.database_problem()
        database = "external" if settings.database_url else "embedded"
        if problem is None:
            return {"ready": True, "status": "ready", "database": database}
        return JSONResponse(
            {"ready": False, "status": "unavailable", "database": database, "reason": problem},
            status_code=503,
            headers={"Retry-After": str(RETRY_AFTER)},
        )

    return RootApp(api, holder, settings)


class RootApp:
    """Checks every request at the edge (api/edge.py), then routes /mcp and /mcp/... to the MCP
    router without Starlette's slash redirects, and the rest to FastAPI."""

    def __init__(self, api: FastAPI, holder: dict, settings: Settings):
        self.api = api
        self.holder = holder
        self.settings = settings
        self.engine = api.state.engine
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
            return await send_json(send, *refused)
        await self._dispatch(scope, receive, send)

    async def _dispatch(self, scope, receive, send):
        path = scope["path"]
        if path == "/mcp" or path.startswith("/mcp/"):
            router = self.holder.get("mcp")
            if router is None:
                return await send_json(
                    send,
                    404,
                    {
                        "error": "not_found",
                        "message": "MCP is disabled on this server"
                        if not self.settings.mcp_enabled
                        else "server is starting",
                    },
                )
            return await router(scope, receive, send)
        await self.api(scope, receive, send)


def _route_label(scope) -> str:
    """The route template, never the path itself: bank ids must not become label values."""
    path = scope["path"]
    if path == "/mcp" or path.startswith("/mcp/"):
        return "/mcp" if path.rstrip("/") == "/mcp" else "/mcp/{bank_id}"
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"
