"""Authentication before the body: with API keys (or OAuth) on, a request that carries a body is
authenticated before anything reads it, so an anonymous client cannot make the server read and
parse hundreds of megabytes to be told 401. The principal is kept in the scope (web/scope.py)
for the route or the MCP router. The consent page's requests authenticate in their route:
refusing needs no key."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from hindsight.config import Settings
from hindsight.engine.access.keys import Principal
from hindsight.web.scope import PRINCIPAL, authorization

BODY_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})


def is_mcp(path: str) -> bool:
    return path == "/mcp" or path.startswith("/mcp/")


class AuthBeforeBody:
    """Middleware. `rest_principal(authorization)` checks an API key; `mcp_principal(scope)` is the
    MCP endpoints' check (an OAuth token or an API key, server/app.py). Their errors are raised
    to error_answers.py."""

    def __init__(
        self,
        app,
        settings: Settings,
        rest_principal: Callable[[str | None], Awaitable[Principal]],
        mcp_principal: Callable[[Any], Awaitable[Principal]],
    ):
        self.app = app
        self.settings = settings
        self.rest_principal = rest_principal
        self.mcp_principal = mcp_principal

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and scope["method"] in BODY_METHODS:
            path, s = scope["path"], self.settings
            if is_mcp(path):
                if s.auth_enabled or s.oauth_resource:
                    scope[PRINCIPAL] = await self.mcp_principal(scope)
            elif s.auth_enabled and path.startswith("/v1/") and not path.startswith("/v1/oauth/consent/"):
                scope[PRINCIPAL] = await self.rest_principal(authorization(scope))
        await self.app(scope, receive, send)
