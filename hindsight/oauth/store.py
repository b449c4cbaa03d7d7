"""OAuth's rows in PostgreSQL (migrations 009 and 020): every secret as a SHA-256 hash, every statement
on a grant naming its bank.

Secrets are 256-bit random values, so one SHA-256 is the right storage, as for API keys
(engine/access/keys.py). Each kind of secret has its own prefix, which tells the MCP endpoints an OAuth
access token (`hsa_`) from an API key (`hsk_`) without a database lookup, and makes a leaked one
recognisable to secret scanners.
"""

from __future__ import annotations

import json
import secrets
import uuid
from dataclasses import dataclass
from datetime import datetime
from typing import TYPE_CHECKING, Any

from hindsight.config import Settings
from hindsight.db.sql import Q
from hindsight.engine.access.keys import hash_key

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

ACCESS_PREFIX = "hsa_"
REFRESH_PREFIX = "hsr_"
CODE_PREFIX = "hsc_"
REQUEST_PREFIX = "hsq_"
CLIENT_SECRET_PREFIX = "hss_"
# How long a person has to decide on the consent page, and a client to exchange its code.
REQUEST_SECONDS = 600
CODE_SECONDS = 300


def new_secret(prefix: str) -> str:
    return prefix + secrets.token_urlsafe(32)


def digest(secret: str) -> str:
    return hash_key(secret)


def admin_fingerprint(settings: Settings) -> str | None:
    """What a grant approved by the environment's admin key records of it: a hash of its hash,
    so that replacing HINDSIGHT_API_TENANT_API_KEY ends what the old key approved."""
    if not settings.tenant_api_key:
        return None
    return hash_key("oauth-admin:" + hash_key(settings.tenant_api_key))


@dataclass(frozen=True)
class StoredClient:
    client_id: str
    secret_hash: str | None
    metadata: dict[str, Any]
    kind: str
    fetched_at: datetime
    approved_at: datetime | None = None


@dataclass(frozen=True)
class RegistrationLoad:
    """What admits a registration (oauth/registration.py)."""

    recent: int  # registrations from the address in the window
    recent_frees_in: float | None  # seconds until the first of them leaves the window
    unapproved: int  # clients no person approved
    unapproved_frees_in: float | None  # seconds until the oldest of them expires


@dataclass(frozen=True)
class ClientRow:
    """A client as an admin sees it."""

    client_id: str
    kind: str
    metadata: dict[str, Any]
    registered_from: str | None
    created_at: datetime
    approved_at: datetime | None
    connections: int


@dataclass(frozen=True)
class PendingRequest:
    client_id: str
    issuer: str
    resource: str | None
    redirect_uri: str
    scopes: list[str]
    metadata: dict[str, Any]
    kind: str
    expires_at: datetime


@dataclass(frozen=True)
class TakenRequest:
    client_id: str
    issuer: str
    resource: str | None
    redirect_uri: str
    redirect_given: bool
    code_challenge: str
    state: str | None
    scopes: list[str]


@dataclass(frozen=True)
class Grant:
    """What a code or token stands for: one application's access to one bank."""

    grant_id: uuid.UUID
    bank_id: str
    client_id: str
    access: str
    resource: str | None
    scopes: list[str]
    live: bool

    @property
    def read_only(self) -> bool:
        return self.access == "read"


@dataclass(frozen=True)
class CodeRow:
    grant: Grant
    redirect_uri: str
    redirect_given: bool
    code_challenge: str
    expires_at: datetime
    used: bool


@dataclass(frozen=True)
class TokenRow:
    grant: Grant
    kind: str
    expires_at: datetime
    used: bool
    revoked: bool
    last_used_at: datetime | None


@dataclass(frozen=True)
class Connection:
    grant_id: uuid.UUID
    client_id: str
    metadata: dict[str, Any]
    access: str
    key_id: str | None
    created_at: datetime
    last_used_at: datetime | None


def _json(value: Any) -> dict[str, Any]:
    return json.loads(value) if isinstance(value, str) else dict(value)


def _grant(r) -> Grant:
    return Grant(
        grant_id=r["grant_id"],
        bank_id=r["bank_id"],
        client_id=r["client_id"],
        access=r["access"],
        resource=r["resource"],
        scopes=list(r["scopes"]),
        live=bool(r["live"]),
    )


