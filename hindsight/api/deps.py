"""Request-scoped dependencies: the engine and the calling principal.

Each is `async def` although only `principal` awaits: FastAPI runs a plain `def` dependency in
its thread pool, two thread hand-offs per request for a dictionary lookup. Bank ids from the path
are checked by the engine operation itself, like every other argument naming a bank."""

from __future__ import annotations

from fastapi import Request

from ..engine import Engine
from ..engine.keys import Principal


async def engine(request: Request) -> Engine:
    return request.app.state.engine


async def principal(request: Request) -> Principal:
    return await request.app.state.engine.authenticate(request.headers.get("authorization"))
