"""Stopping without dropping requests.

Why: uvicorn on SIGTERM closes its listening socket at once and, after its graceful timeout,
cancels what still runs, which the client saw as a reset connection or a 500 ("Cancel 8 running
task(s)"). Here a stop is a drain instead: readiness turns false first, new requests get 503
with `Retry-After` (the socket stays open, so clients are told, not refused), requests in flight
get the grace period to finish, and only then does the server stop (the worker, then the
embedded PostgreSQL). A request still running at the end of the grace period is cancelled,
which rolls its transaction back, and is answered 503 with `Retry-After`: nothing of it stored,
and the client knows to send it again.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable

from starlette.responses import JSONResponse

from hindsight.web.errors import Stopping, send_error

log = logging.getLogger("hindsight")

# Probes keep answering while the server drains: liveness stays up, readiness says it is stopping.
READINESS = {"/ready", "/health/ready"}
LIVENESS = {"/health", "/health/live", "/metrics"}


class Drain:
    """Middleware that runs requests while the server serves, and refuses them once it drains."""

    def __init__(self, app) -> None:
        self.app = app
        self.draining = False
        self.expired = False
        self.inflight: set[asyncio.Task] = set()

    async def __call__(self, scope, receive, send) -> None:
        """Run one HTTP request, or refuse it while the server drains."""
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        path = scope["path"]
        if self.draining:
            send = _closing_send(send)
            if path in READINESS:
                body = {"ready": False, "status": "unavailable", "reason": "the server is stopping"}
                return await JSONResponse(body, status_code=503)(scope, receive, send)
            if path not in LIVENESS:
                return await send_error(Stopping(), scope, receive, send)
        task = asyncio.current_task()
        assert task is not None
        started = False

        async def tracked(message):
            nonlocal started
            if message["type"] == "http.response.start":
                started = True
                if self.draining:
                    message = closing(message)
            await send(message)

        self.inflight.add(task)
        try:
            await self.app(scope, receive, tracked)
        except asyncio.CancelledError:
            if not self.expired or started:
                raise
            task.uncancel()
            await send_error(Stopping(), scope, receive, send)
        finally:
            self.inflight.discard(task)

    async def drain(self, grace: float, before_cancel: Callable[[], None] | None = None) -> None:
        """Refuse new requests, give those in flight `grace` seconds, then cancel the rest.
        `before_cancel` runs first at the deadline (the worker stops keeping `wait=true` callers
        waiting, so they answer with what they have rather than being cancelled)."""
        self.draining = True
        log.warning("stopping: %d request(s) in flight get up to %g s to finish", len(self.inflight), grace)
        loop = asyncio.get_running_loop()
        deadline = loop.time() + grace
        while self.inflight and loop.time() < deadline:
            await asyncio.sleep(0.05)
        if self.inflight and before_cancel is not None:
            before_cancel()
            settle = loop.time() + 1.0
            while self.inflight and loop.time() < settle:
                await asyncio.sleep(0.05)
        if self.inflight:
            log.warning(
                "stopping: %d request(s) still running after %g s: rolled back, answered 503", len(self.inflight), grace
            )
            self.expired = True
            for task in list(self.inflight):
                task.cancel()
            settle = loop.time() + 5.0
            while self.inflight and loop.time() < settle:
                await asyncio.sleep(0.05)


def closing(start: dict) -> dict:
    """A response start that tells the client to close the connection after it: while the server
    drains, every response says so, so clients stop reusing connections before they are closed."""
    headers = [(k, v) for k, v in start.get("headers", []) if k.lower() != b"connection"]
    return {**start, "headers": [*headers, (b"connection", b"close")]}


def _closing_send(send):
    async def sent(message):
        await send(closing(message) if message["type"] == "http.response.start" else message)

    return sent
