"""Runs claimed operations: one task per operation, a heartbeat renewing its lease, a wall-clock
limit, and retry-or-fail bookkeeping. Which function runs each kind of operation is engine/worker/operation_kinds.py's table."""

from __future__ import annotations

import asyncio
import logging
import os
import socket
import time
import uuid
from typing import TYPE_CHECKING

from hindsight.config import Settings
from hindsight.engine.errors import HindsightError, LLMUnavailable, unavailable
from hindsight.engine.notify import events
from hindsight.engine.queue import operations as ops
from hindsight.engine.queue.operations import Job
from hindsight.engine.worker.operation_kinds import KINDS
from hindsight.llm import LLMError, deadline

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


log = logging.getLogger("hindsight.worker")
# What ops.mark_failed() found the operation to be after a failed attempt, as the attempt's outcome:
# queued for a retry, cancelled by a user meanwhile, or taken over by another worker whose claim
# followed a lost lease (that worker runs it again).
_OUTCOMES = {"queued": "will retry", "cancelled": "cancelled", "running": "will retry"}
# The same after a deferral (the LLM provider is rate-limiting).
_WAITING = {
    "queued": "waiting for the LLM provider",
    "cancelled": "cancelled",
    "running": "waiting for the LLM provider",
}

OUTAGE_LOG_EVERY = 60.0  # seconds between repeats of one step's "database unavailable" line
_quiet_until: dict[str, float] = {}


def rate_limited(exc: BaseException, timeout: float) -> float | None:
    """Seconds to wait when `exc` says the LLM provider is rate-limiting, capped by the
    operation's wall-clock limit (a Retry-After of a day is not held for a day); else None."""
    if isinstance(exc, (LLMError, LLMUnavailable)) and exc.cause == "rate_limit":
        return min(float(exc.retry_after or 1.0), timeout)
    return None


def log_failure(logger: logging.Logger, what: str, exc: BaseException, kind: str = "") -> None:
    """A background step (claiming work, a heartbeat, the sweep) failed. A bug is logged with its
    traceback; a database that cannot be reached is one line, repeated at most once a minute:
    every tick fails the same way until the watchdog (embedded) or the operator (external)
    brings it back, and requests meanwhile answer 503. `kind` groups steps for that (default:
    `what`)."""
    error = unavailable(exc)
    if error is None:
        logger.error("%s failed", what, exc_info=exc)
        return
    now = time.monotonic()
    kind = kind or what
    if now >= _quiet_until.get(kind, 0.0):
        _quiet_until[kind] = now + OUTAGE_LOG_EVERY
        logger.warning("%s failed: %s", what, error.message)


