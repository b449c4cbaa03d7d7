"""Every HTTP request counted and timed for /metrics (hindsight_http_requests_total and
hindsight_http_request_seconds), labelled by the route's template, never by its path: bank ids
must not become label values."""

from __future__ import annotations

import time

from hindsight.metrics import HTTP_REQUESTS, HTTP_SECONDS
from hindsight.server.auth_first import is_mcp


class RequestMetrics:
    """Middleware, the outermost: what it counts is what the client got, refusals included."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        status = 500
        t0 = time.perf_counter()

        async def counted(message):
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            await send(message)

        try:
            await self.app(scope, receive, counted)
        finally:
            route = route_label(scope)
            HTTP_SECONDS.labels(scope["method"], route).observe(time.perf_counter() - t0)
            HTTP_REQUESTS.labels(scope["method"], route, str(status)).inc()


def route_label(scope) -> str:
    """The route template (FastAPI leaves the matched route in the scope), /mcp or /mcp/{bank_id}
    for the MCP endpoints, else "unmatched"."""
    path = scope["path"]
    if is_mcp(path):
        return "/mcp" if path.rstrip("/") == "/mcp" else "/mcp/{bank_id}"
    route = scope.get("route")
    return getattr(route, "path", None) or "unmatched"
