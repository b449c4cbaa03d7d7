"""REST for OAuth's people-facing side: the consent page's two requests, a bank's connected
applications (oauth/consent.py) and, for admins, every registered client (oauth/applications.py).
The protocol endpoints themselves are outside the OpenAPI document (oauth/endpoints.py).

A bank's connections: any key that may read the bank lists them (which applications use it, and
how); only a key that may write it (or an admin) sees which key approved each and may disconnect
one, since disconnecting stops another key's application."""

from __future__ import annotations

import uuid
from typing import Annotated

from fastapi import APIRouter, Path, Query, Request

from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.access.keys import OPEN
from hindsight.engine.errors import Forbidden, NotFound
from hindsight.oauth import applications, consent
from hindsight.oauth.applications import ApplicationDeleted, ApplicationList
from hindsight.oauth.consent import (
    ConnectedAppList,
    ConsentAnswer,
    ConsentDecision,
    ConsentLookup,
    ConsentRequest,
    Disconnected,
)
from hindsight.web.audit import about_bank, acted_as

router = APIRouter(tags=["oauth"])


def _require_server(eng) -> None:
    if not eng.settings.oauth_server:
        raise NotFound("this server runs no OAuth authorization server")


@router.post("/v1/oauth/consent/lookup", summary="What an OAuth authorization request asks (the consent page)")
async def lookup(req: ConsentLookup, eng: EngineDep) -> ConsentRequest:
    """No key needed: the request id (from the page's URL fragment, never a path or a query)
    is the capability. The answer names an application and a bank, nothing of its data."""
    _require_server(eng)
    return await consent.describe(eng.rt, req)


@router.post(
    "/v1/oauth/consent/decide",
    summary="Approve (with an API key) or refuse an OAuth authorization request",
)
async def decide(d: ConsentDecision, request: Request, eng: EngineDep) -> ConsentAnswer:
    """Approving needs `Authorization: Bearer <API key>`: the grant is never wider than that
    key. Refusing needs nothing. Only this server's own pages may send it from a browser (the
    edge refuses another `Origin`; a cross-site fetch is refused here too)."""
    _require_server(eng)
    if request.headers.get("sec-fetch-site", "same-origin") not in ("same-origin", "none"):
        raise Forbidden("the consent decision is only taken from this server's own consent page")
    authorization = request.headers.get("authorization")
    if not d.approve and not authorization:
        return await consent.decide(eng.rt, OPEN, d)  # who refuses does not matter
    who = await eng.authenticate(authorization)
    acted_as(request.scope, who)
    answer = await consent.decide(eng.rt, who, d)
    about_bank(request.scope, answer.bank_id)
    return answer


@router.get("/v1/banks/{bank_id}/connections", summary="Applications connected to a bank through OAuth")
async def list_connections(bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> ConnectedAppList:
    eng.require(who, bank_id)
    return await consent.list_connections(eng.rt, bank_id, approvers=not who.read_only)


@router.delete(
    "/v1/banks/{bank_id}/connections/{connection_id}",
    summary="Disconnect an application: its tokens stop working at once",
)
async def disconnect(bank_id: BankPath, connection_id: uuid.UUID, who: PrincipalDep, eng: EngineDep) -> Disconnected:
    """Needs a key that may write the bank (or an admin key)."""
    eng.require(who, bank_id, write=True)
    return await consent.disconnect(eng.rt, bank_id, connection_id)


@router.get("/v1/oauth/clients", summary="Every OAuth client this server knows (admin)")
async def list_clients(
    who: PrincipalDep,
    eng: EngineDep,
    limit: Annotated[int, Query(ge=1, le=1000)] = 100,
    offset: Annotated[int, Query(ge=0, le=10_000_000)] = 0,
) -> ApplicationList:
    """Newest first; a client no person approved expires by itself
    (HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENT_TTL)."""
    _require_server(eng)
    who.require_admin()
    return await applications.list_applications(eng.rt, limit, offset)


@router.delete("/v1/oauth/clients/{client_id:path}", summary="Delete an OAuth client and its connections (admin)")
async def delete_client(
    client_id: Annotated[str, Path(min_length=1, max_length=2000)], who: PrincipalDep, eng: EngineDep
) -> ApplicationDeleted:
    """Its connections in every bank end with it; it may register again (and a person decide again)."""
    _require_server(eng)
    who.require_admin()
    return await applications.delete_application(eng.rt, client_id)