class Worker:
    """Runs this process's share of the queue, and is the queue as the concept modules see it
    (runtime.Queue: poke, wait). Made before the Runtime it belongs to, and attached to it."""

    rt: Runtime

    def __init__(self, s: Settings, claims: bool = True):
        # An `api` process claims nothing (HINDSIGHT_API_ROLE): its worker only waits for operations.
        self.concurrency = s.worker_concurrency if claims else 0
        self.lease = s.operation_lease
        self.timeout = s.operation_timeout
        self.id = f"{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:6]}"
        self.running: dict = {}  # operation id -> task
        self.waiters: dict[str, asyncio.Event] = {}  # operation id -> set when this process finishes it
        self._claiming = asyncio.Lock()
        self.stop_waiting = asyncio.Event()
        self._closing = False

    def attach(self, rt: Runtime) -> None:
        self.rt = rt

    async def tick(self) -> None:
        """Claim as much work as there is room for and start it."""
        if self._closing or self.concurrency == 0:
            return
        async with self._claiming:
            room = self.concurrency - len(self.running)
            if room <= 0:
                return
            llm = self.rt.llm
            types = [name for name, kind in KINDS.items() if kind.needs_llm is None or llm.configured(kind.needs_llm)]
            others = [name for name in KINDS if name not in types]
            rows = await ops.claim_operations(self.rt, self.id, room, self.lease, types, others)
            for row in rows:
                job = Job(row, self.id)
                self.running[job.id] = asyncio.create_task(self._run(job), name=f"operation {job.id}")

    def poke(self) -> None:
        """New work was queued in this process: start it now rather than at the next tick."""
        if not self._closing and self.concurrency:
            asyncio.get_running_loop().create_task(self.safe_tick())

    async def safe_tick(self) -> None:
        try:
            await self.tick()
        except Exception as exc:
            log_failure(log, "claiming operations", exc)

    async def _run(self, job: Job) -> None:
        """One attempt, logged as one line when it starts and one when it ends (its outcome and
        duration), with the operation's fields as `extra=` keys for the JSON log format."""
        task = asyncio.current_task()
        assert task is not None  # _run is always a task of its own
        fields = {"operation_id": str(job.id), "bank_id": job.bank_id, "kind": job.type, "attempt": job.attempts}
        what = f"{job.type} on bank {job.bank_id}, attempt {job.attempts} of {job.max_attempts}"
        log.info("operation %s started: %s", job.id, what, extra=fields)
        started = time.monotonic()
        outcome, detail, exc_info = "failed", "", False
        beat = asyncio.create_task(self._heartbeat(job, task))
        try:
            outcome, detail = await self._attempt(job)
        except asyncio.CancelledError:
            if self._closing:
                outcome = "released at shutdown"  # stop() hands it back to the queue
                raise
            outcome, detail = "cancelled", "stopped: cancelled by a user, or its lease was lost"
        except Exception as exc:
            # The database failed while recording the outcome: the operation stays claimed
            # until its lease lapses, and then a worker claims it again.
            outcome, detail, exc_info = "will retry", f"its outcome was not recorded: {exc}", True
        finally:
            beat.cancel()
            self.running.pop(job.id, None)
            waiter = self.waiters.get(str(job.id))
            if waiter is not None:
                waiter.set()
            seconds = time.monotonic() - started
            end = {**fields, "duration_s": round(seconds, 3), "outcome": outcome}
            if detail:
                end["detail"] = detail
            level = logging.WARNING if outcome in ("failed", "will retry", _WAITING["queued"]) else logging.INFO
            tail = f": {detail}" if detail else ""
            log.log(
                level,
                "operation %s %s: %s, %.2f s%s",
                job.id,
                outcome,
                what,
                seconds,
                tail,
                extra=end,
                exc_info=exc_info,
            )

    async def _attempt(self, job: Job) -> tuple[str, str]:
        """Run the handler and record how it ended: (outcome, detail) for the log line."""
        pool = self.rt.pool
        try:
            kind = KINDS.get(job.type)
            if job.attempts > job.max_attempts:
                raise RuntimeError(f"gave up after {job.max_attempts} attempts")
            if kind is None:
                raise RuntimeError(f"no handler for operation type {job.type!r}")
            with deadline(self.timeout):  # LLM waits and retries stay within the attempt's limit
                result = await asyncio.wait_for(kind.run(self.rt, job), self.timeout)
            # Where its writes are, recorded before anyone can see the operation finished: a
            # caller that waited for it then reads them from any replica (db/replicas.py).
            await self.rt.reads.wrote(job.bank_id)
            async with pool.acquire() as conn:
                await ops.mark_succeeded(conn, job, result)
            self.poke()  # a finished job frees a slot
            return "succeeded", ""
        except ops.Cancelled as exc:
            await self.rt.reads.wrote(job.bank_id)  # what it wrote before it stopped
            await ops.mark_cancelled(self.rt, job, str(exc))
            return "cancelled", str(exc)
        except ops.RetryLater as exc:
            status = await ops.mark_failed(
                self.rt, job, str(exc), backoff=exc.seconds, on_failed=self._announce(job, exc)
            )
            if status == "failed":
                self.poke()  # its failure's deliveries (operation.failed), if any were queued
            return _OUTCOMES.get(status, "failed"), str(exc)
        except ops.GiveUp as exc:
            status = await ops.mark_failed(self.rt, job, str(exc), final=True, on_failed=self._announce(job, exc))
            if status == "failed":
                self.poke()  # its failure's deliveries (operation.failed), if any were queued
            return _OUTCOMES.get(status, "failed"), str(exc)
        except Exception as exc:
            if (down := unavailable(exc)) is not None:
                # Recording the failure needs the database too. Its lease runs out instead and a
                # worker claims it again (as after a crash), once the database is back.
                return "will retry", f"{down.message}; claimed again once its lease runs out"
            await self.rt.reads.wrote(job.bank_id)  # what it wrote before it failed
            if (wait := rate_limited(exc, self.timeout)) is not None:
                msg = f"{exc}; waiting {wait:g} s before trying again (not counted as an attempt)"
                status = await ops.defer_operation(self.rt, job, msg, wait)
                return _WAITING.get(status, status), msg
            if isinstance(exc, TimeoutError):
                msg = f"exceeded the wall-clock limit of {self.timeout:g} s"
            elif isinstance(exc, (LLMError, HindsightError)):
                msg = str(exc)  # says what failed in words of its own; its class adds nothing
            else:
                msg = f"{type(exc).__name__}: {exc}"
            status = await ops.mark_failed(self.rt, job, msg, on_failed=self._announce(job, msg))
            if status == "failed":
                self.poke()  # its failure's deliveries (operation.failed), if any were queued
            return _OUTCOMES.get(status, "failed"), msg

    def _announce(self, job: Job, error: object):
        """What an operation failing for good also does, in the transaction that fails it: the
        bank's webhooks hear of it (operation.failed), unless it was a delivery to one of them."""
        if job.type == events.DELIVERY or job.bank_id is None:
            return None

        async def announce(conn) -> None:
            data = {"operation_type": job.type, "error": str(error)[:2000], "attempts": job.attempts}
            await events.fire(self.rt, conn, job.bank_id, events.OPERATION_FAILED, data, job.id, "failed")

        return announce

    async def wait(self, bank_id: str, operation_id: str, timeout: float) -> ops.Operation:
        event = self.waiters.setdefault(operation_id, asyncio.Event())
        try:
            return await ops.wait_for_operation(self.rt, bank_id, operation_id, timeout, event, self.stop_waiting)
        finally:
            self.waiters.pop(operation_id, None)

    def release_waiters(self) -> None:
        """A stopping server's callers that wait for an operation (`wait=true`) answer now with
        the operation as it is: their own work is committed, and the operation finishes later."""
        self.stop_waiting.set()
        for event in self.waiters.values():
            event.set()

    async def _heartbeat(self, job: Job, task: asyncio.Task) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            try:
                alive = await ops.renew_lease(self.rt, job, self.lease)
            except Exception as exc:
                log_failure(log, f"heartbeat for operation {job.id}", exc, "heartbeats")
                continue
            if not alive:  # cancelled by a user, or the lease was lost
                task.cancel()
                return

    async def stop(self) -> None:
        self._closing = True
        ids, tasks = list(self.running), list(self.running.values())
        for t in tasks:
            t.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        if ids:
            try:
                await ops.release_operations(self.rt, ids, self.id)
            except Exception as exc:
                log_failure(log, "releasing operations", exc)
