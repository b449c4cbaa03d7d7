"""An MCP server built and started by the first request that needs it.

The single-bank and the multi-bank server each hold their tools' argument and result models
(~3 MB of a process's memory apiece): a server whose clients use one of them, or only REST, never
holds the other. The first request to a surface builds its server (tens of milliseconds, once a
process) and enters its SDK session manager's `run()` in a task of its own, which holds it until
`close()`: the manager's task group is entered and left by one task, as anyio requires, whichever
request came first. Requests that arrive while it starts wait for the same start; none builds a
second server, and a request cancelled while waiting leaves the start to finish for the others.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable
from typing import Any

from hindsight.mcp.single_exchange import SingleExchange


class OnDemand:
    """One MCP surface's exchange (single_exchange.py), made by `build()` (which returns the SDK's
    session manager) on the first `exchange()`."""

    def __init__(self, build: Callable[[], Any]):
        self._build = build
        self._exchange: SingleExchange | None = None
        self._started: asyncio.Future[SingleExchange] | None = None
        self._stop = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    @property
    def built(self) -> bool:
        return self._exchange is not None

    async def exchange(self) -> SingleExchange:
        if self._exchange is not None:
            return self._exchange
        if self._started is None:  # no await since the check: one request starts it
            self._started = asyncio.get_running_loop().create_future()
            self._task = asyncio.create_task(self._hold(self._started), name="mcp-surface")
        return await asyncio.shield(self._started)

    async def _hold(self, started: asyncio.Future[SingleExchange]) -> None:
        try:
            manager = self._build()
            async with manager.run():
                self._exchange = SingleExchange(manager)
                started.set_result(self._exchange)
                await self._stop.wait()
        except BaseException as exc:
            if not started.done():  # every waiting request gets the error; none hangs
                started.set_exception(exc)
                started.exception()  # retrieved: the requests answer it, nothing to log twice
            if not isinstance(exc, Exception):
                raise

    async def close(self) -> None:
        """Leave the manager's run(): what it runs in its task group is cancelled, as when the
        app's lifespan left it."""
        self._stop.set()
        if self._task is not None:
            with contextlib.suppress(Exception):
                await self._task
