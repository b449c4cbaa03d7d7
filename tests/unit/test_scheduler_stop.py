"""The scheduler stops without an ERROR: a job due at the moment of stopping is cancelled before
its first line (APScheduler's executor would log that as a failure with a traceback), and a job
cancelled mid-run has ended before stop() returns, so none is using a pool as the pools close."""

from __future__ import annotations

import asyncio
import logging
from datetime import UTC, datetime

from apscheduler.events import EVENT_JOB_ERROR
from apscheduler.schedulers.asyncio import AsyncIOScheduler

from hindsight.engine.worker.scheduler import _Executor


def _scheduler(job) -> tuple[AsyncIOScheduler, _Executor]:
    """A scheduler as the server's, with `job` due now."""
    executor = _Executor()
    aps = AsyncIOScheduler(timezone="UTC", executors={"default": executor})
    aps.add_job(job, "interval", seconds=60, next_run_time=datetime.now(UTC), id="claim")
    return aps, executor


async def test_a_job_due_as_the_scheduler_stops_is_not_an_error(caplog):
    ran = []

    async def claim() -> None:
        ran.append(1)

    aps, executor = _scheduler(claim)
    with caplog.at_level(logging.DEBUG, logger="apscheduler"):
        # Both run on the loop's next turn, in this order: the wakeup creates the job's task,
        # and the shutdown cancels it before its first step.
        aps.start()
        aps.shutdown(wait=False)
        await executor.ended(5)
    assert executor._cancelled, "the job was not due as the scheduler stopped"
    assert ran == []
    assert executor._instances == {}, "the cancelled run still counts as running"
    errors = [r for r in caplog.records if r.levelno >= logging.ERROR]
    assert errors == [], [r.getMessage() for r in errors]


async def test_a_job_cancelled_mid_run_has_ended_when_stop_returns():
    started, cleaned = asyncio.Event(), []

    async def claim() -> None:
        started.set()
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)  # hands its connection back, say
            cleaned.append(1)
            raise

    aps, executor = _scheduler(claim)
    aps.start()
    await asyncio.wait_for(started.wait(), 5)
    aps.shutdown(wait=False)
    await executor.ended(5)
    assert cleaned == [1]


async def test_a_failing_job_is_still_logged(caplog):
    done = asyncio.Event()

    def failed(event) -> None:
        done.set()

    async def claim() -> None:
        raise RuntimeError("the database is gone")

    aps, executor = _scheduler(claim)
    aps.add_listener(failed, EVENT_JOB_ERROR)
    with caplog.at_level(logging.ERROR, logger="apscheduler"):
        aps.start()
        await asyncio.wait_for(done.wait(), 5)
        aps.shutdown(wait=False)
        await executor.ended(5)
    assert any("the database is gone" in (r.exc_text or str(r.exc_info)) for r in caplog.records)
