"""The consent page's two steps, and a bank's connected applications.

A person opens the page from the application (the authorization endpoint sends them there), sees
which application asks, for which bank and whether it may write, and approves with an API key
they hold, or refuses. What is granted is never wider than that key: its bank (a bank-scoped key
approves only its banks) and its access (a read-only key approves read-only access). An
application is never given an admin's powers: every grant is for one bank. The grant records the
key, so revoking the key ends it.

Why a key and not a password: the server has no accounts; API keys are how it knows people
already. The key travels in the `Authorization` header of the page's own request (never a URL,
never a log line), the page is served by this server with a CSP that allows scripts from itself
only, and the decision is a JSON POST the edge (server/host_origin.py) accepts only without an `Origin` or
from this server's own: there is no cookie to ride on, and a page elsewhere cannot send it.
"""

from __future__ import annotations

import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Literal
from urllib.parse import urlsplit

from mcp.server.auth.provider import construct_redirect_uri
from pydantic import BaseModel, Field

from hindsight.bank_ids import BANK_ID_RULE
from hindsight.engine.access.keys import Principal
from hindsight.engine.banks.registry import check_bank_id
from hindsight.engine.errors import Forbidden, InvalidArgument, NotFound
from hindsight.engine.rules.text import Strict
from hindsight.oauth import store
from hindsight.oauth.clients import declared_text
from hindsight.oauth.resource import resource_bank

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

Access = Literal["read", "read_write"]
REQUEST_ID = Field(min_length=1, max_length=200, description="The `request` of the consent page's URL fragment.")


class ConsentLookup(Strict):
    request_id: str = REQUEST_ID


class ConsentRequest(BaseModel):
    """What the consent page shows."""

    client_id: str
    client_name: str | None = Field(None, description="The name the application gave itself (unverified).")
    client_uri: str | None = None
    redirect_host: str = Field(description="Where the person's browser goes after deciding: the application.")
    client_kind: str = Field(description="`registered` (RFC 7591) or `document` (a Client ID Metadata Document).")
    endpoint: str | None = Field(None, description="The MCP endpoint the application will use.")
    bank_id: str | None = Field(None, description="The bank, when the endpoint names one; else the person picks it.")
    access: Access = Field(description="What the application asks for.")
    expires_at: datetime


class ConsentDecision(Strict):
    request_id: str = REQUEST_ID
    approve: bool
    bank_id: str | None = Field(None, description=f"The bank, when the endpoint names none: {BANK_ID_RULE}.")
    access: Access | None = Field(None, description="Narrower access than asked for; default: what was asked.")


class ConsentAnswer(BaseModel):
    redirect_to: str = Field(description="Where to send the browser: the application, with a code or an error.")
    access: Access | None = Field(None, description="What was granted (none when refused).")
    bank_id: str | None = Field(None, description="The bank the application may now use (none when refused).")


class ConnectedApp(BaseModel):
    connection_id: uuid.UUID
    client_id: str
    client_name: str | None = None
    client_uri: str | None = None
    access: Access
    approved_by: str | None = Field(
        None,
        description="The id of the API key that approved it (`env`: the admin key); shown only to a key that may "
        "write the bank (a read-only key sees which applications use the bank, not whose key let them in).",
    )
    created_at: datetime
    last_used_at: datetime | None = None


class ConnectedAppList(BaseModel):
    connections: list[ConnectedApp]


class Disconnected(BaseModel):
    connection_id: uuid.UUID
    disconnected: bool


def asked_access(scopes: list[str]) -> Access:
    """Only `read` asked (without `write`) is read-only; anything else asks for both."""
    return "read" if "read" in scopes and "write" not in scopes else "read_write"