# ---- clients ------------------------------------------------------------------------------------
async def get_client(rt: Runtime, client_id: str) -> StoredClient | None:
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.oauth_client_get, client_id)
    if r is None:
        return None
    return StoredClient(
        r["client_id"], r["secret_hash"], _json(r["metadata"]), r["kind"], r["fetched_at"], r["approved_at"]
    )


async def register_client(
    rt: Runtime, client_id: str, secret: str | None, metadata: dict[str, Any], registered_from: str | None
) -> None:
    async with rt.pool.acquire() as conn:
        await conn.execute(
            Q.oauth_client_register,
            client_id,
            digest(secret) if secret else None,
            json.dumps(metadata),
            registered_from,
        )


async def save_document_client(
    rt: Runtime, client_id: str, metadata: dict[str, Any], registered_from: str | None
) -> None:
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.oauth_client_document_save, client_id, json.dumps(metadata), registered_from)


async def registration_load(rt: Runtime, address: str | None, window: float, ttl: float) -> RegistrationLoad:
    """Expired unapproved clients deleted first (oauth_clients_expire), then what is left counted."""
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.oauth_clients_expire, ttl)
        r = await conn.fetchrow(Q.oauth_registration_load, address, window, ttl)
    return RegistrationLoad(r["recent"], r["recent_frees_in"], r["unapproved"], r["unapproved_frees_in"])


async def list_clients(rt: Runtime, limit: int, offset: int) -> tuple[list[ClientRow], int, int]:
    """A page of clients, newest first, with the number of clients and of unapproved ones."""
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(Q.oauth_clients_list, limit, offset, admin_fingerprint(rt.settings))
        counts = await conn.fetchrow(Q.oauth_clients_count)
    clients = [
        ClientRow(
            client_id=r["client_id"],
            kind=r["kind"],
            metadata=_json(r["metadata"]),
            registered_from=r["registered_from"],
            created_at=r["created_at"],
            approved_at=r["approved_at"],
            connections=r["connections"],
        )
        for r in rows
    ]
    return clients, counts["total"], counts["unapproved"]


async def delete_client(rt: Runtime, client_id: str) -> bool:
    async with rt.pool.acquire() as conn:
        return await conn.fetchval(Q.oauth_client_delete, client_id) is not None


# ---- pending consents ---------------------------------------------------------------------------
async def create_request(
    rt: Runtime,
    *,
    client_id: str,
    issuer: str,
    resource: str | None,
    redirect_uri: str,
    redirect_given: bool,
    code_challenge: str,
    state: str | None,
    scopes: list[str],
) -> str:
    """A new pending request; its id (returned once) is what the consent page is opened with."""
    request_id = new_secret(REQUEST_PREFIX)
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.oauth_requests_purge)
        await conn.execute(
            Q.oauth_request_create,
            digest(request_id),
            client_id,
            issuer,
            resource,
            redirect_uri,
            redirect_given,
            code_challenge,
            state,
            scopes,
            float(REQUEST_SECONDS),
        )
    return request_id


async def get_request(rt: Runtime, request_id: str) -> PendingRequest | None:
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.oauth_request_get, digest(request_id))
    if r is None:
        return None
    return PendingRequest(
        client_id=r["client_id"],
        issuer=r["issuer"],
        resource=r["resource"],
        redirect_uri=r["redirect_uri"],
        scopes=list(r["scopes"]),
        metadata=_json(r["metadata"]),
        kind=r["kind"],
        expires_at=r["expires_at"],
    )


async def take_request(rt: Runtime, request_id: str) -> TakenRequest | None:
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.oauth_request_take, digest(request_id))
    if r is None:
        return None
    return TakenRequest(
        client_id=r["client_id"],
        issuer=r["issuer"],
        resource=r["resource"],
        redirect_uri=r["redirect_uri"],
        redirect_given=r["redirect_given"],
        code_challenge=r["code_challenge"],
        state=r["state"],
        scopes=list(r["scopes"]),
    )


# ---- grants, codes and tokens -------------------------------------------------------------------
class _ClientGone(Exception):
    pass


