"""Which face a request goes to, with no slash redirects: `/mcp` and `/mcp/...` to the MCP router,
the OAuth protocol paths to the OAuth endpoints, everything else to the REST application. The MCP
router and the OAuth endpoints exist only while the server runs (the lifespan makes them), so a
request that comes while they do not is answered 404 with why."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from starlette.routing import BaseRoute, Match, NoMatchFound, Router
from starlette.types import ASGIApp

from hindsight.engine.errors import NotFound


class Face(BaseRoute):
    """Every HTTP path `matches` accepts, handled by what `app()` returns now, or refused with
    `absent()` when that is None. The path reaches the face as the client sent it."""

    def __init__(self, matches: Callable[[str], bool], app: Callable[[], ASGIApp | None], absent: Callable[[], str]):
        self.matches_path = matches
        self.app = app
        self.absent = absent

    def matches(self, scope) -> tuple[Match, dict]:
        if scope["type"] == "http" and self.matches_path(scope["path"]):
            return Match.FULL, {}
        return Match.NONE, {}

    def url_path_for(self, name: str, /, **path_params: Any):
        raise NoMatchFound(name, path_params)

    async def handle(self, scope, receive, send) -> None:
        app = self.app()
        if app is None:
            raise NotFound(self.absent())
        await app(scope, receive, send)


def router(faces: list[Face], rest: ASGIApp, lifespan) -> Router:
    """The faces first, then the REST application for every other request (and websockets); the
    server's `lifespan` runs on this router."""

    async def rest_app(scope, receive, send) -> None:
        # The REST application's own router must be the one its requests resolve names with.
        if scope.get("router") is outer:
            del scope["router"]
        await rest(scope, receive, send)

    outer = Router(routes=list(faces), redirect_slashes=False, default=rest_app, lifespan=lifespan)
    return outer
