"""Notices that the embedded PostgreSQL died and starts it again.

Without it, a postmaster killed from outside (the OOM killer, a stray `kill -9`) left the server
answering /health with 200 while every request that needed the database failed, until someone
restarted hindsight. The check is the postmaster's process, every second: a look at the process
table, no query, so it costs nothing while all is well. The restart is the wheel's own start
under its inter-process lock (EmbeddedPostgres.restart), retried with a growing pause while
PostgreSQL refuses to start, e.g. for backends of the killed postmaster still holding its shared
memory. Requests meanwhile answer 503 with Retry-After (engine/errors.py, Unavailable); once the
database is back, the engine drops the pool's dead connections and they succeed again.

With an external database (HINDSIGHT_API_DATABASE_URL) there is no watchdog: that server is not
ours to restart, and the pool reconnects by itself when it comes back.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable

from hindsight.db.embedded import EmbeddedPostgres, StartFailed

log = logging.getLogger("hindsight.db")

CHECK_EVERY = 1.0  # seconds between looks at the postmaster
FIRST_RETRY, LAST_RETRY = 0.5, 10.0  # seconds between restart attempts: doubling, up to LAST_RETRY


class Watchdog:
    def __init__(self, embedded: EmbeddedPostgres, restarted: Callable[[str], Awaitable[None]]):
        """`restarted(uri)` runs once the database is back, with its (possibly new) URI."""
        self.embedded = embedded
        self.restarted = restarted
        self.restarting = False
        self._stopping = asyncio.Event()
        self._task: asyncio.Task | None = None

    def start(self) -> None:
        self._task = asyncio.create_task(self._run(), name="embedded PostgreSQL watchdog")

    async def stop(self) -> None:
        """Ends the watch; a restart attempt under way finishes first (it runs in a thread and
        holds the wheel's lock), so the PostgreSQL it may have started is the one stopped next."""
        self._stopping.set()
        if self._task is not None:
            await self._task
            self._task = None

    async def _pause(self, seconds: float) -> bool:
        """Wait `seconds`; True when the watchdog is being stopped."""
        try:
            await asyncio.wait_for(self._stopping.wait(), seconds)
        except TimeoutError:
            pass
        return self._stopping.is_set()

    async def _run(self) -> None:
        while not await self._pause(CHECK_EVERY):
            if self.embedded.running():
                continue
            try:
                await self._heal()
            except Exception:  # a bug here must not end the watch silently
                log.exception("restarting the embedded PostgreSQL failed")
            finally:
                self.restarting = False

    async def _heal(self) -> None:
        self.restarting = True
        log.warning("embedded PostgreSQL (pid %s) stopped unexpectedly; restarting", self.embedded.pid)
        t0 = time.monotonic()
        delay = FIRST_RETRY
        while True:
            try:
                uri = await asyncio.to_thread(self.embedded.restart)
                break
            except StartFailed as exc:
                log.warning("embedded PostgreSQL did not start (%s); trying again in %g s", exc, delay)
            if await self._pause(delay):
                return
            delay = min(delay * 2, LAST_RETRY)
        await self.restarted(uri)
        log.warning(
            "embedded PostgreSQL is back (pid %s) after %.1f s; requests are served again",
            self.embedded.pid,
            time.monotonic() - t0,
        )