async def create_grant(
    rt: Runtime,
    request: TakenRequest,
    *,
    bank_id: str,
    key_id: str | None,
    access: str,
    scopes: list[str],
) -> str | None:
    """The grant a person approved and its authorization code (returned once), or None when the
    client was deleted meanwhile (expired unapproved, or by an admin). `key_id` None means the
    environment's admin key approved it."""
    grant_id = uuid.uuid4()
    code = new_secret(CODE_PREFIX)
    fingerprint = admin_fingerprint(rt.settings) if key_id is None else None
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.oauth_codes_purge)
        await conn.execute(Q.oauth_tokens_purge)
        try:
            async with conn.transaction():
                await conn.execute(Q.bank_ensure, bank_id)
                made = await conn.execute(
                    Q.oauth_grant_create,
                    grant_id,
                    bank_id,
                    request.client_id,
                    key_id,
                    fingerprint,
                    access,
                    request.resource,
                    scopes,
                )
                if made != "INSERT 0 1":
                    raise _ClientGone  # rolls back the bank it would have made
                await conn.execute(
                    Q.oauth_code_create,
                    digest(code),
                    grant_id,
                    bank_id,
                    request.redirect_uri,
                    request.redirect_given,
                    request.code_challenge,
                    float(CODE_SECONDS),
                )
        except _ClientGone:
            return None
    return code


async def get_code(rt: Runtime, code: str) -> CodeRow | None:
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.oauth_code_get, digest(code), admin_fingerprint(rt.settings))
    if r is None:
        return None
    return CodeRow(
        grant=_grant(r),
        redirect_uri=r["redirect_uri"],
        redirect_given=r["redirect_given"],
        code_challenge=r["code_challenge"],
        expires_at=r["expires_at"],
        used=r["used_at"] is not None,
    )


async def use_code(rt: Runtime, code: str, grant: Grant) -> bool:
    """Spend a code: True the first time, False ever after (or once it expired)."""
    async with rt.pool.acquire() as conn:
        return await conn.fetchval(Q.oauth_code_use, digest(code), grant.bank_id) is not None


async def issue_tokens(rt: Runtime, grant: Grant) -> tuple[str, str] | None:
    """A new access token and refresh token of `grant`, or None if it was revoked meanwhile."""
    access, refresh = new_secret(ACCESS_PREFIX), new_secret(REFRESH_PREFIX)
    s = rt.settings
    async with rt.pool.acquire() as conn:
        made = await conn.fetch(
            Q.oauth_tokens_create,
            grant.grant_id,
            grant.bank_id,
            grant.client_id,
            [digest(access), digest(refresh)],
            ["access", "refresh"],
            [float(s.oauth_access_token_ttl), float(s.oauth_refresh_token_ttl)],
        )
    return (access, refresh) if len(made) == 2 else None


async def get_token(rt: Runtime, token: str) -> TokenRow | None:
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.oauth_token_get, digest(token), admin_fingerprint(rt.settings))
    if r is None:
        return None
    return TokenRow(
        grant=_grant(r),
        kind=r["kind"],
        expires_at=r["expires_at"],
        used=r["used_at"] is not None,
        revoked=r["revoked_at"] is not None,
        last_used_at=r["last_used_at"],
    )


async def use_refresh_token(rt: Runtime, token: str, grant: Grant) -> bool:
    """Spend a refresh token (rotation): True the first time, False if it was spent already."""
    async with rt.pool.acquire() as conn:
        return await conn.fetchval(Q.oauth_refresh_use, digest(token), grant.bank_id) is not None


async def revoke_token(rt: Runtime, token: str, grant: Grant) -> None:
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.oauth_token_revoke, digest(token), grant.bank_id)


async def revoke_grant(rt: Runtime, bank_id: str, grant_id: uuid.UUID) -> bool:
    async with rt.pool.acquire() as conn:
        return await conn.fetchval(Q.oauth_grant_revoke, bank_id, grant_id) is not None


async def touch_grant(rt: Runtime, grant: Grant) -> None:
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.oauth_grant_touch, grant.bank_id, grant.grant_id)


async def list_connections(rt: Runtime, bank_id: str) -> list[Connection]:
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(Q.oauth_connections_list, bank_id, admin_fingerprint(rt.settings))
    return [
        Connection(
            grant_id=r["id"],
            client_id=r["client_id"],
            metadata=_json(r["metadata"]),
            access=r["access"],
            key_id=r["key_id"],
            created_at=r["created_at"],
            last_used_at=r["last_used_at"],
        )
        for r in rows
    ]