async def describe(rt: Runtime, req: ConsentLookup) -> ConsentRequest:
    pending = await store.get_request(rt, req.request_id)
    if pending is None:
        raise NotFound("this authorization request expired or was decided already; start again from the application")
    bank_id = None
    if pending.resource is not None:
        _, bank_id = resource_bank(pending.issuer, pending.resource)
    return ConsentRequest(
        client_id=pending.client_id,
        client_name=declared_text(pending.metadata, "client_name"),
        client_uri=declared_text(pending.metadata, "client_uri"),
        redirect_host=urlsplit(pending.redirect_uri).netloc or pending.redirect_uri[:100],
        client_kind=pending.kind,
        endpoint=pending.resource,
        bank_id=bank_id,
        access=asked_access(pending.scopes),
        expires_at=pending.expires_at,
    )


async def decide(rt: Runtime, who: Principal, d: ConsentDecision) -> ConsentAnswer:
    pending = await store.get_request(rt, d.request_id)
    if pending is None:
        raise NotFound("this authorization request expired or was decided already; start again from the application")
    if not d.approve:
        taken = await store.take_request(rt, d.request_id)
        if taken is None:
            raise NotFound("this authorization request was decided already")
        url = construct_redirect_uri(
            taken.redirect_uri,
            error="access_denied",
            error_description="the person refused",
            state=taken.state,
            iss=taken.issuer,
        )
        return ConsentAnswer(redirect_to=url)
    if who.kind not in ("admin", "bank"):
        raise Forbidden("approving needs an API key")
    fixed = resource_bank(pending.issuer, pending.resource)[1] if pending.resource is not None else None
    if fixed is not None and d.bank_id is not None and d.bank_id != fixed:
        raise InvalidArgument(f"bank_id: the application asked for bank {fixed!r}", "bank_id")
    bank_id = fixed or d.bank_id
    if bank_id is None:
        raise InvalidArgument("bank_id: choose the bank the application may use", "bank_id")
    check_bank_id(bank_id)
    who.require_bank(bank_id)
    asked = asked_access(pending.scopes)
    access: Access = d.access or asked
    if access == "read_write" and asked == "read":
        raise InvalidArgument("access: the application asked to read only", "access")
    if access == "read_write" and who.read_only:
        if d.access is not None:
            raise Forbidden(f"this API key may only read bank {bank_id!r}: approve read-only access", "access")
        access = "read"
    taken = await store.take_request(rt, d.request_id)
    if taken is None:
        raise NotFound("this authorization request was decided already")
    scopes = ["read", "write"] if access == "read_write" else ["read"]
    code = await store.create_grant(
        rt,
        taken,
        bank_id=bank_id,
        key_id=None if who.key_id == "env" else who.key_id,
        access=access,
        scopes=scopes,
    )
    if code is None:
        raise NotFound("this application was deleted meanwhile (or its registration expired); start again from it")
    url = construct_redirect_uri(taken.redirect_uri, code=code, state=taken.state, iss=taken.issuer)
    return ConsentAnswer(redirect_to=url, access=access, bank_id=bank_id)


async def list_connections(rt: Runtime, bank_id: str, approvers: bool) -> ConnectedAppList:
    """A bank's connections; `approvers`: with the key that approved each."""
    rows = await store.list_connections(rt, bank_id)
    return ConnectedAppList(
        connections=[
            ConnectedApp(
                connection_id=r.grant_id,
                client_id=r.client_id,
                client_name=declared_text(r.metadata, "client_name"),
                client_uri=declared_text(r.metadata, "client_uri"),
                access="read" if r.access == "read" else "read_write",
                approved_by=(r.key_id or "env") if approvers else None,
                created_at=r.created_at,
                last_used_at=r.last_used_at,
            )
            for r in rows
        ]
    )


async def disconnect(rt: Runtime, bank_id: str, connection_id: uuid.UUID) -> Disconnected:
    if not await store.revoke_grant(rt, bank_id, connection_id):
        raise NotFound(f"bank {bank_id!r} has no connection {connection_id}", "connection_id")
    return Disconnected(connection_id=connection_id, disconnected=True)
