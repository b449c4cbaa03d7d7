"""Request-scoped dependencies: the engine and the calling principal.

Each is `async def` although only `principal` awaits: FastAPI runs a plain `def` dependency in
its thread pool, two thread hand-offs per request for a dictionary lookup and a regex."""

from __future__ import annotations

from fastapi import Request

from ..engine import Engine
from ..engine.banks import check_bank_id
from ..engine.keys import Principal


async def engine(request: Request) -> Engine:
    return request.app.state.engine


async def principal(request: Request) -> Principal:
    return await request.app.state.engine.authenticate(request.headers.get("authorization"))


async def bank_path(bank_id: str) -> str:
    return check_bank_id(bank_id)
