"""API keys and the principal a request acts as.

Keys are 256-bit random secrets, so a single SHA-256 is the right storage (as GitHub and Stripe
do for tokens): a slow password hash protects guessable secrets and would cost every request
milliseconds. Only the hash is stored; the secret is shown once, at creation.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import asyncpg

from hindsight.db.sql import Q
from hindsight.engine.access.schemas import ApiKey, ApiKeyCreate
from hindsight.engine.errors import Forbidden, InvalidArgument, NotFound

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

KEY_PREFIX = "hsk_"


def hash_key(secret: str) -> str:
    return hashlib.sha256(secret.encode()).hexdigest()


@dataclass(frozen=True)
class Principal:
    """Who is calling: `open` (no auth configured), `admin`, or `bank` (scoped to `banks`)."""

    kind: str
    key_id: str | None = None
    banks: frozenset[str] = field(default_factory=frozenset)
    read_only: bool = False
    # The bank an OAuth connection was approved for: the multi-bank MCP endpoint's default for it
    # (instead of HINDSIGHT_MCP_BANK_ID), so that a connector added as `/mcp` works without headers.
    default_bank: str | None = None

    @property
    def is_admin(self) -> bool:
        return self.kind in ("open", "admin")

    def can_access(self, bank_id: str) -> bool:
        return self.is_admin or bank_id in self.banks

    def require_bank(self, bank_id: str, write: bool = False) -> None:
        if not self.can_access(bank_id):
            raise Forbidden(f"this API key may not access bank {bank_id!r}", "bank_id")
        if write and self.read_only:
            raise Forbidden(f"this API key may only read bank {bank_id!r}", "bank_id")

    def require_admin(self) -> None:
        if not self.is_admin:
            raise Forbidden("this operation needs an admin API key")

    def visible_banks(self) -> set[str] | None:
        return None if self.is_admin else set(self.banks)


OPEN = Principal("open")
ADMIN = Principal("admin", key_id="env")


def _row(r: asyncpg.Record, secret: str | None = None) -> ApiKey:
    return ApiKey(
        key_id=r["id"],
        name=r["name"],
        role=r["role"],
        banks=list(r["banks"]),
        access=r["access"],
        created_at=r["created_at"],
        revoked_at=r["revoked_at"],
        last_used_at=r["last_used_at"],
        key=secret,
    )


async def create_key(rt: Runtime, req: ApiKeyCreate) -> ApiKey:
    if req.role == "bank" and not req.banks:
        raise InvalidArgument("banks: a bank-scoped key needs at least one bank", "banks")
    key_id = "key_" + secrets.token_hex(6)
    secret = KEY_PREFIX + secrets.token_urlsafe(32)
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(
            Q.key_create,
            key_id,
            req.name,
            hash_key(secret),
            req.role,
            req.banks if req.role == "bank" else [],
            req.access,
        )
    return _row(r, secret)


async def list_keys(rt: Runtime) -> list[ApiKey]:
    async with rt.pool.acquire() as conn:
        return [_row(r) for r in await conn.fetch(Q.key_list)]


async def revoke_key(rt: Runtime, key_id: str) -> ApiKey:
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.key_revoke, key_id)
    if r is None:
        raise NotFound(f"API key {key_id!r} does not exist", "key_id")
    return _row(r)


async def authenticate(rt: Runtime, secret: str, admin_secret: str | None) -> Principal | None:
    if admin_secret and hmac.compare_digest(hash_key(secret), hash_key(admin_secret)):
        return ADMIN
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.key_use, hash_key(secret))
    if r is None:
        return None
    if r["role"] == "admin":
        return Principal("admin", key_id=r["id"])
    return Principal("bank", key_id=r["id"], banks=frozenset(r["banks"]), read_only=r["access"] == "read")
