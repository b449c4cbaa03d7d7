"""The in-process scheduler (APScheduler's AsyncIOScheduler): every tick claims queued operations
for this process's worker, and sweeps for mental models made stale by new memories; every
HINDSIGHT_API_RETENTION_INTERVAL it forgets what banks' retention policies say is too old and
prunes the audit log. All are safe to run in any number of processes against one database (SKIP
LOCKED claims, deduplicated queueing, retention batches read under the bank's write lock).
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import logging
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import datetime
from typing import TYPE_CHECKING

from apscheduler.executors.asyncio import AsyncIOExecutor
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from hindsight.engine.audit.logs import prune_audit_logs
from hindsight.engine.forgetting.retention import sweep_retention
from hindsight.engine.reflection import mental_models
from hindsight.engine.worker.runner import Worker, log_failure

if TYPE_CHECKING:
    from hindsight.engine.audit.trail import AuditTrail
    from hindsight.engine.runtime import Runtime


log = logging.getLogger("hindsight.scheduler")

STOP_TIMEOUT = 5.0  # seconds a cancelled job gets to end (they end at their next await)


class _Executor(AsyncIOExecutor):
    """APScheduler's asyncio executor, stopped cleanly: a job its shutdown cancels is not a failure
    (a tick due at the moment of stopping is cancelled before its first line, where no wrapper of
    ours can catch it, and would be logged as an ERROR with a traceback), and `ended()` waits for
    the cancelled jobs to end, so none is still using a pool when the pools close."""

    def start(self, scheduler, alias) -> None:
        super().start(scheduler, alias)
        self._shut = asyncio.Event()
        self._cancelled: list[asyncio.Future] = []

    def shutdown(self, wait: bool = True) -> None:
        # AsyncIOScheduler.shutdown() calls this on the loop's next turn, not at once
        self._cancelled = [f for f in self._pending_futures if not f.done()]
        super().shutdown(wait)
        self._shut.set()

    async def ended(self, timeout: float) -> None:
        """Once the scheduler's shutdown has run, until the jobs it cancelled have ended (at most
        `timeout` seconds in all)."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(timeout):
                await self._shut.wait()
                if self._cancelled:
                    await asyncio.wait(self._cancelled)

    def _run_job_error(self, job_id, exc, traceback=None) -> None:
        if isinstance(exc, asyncio.CancelledError):
            # counted as ended, nothing logged: the running-instances count stays right
            self._run_job_success(job_id, [])
            return
        super()._run_job_error(job_id, exc, traceback)


class Scheduler:
    def __init__(self, rt: Runtime, worker: Worker, audit: AuditTrail | None = None):
        self.rt = rt
        self.worker = worker
        self.audit = audit
        self._executor = _Executor()
        self._aps = AsyncIOScheduler(timezone="UTC", executors={"default": self._executor})
        self._stopping = False

    def _job(self, fn: Callable[[], Awaitable[None]]) -> Callable[[], Awaitable[None]]:
        """`fn` as a job that ends quietly when stop() cancels it: APScheduler's shutdown cancels
        a run in progress and would log that as the job raising, with a traceback, an ERROR at
        every shutdown that meets a tick (a run not yet begun: _Executor)."""

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

    def _forgotten(self, bank_id: str, n: int, seconds: float) -> None:
        """A retention sweep's erasure in a bank, on the audit record like a request's."""
        if self.audit is not None:
            self.audit.record(
                bank_id,
                "system",
                "retention",
                None,
                None,
                200,
                "ok",
                "scheduler",
                uuid.uuid4().hex,
                time.time() - seconds,
                seconds,
                {"memories_forgotten": n},
            )

    async def _retention(self) -> None:
        try:
            n = await sweep_retention(self.rt, self._forgotten)
            if n:
                log.info("retention forgot %d memories", n)
        except Exception as exc:
            log_failure(log, "retention sweep", exc)
        try:
            pruned = await prune_audit_logs(self.rt, self.rt.settings.audit_retention_days)
            if pruned:
                log.info("removed %d audit records older than %d days", pruned, self.rt.settings.audit_retention_days)
        except Exception as exc:
            log_failure(log, "audit log pruning", exc)

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
        self._aps.add_job(
            self._job(self._retention),
            "interval",
            seconds=self.rt.settings.retention_interval,
            next_run_time=now,
            id="retention",
            **common,
        )
        self._aps.start()

    async def stop(self) -> None:
        self._stopping = True
        if self._aps.running:
            self._aps.shutdown(wait=False)
            await self._executor.ended(STOP_TIMEOUT)
        await self.worker.stop()
