"""Several server processes on one port (HINDSIGHT_API_WORKERS).

This module is the supervisor's: it imports neither the app nor the engine, so the process that
only watches its workers stays small (~40 MB instead of a server's ~200); each worker imports the
server in its own process (server/serve.py).
"""

from __future__ import annotations

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

from hindsight import logs, malloc
from hindsight.config import Settings

log = logging.getLogger("hindsight")


# ---- several processes ----------------------------------------------------------------------------
def _worker(settings: Settings, sock: socket.socket, index: int, ready) -> None:
    """A worker process (spawned): its own process group, so that Ctrl-C reaches the supervisor
    alone, which passes it on once; it stops by itself if the supervisor disappears."""
    os.setpgrp()
    logs.configure(settings.log_format, settings.log_level)
    malloc.configure()
    threading.Thread(target=_orphan_watch, args=(os.getppid(),), daemon=True).start()
    from hindsight.server.serve import run  # the server, imported in the worker only (see the module's docstring)

    sys.exit(run(settings, [sock], scheduler=index == 0, ready=ready))


def _orphan_watch(parent: int) -> None:
    while os.getppid() == parent:
        time.sleep(1)
    os.kill(os.getpid(), signal.SIGTERM)


class Supervisor:
    """`workers` server processes on one listening socket, bound here and inherited, as uvicorn's
    and gunicorn's process models do. Each is a whole server (engine, operation worker, pool);
    they share the database, where operations are claimed once (SKIP LOCKED) and the embedded
    PostgreSQL is started by the first and stopped by the last (db/embedded.py). The scheduler
    runs in the first only. Each embeds queries on its share of the cores and a retain batch on all
    of them (embedding/base.py, share_queries). A worker that dies after it served is started
    again; one that cannot start stops them all."""

    def __init__(self, settings: Settings):
        self.settings = settings
        self.context = multiprocessing.get_context("spawn")
        self.stopping = threading.Event()
        self.processes: list = []
        self.ready: list = []
        self.told: set[int] = set()

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
        self._terminate_ready()

    def _terminate_ready(self) -> None:
        """SIGTERM to each worker that serves and has not been told yet. One still starting is
        told once it serves (or ends by itself): before uvicorn installs its handlers, SIGTERM
        would kill it mid-start, leaving it on the embedded PostgreSQL's list of users."""
        for i, proc in enumerate(self.processes):
            if proc.is_alive() and self.ready[i].is_set() and proc.pid not in self.told:
                self.told.add(proc.pid)
                os.kill(proc.pid, signal.SIGTERM)

    def run(self) -> int:
        s = self.settings
        logs.configure(s.log_format, s.log_level)
        sock = uvicorn.Config(None, host=s.host, port=s.port).bind_socket()  # type: ignore[arg-type]
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
        while any(proc.is_alive() for proc in self.processes) and time.monotonic() < deadline:
            self._terminate_ready()
            time.sleep(0.1)
        for proc in self.processes:
            if proc.is_alive():
                log.error("worker pid %d did not stop in time: killed", proc.pid)
                proc.kill()
                proc.join()
            if proc.exitcode not in (0, -signal.SIGTERM, -signal.SIGINT) and code == 0 and proc.exitcode is not None:
                code = proc.exitcode if proc.exitcode > 0 else 1
        sock.close()
        return code
