"""The in-process scheduler (APScheduler's AsyncIOScheduler): every tick claims queued operations
for this process's worker, and sweeps for mental models made stale by new memories. Both are safe
to run in any number of processes against one database (SKIP LOCKED claims, deduplicated queueing).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING

from apscheduler.schedulers.asyncio import AsyncIOScheduler

from hindsight.engine.reflection import mental_models
from hindsight.engine.worker.runner import Worker, log_failure

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


log = logging.getLogger("hindsight.scheduler")


class Scheduler:
    def __init__(self, rt: Runtime, worker: Worker):
        self.rt = rt
        self.worker = worker
        self._aps = AsyncIOScheduler(timezone="UTC")
        self._stopping = False

    def _job(self, fn: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        """`fn` as a job that ends quietly when stop() cancels it: APScheduler's shutdown cancels
        a run in progress and would log that as the job raising, with a traceback, an ERROR at
        every shutdown that meets a tick."""

        @functools.wraps(fn)  # APScheduler names the job after it in its warnings
        async def run() -> None:
            try:
                await fn()
            except asyncio.CancelledError:
                if not self._stopping:
                    raise

        return run

    async def _sweep(self) -> None:
        try:
            queued = await mental_models.sweep_stale_models(self.rt)
            if queued:
                log.info("queued %d mental-model refreshes after new memories", queued)
                await self.worker.safe_tick()
        except Exception as exc:
            log_failure(log, "mental-model sweep", exc)

    def start(self) -> None:
        interval = self.rt.settings.scheduler_interval
        now = datetime.now().astimezone()
        common = {"max_instances": 1, "coalesce": True, "misfire_grace_time": None}
        self._aps.add_job(
            self._job(self.worker.safe_tick), "interval", seconds=interval, next_run_time=now, id="claim", **common
        )
        self._aps.add_job(
            self._job(self._sweep), "interval", seconds=max(interval, 1.0), next_run_time=now, id="sweep", **common
        )
        self._aps.start()

    async def stop(self) -> None:
        self._stopping = True
        if self._aps.running:
            self._aps.shutdown(wait=False)
        await self.worker.stop()
