"""uvicorn's server, stopped by draining (api/drain.py) instead of by cutting requests off.

uvicorn's own signal handler sets `should_exit` at the first SIGTERM or Ctrl-C, which closes the
listening socket at once. The first signal here starts a drain instead, and `should_exit` is
set when it is done; a second signal is uvicorn's (a second Ctrl-C forces the exit). uvicorn
still re-raises the captured signal once it has shut down, as it would have.
"""

from __future__ import annotations

import asyncio
import logging
import multiprocessing
import os
import signal
import socket
import sys
import threading
import time
from types import FrameType

import uvicorn

from .. import logs, malloc
from ..config import Settings
from ..embedding.base import cores
from .app import App, create_app

log = logging.getLogger("hindsight")


class DrainingServer(uvicorn.Server):
    def __init__(self, config: uvicorn.Config, app: App, grace: float):
        super().__init__(config)
        self.app = app
        self.grace = grace
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


def serve_settings(settings: Settings) -> int:
    """Run the server as configured: one process, or `settings.workers` of them on one port."""
    logs.configure(settings.log_format, settings.log_level)
    if settings.workers > 1:
        return Supervisor(settings).run()
    return _run(settings)


def _config(settings: Settings, app: App) -> uvicorn.Config:
    return uvicorn.Config(
        app,
        host=settings.host,
        port=settings.port,
        log_config=None,  # uvicorn's records go to the handler logs.configure() installed
        log_level=settings.log_level,
        lifespan="on",
        # requests were drained already (api/drain.py): this only bounds closing idle connections
        timeout_graceful_shutdown=5,
    )


def _run(settings: Settings, sockets: list[socket.socket] | None = None, scheduler: bool = True, ready=None) -> int:
    """One server process: the engine, then uvicorn on its own port or on the parent's socket."""
    app = create_app(settings)
    server = DrainingServer(_config(settings, app), app, settings.shutdown_grace)

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


# ---- several processes ----------------------------------------------------------------------------
def _worker(settings: Settings, sock: socket.socket, index: int, ready) -> None:
    """A worker process (spawned): its own process group, so that Ctrl-C reaches the supervisor
    alone, which passes it on once; it stops by itself if the supervisor disappears."""
    os.setpgrp()
    logs.configure(settings.log_format, settings.log_level)
    malloc.limit_arenas()
    threading.Thread(target=_orphan_watch, args=(os.getppid(),), daemon=True).start()
    sys.exit(_run(settings, [sock], scheduler=index == 0, ready=ready))


def _orphan_watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)


class Supervisor:
    """`workers` server processes on one listening socket, bound here and inherited, as uvicorn's
    and gunicorn's process models do. Each is a whole server (engine, operation worker, pool);
    they share the database, where operations are claimed once (SKIP LOCKED) and the embedded
    PostgreSQL is started by the first and stopped by the last (db/embedded.py). The scheduler
    runs in the first only, and each embeds on its share of the cores. A worker that dies after
    it served is started again; one that cannot start stops them all."""

    def __init__(self, settings: Settings):
        threads = settings.embedding_threads or max(1, cores() // settings.workers)
        self.settings = settings.model_copy(update={"embedding_threads": threads})
        self.context = multiprocessing.get_context("spawn")
        self.stopping = threading.Event()
        self.processes: list = []
        self.ready: list = []

    def _start(self, index: int, sock: socket.socket) -> None:
        ready = self.context.Event()
        proc = self.context.Process(
            target=_worker, args=(self.settings, sock, index, ready), name=f"hindsight-worker-{index}"
        )
        proc.start()
        self.processes[index], self.ready[index] = proc, ready

    def _signal(self, sig: int, frame: FrameType | None) -> None:
        if self.stopping.is_set():  # a second Ctrl-C: stop now, as a single server would
            for proc in self.processes:
                if proc.is_alive():
                    os.kill(proc.pid, signal.SIGINT)
        self.stopping.set()
        for proc in self.processes:
            if proc.is_alive():
                os.kill(proc.pid, signal.SIGTERM)

    def run(self) -> int:
        s = self.settings
        sock = _config(s, None).bind_socket()  # type: ignore[arg-type]
        log.warning("serving with %d worker processes on %s:%d", s.workers, s.host, s.port)
        for sig in (signal.SIGTERM, signal.SIGINT):
            signal.signal(sig, self._signal)
        self.processes, self.ready = [None] * s.workers, [None] * s.workers
        for i in range(s.workers):
            self._start(i, sock)
        code = 0
        while not self.stopping.is_set():
            for i, proc in enumerate(self.processes):
                if proc.is_alive() or self.stopping.is_set():
                    continue
                if not self.ready[i].is_set():  # it never served: a configuration or database problem
                    log.error("worker %d could not start (exit code %s): stopping", i, proc.exitcode)
                    code = 1
                    self._signal(signal.SIGTERM, None)
                    break
                log.error("worker %d (pid %d) ended with exit code %s: starting it again", i, proc.pid, proc.exitcode)
                self._start(i, sock)
            self.stopping.wait(0.5)
        deadline = time.monotonic() + s.shutdown_grace + 15
        for proc in self.processes:
            proc.join(max(0.0, deadline - time.monotonic()))
            if proc.is_alive():
                log.error("worker pid %d did not stop in time: killed", proc.pid)
                proc.kill()
                proc.join()
            if proc.exitcode not in (0, -signal.SIGTERM, -signal.SIGINT) and code == 0 and proc.exitcode is not None:
                code = proc.exitcode if proc.exitcode > 0 else 1
        sock.close()
        return code
