"""uvicorn's server, stopped by draining (server/drain.py) instead of by cutting requests off.

uvicorn's own signal handler sets `should_exit` at the first SIGTERM or Ctrl-C, which closes the
listening socket at once. The first signal here starts a drain instead, and `should_exit` is
set when it is done; a second signal is uvicorn's (a second Ctrl-C forces the exit). uvicorn
still re-raises the captured signal once it has shut down, as it would have.
"""

from __future__ import annotations

import asyncio
import socket
import sys
from types import FrameType

import uvicorn

from hindsight import logs
from hindsight.config import Settings
from hindsight.server.app import App, create_app


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: App, grace: float, linger: float):
        super().__init__(config)
        self.app = app
        self.grace = grace
        self.linger = linger
        self._loop: asyncio.AbstractEventLoop | None = None
        self._draining: asyncio.Task | None = None

    async def serve(self, sockets=None) -> None:
        self._loop = asyncio.get_running_loop()
        await super().serve(sockets)

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self._loop is None or self._draining is not None or self.should_exit or not self.started:
            return super().handle_exit(sig, frame)
        self._captured_signals.append(sig)
        self._loop.call_soon_threadsafe(self._start_drain)

    def _start_drain(self) -> None:
        async def drain() -> None:
            try:
                await self.app.drain(self.grace)
            finally:
                self.should_exit = True

        self._draining = asyncio.ensure_future(drain())

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        """After the drain: stop accepting connections, then keep the idle keep-alive ones open for
        up to `linger` seconds before uvicorn closes them. The drain still answers, so a request
        sent on one meanwhile gets 503 with Connection: close and its client reconnects (and is
        refused at connect): a connection is never closed under a request a client just sent on
        it, as long as the client drops connections idle for less than `linger`."""
        for server in self.servers:
            server.close()
        for sock in sockets or []:
            sock.close()
        loop = asyncio.get_running_loop()
        deadline = loop.time() + self.linger
        while self.server_state.connections and loop.time() < deadline:
            await asyncio.sleep(0.05)
        await super().shutdown(sockets)


def serve_settings(settings: Settings) -> int:
    """Run the server in this process (`settings.workers` > 1: server/workers.py)."""
    logs.configure(settings.log_format, settings.log_level)
    return run(settings)


def uvicorn_config(settings: Settings, app: App) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,  # uvicorn's records go to the handler logs.configure() installed
        log_level=settings.log_level,
        lifespan="on",
        timeout_keep_alive=settings.keep_alive_timeout,
        # requests were drained already (server/drain.py): this only bounds closing idle connections
        timeout_graceful_shutdown=5,
    )


def run(settings: Settings, sockets: list[socket.socket] | None = None, scheduler: bool = True, ready=None) -> int:
    """One server process: the engine, then uvicorn on its own port or on the parent's socket."""
    app = create_app(settings)
    server = DrainingServer(uvicorn_config(settings, app), app, settings.shutdown_grace, settings.shutdown_linger)

    async def run() -> int:
        # Start the engine before serving so that a database or model problem ends with one
        # clear line instead of uvicorn's lifespan traceback.
        try:
            await app.engine.start(run_scheduler=scheduler)
        except Exception as exc:
            print(f"hindsight: cannot start: {exc}", file=sys.stderr, flush=True)
            await app.engine.close()
            return 1
        if ready is not None:
            asyncio.get_running_loop().call_later(0, _when_started, server, ready)
        await server.serve(sockets)
        return 0 if server.started else 1

    with asyncio.Runner(loop_factory=_loop_factory()) as runner:
        return runner.run(run())


def _when_started(server: DrainingServer, ready) -> None:
    if server.started:
        ready.set()
    elif not server.should_exit:
        asyncio.get_running_loop().call_later(0.05, _when_started, server, ready)


def _loop_factory():
    """uvloop where it is installed (uvicorn[standard] brings it, except on Windows), the loop
    uvicorn itself would pick: we run its `serve()` inside our own loop, which skips that choice.
    No measurable change in recall throughput or server CPU (bench/README.md, "Where recall's time
    goes")."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop
