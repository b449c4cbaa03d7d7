"""The CPU slots (engine/cpu_slots.py): a slot is held until its thread ends, even when the task
waiting for the work is cancelled, so an operation past its limit cannot be retried beside the
thread still running it."""

from __future__ import annotations

import asyncio
import threading

from hindsight.engine.cpu_slots import CpuSlots


async def test_a_cancelled_wait_keeps_the_slot_until_the_thread_ends():
    slots, go, running = CpuSlots(1), threading.Event(), threading.Event()

    def work() -> str:
        running.set()
        go.wait(10)
        return "done"

    waiting = asyncio.create_task(slots.run(work))
    while not running.is_set():
        await asyncio.sleep(0.01)
    waiting.cancel()  # as asyncio.wait_for does when an operation runs past its limit
    await asyncio.gather(waiting, return_exceptions=True)
    assert waiting.cancelled() and slots.locked()  # the thread still runs: its slot stays taken

    retry = asyncio.create_task(slots.run(lambda: "again"))
    await asyncio.sleep(0.05)
    assert not retry.done()  # the next attempt waits for the thread, not beside it
    go.set()
    assert await asyncio.wait_for(retry, 10) == "again"
    assert not slots.locked()


async def test_work_runs_on_a_thread_and_its_error_reaches_the_caller():
    slots = CpuSlots(2)
    loop_thread = threading.get_ident()
    assert await slots.run(threading.get_ident) != loop_thread
    try:
        await slots.run(int, "not a number")
    except ValueError as exc:
        assert "not a number" in str(exc)
    else:
        raise AssertionError("no error")
    assert not slots.locked()
