"""The server shell: the ASGI application uvicorn runs. Each concern is one middleware, from the
outside in:

- request_metrics.RequestMetrics: every request counted and timed, refusals included;
- request_id.RequestId: every request's id (the client's X-Request-Id, or one made), answered;
- audit_trail.AuditTrailMiddleware: every request that reads or changes a bank on the record;
- drain.Drain: requests refused, and those in flight finished, while the server stops;
- Starlette's CORSMiddleware, only for the web origins the operator allowed;
- error_answers.ErrorAnswers: what the checks below and the faces raise, answered;
- host_origin.HostOriginGuard: browsers held off (Host and Origin, the MCP specification's rule);
- role_paths.WorkerPaths, in a `worker` process only: nothing but the probes and metrics;
- url_text.UrlTextGuard: path and query held to the text rule;
- auth_first.AuthBeforeBody: a request with a body authenticated before it is read;
- body_limit.BodyLimit: the body's size and JSON weight bounded as it arrives;

then routing.py sends the request to its face: the MCP router (mcp/routing.py), the OAuth
endpoints (oauth/endpoints.py) or the REST application (api/rest.py). The lifespan starts the
engine and what needs it running (the MCP servers, OAuth), and stops them.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import AsyncIterator

from starlette.middleware.cors import CORSMiddleware
from starlette.types import ASGIApp

from hindsight import __version__, malloc
from hindsight.api.rest import build_rest
from hindsight.config import Settings
from hindsight.engine.access.keys import Principal
from hindsight.engine.facade import Engine
from hindsight.mcp.on_demand import OnDemand
from hindsight.mcp.routing import MCPRouter
from hindsight.mcp.servers import build_server, http_session_manager
from hindsight.oauth import endpoints as oauth_endpoints
from hindsight.oauth.resource import Guard, endpoint_bank
from hindsight.server.audit_trail import AuditTrailMiddleware
from hindsight.server.auth_first import AuthBeforeBody, is_mcp
from hindsight.server.body_limit import BodyLimit
from hindsight.server.drain import Drain
from hindsight.server.error_answers import ErrorAnswers
from hindsight.server.host_origin import HostOriginGuard, HostOriginRules
from hindsight.server.request_id import RequestId
from hindsight.server.request_metrics import RequestMetrics
from hindsight.server.role_paths import WorkerPaths
from hindsight.server.routing import Face, router
from hindsight.server.url_text import UrlTextGuard
from hindsight.web.scope import authorization

log = logging.getLogger("hindsight")


class App:
    """The engine, the faces and the middleware around them; `drain` stops it without dropping
    requests (server/drain.py)."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.engine = Engine(settings)
        self.api = build_rest(self.engine)
        # Made by the lifespan, on the started engine's runtime: the MCP router (when MCP is on),
        # the MCP endpoints' OAuth guard (when they are a protected resource) and the OAuth
        # authorization server's endpoints.
        self.mcp: MCPRouter | None = None
        self.guard: Guard | None = None
        self.oauth: oauth_endpoints.Endpoints | None = None
        faces = [
            Face(is_mcp, lambda: self.mcp, self._mcp_absent),
            Face(oauth_endpoints.handles, lambda: self.oauth, lambda: "server is starting"),
        ]
        app: ASGIApp = router(faces, self.api, self.lifespan)
        app = BodyLimit(app, settings)
        app = AuthBeforeBody(app, settings, self.engine.authenticate, self.mcp_principal)
        app = UrlTextGuard(app)
        if settings.role == "worker":
            app = WorkerPaths(app)
        rules = HostOriginRules(settings)
        app = ErrorAnswers(HostOriginGuard(app, rules))
        if rules.origins or rules.any_origin:
            # Pages of the origins the operator allowed get CORS answers (their browsers need
            # them); any other page is refused by the Host/Origin guard.
            app = CORSMiddleware(
                app,
                allow_origins=["*"] if rules.any_origin else sorted(rules.origins),
                allow_methods=["*"],
                allow_headers=["*"],
                expose_headers=["mcp-session-id", "www-authenticate", "x-request-id"],
            )
        self.drainer = Drain(app)
        audited = AuditTrailMiddleware(self.drainer, lambda: self.engine.audit, self.api.state.routes)
        self.app = RequestMetrics(RequestId(audited))

    async def __call__(self, scope, receive, send):
        await self.app(scope, receive, send)

    async def drain(self, grace: float) -> None:
        """Stop taking requests and let those in flight finish (server/drain.py); the server stops after."""
        worker = self.engine.worker if self.engine.started else None
        await self.drainer.drain(grace, worker.release_waiters if worker else None)

    @contextlib.asynccontextmanager
    async def lifespan(self, _app=None) -> AsyncIterator[None]:
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
            if settings.mcp_enabled and settings.role != "worker":
                # each built by its first request (mcp/on_demand.py), stopped with the app
                single = OnDemand(lambda: http_session_manager(build_server(engine, False)))
                multi = OnDemand(lambda: http_session_manager(build_server(engine, True)))
                stack.push_async_callback(single.close)
                stack.push_async_callback(multi.close)
                self.mcp = MCPRouter(engine, single, multi, self.mcp_principal)
            log.warning(
                "hindsight %s ready: %s; %s; MCP %s; auth %s",
                __version__,
                engine.lifecycle.database_label,
                engine.lifecycle.llm_label,
                "on /mcp" if settings.mcp_enabled else "disabled",
                _auth_label(settings),
            )
            malloc.started()
            try:
                yield
            finally:
                self.mcp = None
                self.guard = None
                self.oauth = None
        await engine.close()

    async def mcp_principal(self, scope) -> Principal:
        """Who calls an MCP endpoint: the OAuth guard's answer (a token or an API key, else a 401
        challenge naming the endpoint's resource metadata), or the API key alone."""
        if self.guard is not None:
            return await self.guard.principal(scope, endpoint_bank(scope["path"]))
        return await self.engine.authenticate(authorization(scope))

    def _mcp_absent(self) -> str:
        return "MCP is disabled on this server" if not self.settings.mcp_enabled else "server is starting"


def create_app(settings: Settings) -> App:
    return App(settings)


def _auth_label(settings: Settings) -> str:
    keys = "API keys" if settings.auth_enabled else "open (no API key required)"
    if settings.oauth_issuer and settings.oauth_resource:
        return f"{keys}; MCP takes OAuth tokens of {settings.oauth_issuer}"
    if settings.oauth_server:
        return f"{keys}; OAuth 2.1 on MCP (built-in authorization server)"
    return keys
