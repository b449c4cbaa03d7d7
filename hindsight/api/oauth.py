"""REST for OAuth's people-facing side: the consent page's two requests and a bank's connected
applications (oauth/consent.py). The protocol endpoints themselves are the SDK's
(oauth/endpoints.py), outside the OpenAPI document."""

from __future__ import annotations

import uuid

from fastapi import APIRouter, Request

from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.access.keys import OPEN
from hindsight.engine.errors import Forbidden, NotFound
from hindsight.oauth import consent
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
    return await consent.list_connections(eng.rt, bank_id)


@router.delete(
    "/v1/banks/{bank_id}/connections/{connection_id}",
    summary="Disconnect an application: its tokens stop working at once",
)
async def disconnect(bank_id: BankPath, connection_id: uuid.UUID, who: PrincipalDep, eng: EngineDep) -> Disconnected:
    eng.require(who, bank_id)
    return await consent.disconnect(eng.rt, bank_id, connection_id)
