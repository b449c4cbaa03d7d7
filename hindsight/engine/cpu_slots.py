"""The slots for CPU-bound work (embedding batches, reading files, splitting text): two at once
saturate the cores, more only add queueing.

A slot is held until its thread ends, even when the task waiting for it is cancelled (an
operation past its wall-clock limit, a request whose client left): a thread cannot be stopped,
and releasing its slot at the cancellation let the operation's next attempt start beside it. A
document import past its limit ran four attempts at once, 106 s of CPU on a two-core machine
after the operation had been marked failed.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any, TypeVar

T = TypeVar("T")


class CpuSlots:
    def __init__(self, slots: int) -> None:
        self._slots = asyncio.Semaphore(slots)

    async def run(self, fn: Callable[..., T], *args: Any) -> T:
        """fn(*args) on a worker thread once a slot is free; the slot is released when the thread
        ends, whether or not anyone still waits for it."""
        await self._slots.acquire()
        try:
            work = asyncio.ensure_future(asyncio.to_thread(fn, *args))
        except BaseException:
            self._slots.release()
            raise
        work.add_done_callback(lambda _: self._slots.release())
        return await asyncio.shield(work)

    # For a caller that holds every slot itself (tests/e2e/test_fairness.py): as a semaphore.
    async def acquire(self) -> bool:
        return await self._slots.acquire()

    def release(self) -> None:
        self._slots.release()

    def locked(self) -> bool:
        return self._slots.locked()
