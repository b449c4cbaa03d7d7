"""The web console's files (hindsight/ui), served at /ui by the same server.

The files are public (they hold no data); everything they show comes from the REST API with
the person's key. The headers keep anything that slipped into the page from running: scripts,
styles and connections only from this server, no framing, no referrer.
"""

from __future__ import annotations

from pathlib import Path

from starlette.staticfiles import StaticFiles

UI_DIR = Path(__file__).resolve().parent.parent / "ui"
HEADERS = [
    (
        b"content-security-policy",
        b"default-src 'self'; script-src 'self'; style-src 'self'; img-src 'self' data: blob:;"
        b" connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
    ),
    (b"x-content-type-options", b"nosniff"),
    (b"x-frame-options", b"DENY"),
    (b"referrer-policy", b"no-referrer"),
    (b"cache-control", b"no-cache"),
]


def console():
    files = StaticFiles(directory=UI_DIR, html=True)

    async def app(scope, receive, send):
        async def secured(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), *HEADERS]}
            await send(message)

        await files(scope, receive, secured)

    return app
