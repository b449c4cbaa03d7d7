"""uvicorn's server, stopped by draining (api/drain.py) instead of by cutting requests off.

uvicorn's own signal handler sets `should_exit` at the first SIGTERM or Ctrl-C, which closes the
listening socket at once. The first signal here starts a drain instead, and `should_exit` is
set when it is done; a second signal is uvicorn's (a second Ctrl-C forces the exit). uvicorn
still re-raises the captured signal once it has shut down, as it would have.
"""

from __future__ import annotations

import asyncio
from types import FrameType

import uvicorn

from .app import App


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
