"""Request-scoped dependencies: the engine and the calling principal.

Each is `async def` although only `principal` awaits: FastAPI runs a plain `def` dependency in
its thread pool, two thread hand-offs per request for a dictionary lookup. Bank ids from the path
are checked by the engine operation itself, like every other argument naming a bank."""

from __future__ import annotations

from typing import Annotated

from fastapi import Depends, Path, Request

from hindsight.bank_ids import BANK_ID_RULE
from hindsight.engine.access.keys import Principal
from hindsight.engine.facade import Engine
from hindsight.web.scope import PRINCIPAL


async def engine(request: Request) -> Engine:
    return request.app.state.engine


async def principal(request: Request) -> Principal:
    known = request.scope.get(PRINCIPAL)
    if known is not None:
        return known
    who = await request.app.state.engine.authenticate(request.headers.get("authorization"))
    request.scope[PRINCIPAL] = who  # the request's audit record names it (server/audit_trail.py)
    return who


# FastAPI's `Annotated` aliases, so a route says `bank_id: BankPath, who: PrincipalDep,
# eng: EngineDep` and each is typed (mypy checks the route's body against the engine) and
# documented once. The path's bank id is checked by the engine operation, as every bank id is.
BankPath = Annotated[str, Path(description=f"The bank's id: {BANK_ID_RULE}.")]
PrincipalDep = Annotated[Principal, Depends(principal)]
EngineDep = Annotated[Engine, Depends(engine)]
