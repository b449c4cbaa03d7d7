"""Errors the server shell and the faces raise before a response has started, answered in one
place (web/errors.answer): the shell's refusals (Host, Origin, URL text, authentication, body
limits), a body found too large while a route or MCP server read it, the OAuth endpoints'
refusals and a database outage met there. A bug before any response is re-raised for uvicorn to
log. Once a response has started nothing more can be said: FastAPI answers a bug in a route
with a 500 and logs it before Starlette re-raises it, and raising it again would make uvicorn
log it twice and drop the connection, so it ends here."""

from __future__ import annotations

from hindsight.engine.errors import known
from hindsight.web.errors import send_error


class ErrorAnswers:
    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        started = False

        async def tracked(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, tracked)
        except Exception as exc:
            if started:
                return
            if (error := known(exc)) is None:
                raise
            await send_error(error, scope, receive, send)
