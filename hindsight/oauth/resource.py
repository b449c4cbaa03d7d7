"""The MCP endpoints as an OAuth 2.1 protected resource (MCP authorization; RFC 9728, RFC 6750).

Each endpoint is its own resource: `<base>/mcp/<bank>` (one bank) and `<base>/mcp` (every bank
the caller may use). A request without a usable credential is answered 401 with a
`WWW-Authenticate` challenge that points to that endpoint's Protected Resource Metadata, from
which a client finds the authorization server. A token is accepted only where it was issued for
(its audience): ours carry the resource the client named when it asked (RFC 8707), an external
issuer's carry `aud`. A token is never passed on to anything: it only decides who the caller is.

API keys keep working beside tokens (Claude Code with `--header`, Hindsight's own clients).
The base URL is HINDSIGHT_API_PUBLIC_URL, else the scheme and Host of the request (which the edge
already holds to the names this server answers to, server/host_origin.py).

A token is taken from the Authorization header only (OAuth 2.1 forbids it in a URL query). One
of our access tokens found in a request's query anyway is revoked, and the request refused: a URL
is written to access logs, proxies' logs and browser histories, so that token must be taken as
leaked. It ends itself only, not its connection: the client's refresh token was not exposed.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING
from urllib.parse import parse_qsl, unquote, urlsplit

from hindsight.bank_ids import invalid_bank_id, valid_bank_id
from hindsight.config import Settings
from hindsight.engine.access.keys import Principal
from hindsight.engine.errors import NotFound, Unauthorized
from hindsight.oauth import store

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime
    from hindsight.oauth.external import IssuerTokens

log = logging.getLogger("hindsight.oauth")

PRM_PREFIX = "/.well-known/oauth-protected-resource"
# How often a connection's "last used" time is written: at most once a minute, not every call.
TOUCH_SECONDS = 60


class TokenRefused(Unauthorized):
    """401 with the challenge of RFC 6750 and RFC 9728: what went wrong, and where the resource's
    metadata is, so that a client can start (or restart) authorization."""

    def __init__(self, message: str, metadata_url: str, error: str | None = "invalid_token"):
        super().__init__(message)
        self.metadata_url = metadata_url
        self.error = error

    def http_headers(self) -> dict[str, str]:
        parts = [f'error="{self.error}"'] if self.error else []
        parts.append(f'resource_metadata="{self.metadata_url}"')
        return {"WWW-Authenticate": "Bearer " + ", ".join(parts)}


def base_url(settings: Settings, scope) -> str:
    """The URL this server is reached at: the configured one, else this request's scheme and Host
    (default ports dropped, as URLs print them)."""
    if settings.public_url:
        return settings.public_url
    host = ""
    for k, v in scope.get("headers", []):
        if k == b"host":
            host = v.decode("latin-1").strip().lower()
            break
    scheme = scope.get("scheme", "http")
    default = {"http": ":80", "https": ":443"}.get(scheme, "")
    if default and host.endswith(default):
        host = host[: -len(default)]
    return f"{scheme}://{host}"


def mcp_resource(base: str, bank_id: str | None) -> str:
    return f"{base}/mcp" + (f"/{bank_id}" if bank_id is not None else "")


def metadata_url(base: str, bank_id: str | None) -> str:
    return f"{base}{PRM_PREFIX}/mcp" + (f"/{bank_id}" if bank_id is not None else "")


def endpoint_bank(path: str) -> str | None:
    """The bank of an MCP path (`/mcp/<bank>[/]`), None for the multi-bank endpoint (`/mcp[/]`);
    NotFound for anything else."""
    parts = path.rstrip("/").split("/")[2:]  # after "", "mcp"
    if len(parts) > 1:
        raise NotFound(f"no MCP endpoint at {path}")
    bank_id = parts[0] if parts else None
    if bank_id is not None and not valid_bank_id(bank_id):
        raise NotFound(f"MCP endpoint URL: {invalid_bank_id(bank_id)}")
    return bank_id


def resource_bank(base: str, resource: str) -> tuple[bool, str | None]:
    """Whether `resource` is one of this server's MCP endpoints, and its bank (None: the
    multi-bank endpoint). A trailing slash and percent-escapes in the path do not matter."""
    try:
        parts, ours = urlsplit(resource), urlsplit(base)
    except ValueError:
        return False, None
    if (
        parts.query
        or parts.fragment
        or (parts.scheme.lower(), parts.netloc.lower()) != (ours.scheme, ours.netloc.lower())
    ):
        return False, None
    path = unquote(parts.path).rstrip("/")
    if path == "/mcp":
        return True, None
    if path.startswith("/mcp/") and valid_bank_id(path[5:]):
        return True, path[5:]
    return False, None


def same_resource(a: str, b: str) -> bool:
    """Whether two resource URLs name the same endpoint (case of scheme and host, a trailing slash
    and percent-escapes aside)."""

    def canonical(url: str) -> tuple[str, str, str, str]:
        parts = urlsplit(url)
        return parts.scheme.lower(), parts.netloc.lower(), unquote(parts.path).rstrip("/"), parts.query

    try:
        return canonical(a) == canonical(b)
    except ValueError:
        return False


def _token_in_query(scope) -> str | None:
    """One of our access tokens in the request's query (under any name), if there is one."""
    query = scope.get("query_string", b"")
    if store.ACCESS_PREFIX.encode() not in query:
        return None
    for _, value in parse_qsl(query.decode("latin-1"), keep_blank_values=True):
        if value.startswith(store.ACCESS_PREFIX) and len(value) < 200:
            return value
    return None


def _bearer(scope) -> str | None:
    for k, v in scope.get("headers", []):
        if k == b"authorization":
            return v.decode("latin-1")
    return None


class Guard:
    """Who calls an MCP endpoint: an OAuth access token of ours, an external issuer's JWT, or an
    API key (when keys are on), else a 401 challenge."""

    def __init__(
        self,
        rt: Runtime,
        api_key: Callable[[str | None], Awaitable[Principal]],
        external: IssuerTokens | None,
    ):
        self.rt = rt
        self.settings = rt.settings
        self.api_key = api_key
        self.external = external

    async def principal(self, scope, bank_id: str | None) -> Principal:
        base = base_url(self.settings, scope)
        where = metadata_url(base, bank_id)
        if self.settings.oauth_server and (leaked := _token_in_query(scope)) is not None:
            await self._revoke_leaked(leaked)
            raise TokenRefused(
                "an access token in the URL is refused, and revoked (URLs are written to logs): get a new one, "
                "and send it as 'Authorization: Bearer <token>'",
                where,
            )
        authorization = _bearer(scope)
        if not authorization:
            raise TokenRefused(
                "authorization required: sign in with OAuth (the resource_metadata of WWW-Authenticate says where) "
                "or send 'Authorization: Bearer <API key>'",
                where,
                error=None,
            )
        scheme, _, token = authorization.strip().partition(" ")
        token = token.strip()
        if scheme.lower() != "bearer" or not token:
            raise TokenRefused("malformed Authorization header: expected 'Bearer <token>'", where, "invalid_request")
        resource = mcp_resource(base, bank_id)
        if token.startswith(store.ACCESS_PREFIX) and self.settings.oauth_server:
            return await self._ours(token, resource, where)
        if self.external is not None and self.external.looks_like_jwt(token):
            found = await self.external.principal(token, resource)
            if isinstance(found, str):
                raise TokenRefused(found, where)
            return found
        if self.settings.auth_enabled:
            try:
                return await self.api_key(authorization)
            except Unauthorized:
                raise TokenRefused("invalid, expired or revoked API key or token", where) from None
        raise TokenRefused("invalid, expired or revoked token", where)

    async def _revoke_leaked(self, token: str) -> None:
        row = await store.get_token(self.rt, token)
        if row is None or row.kind != "access" or row.revoked:
            return
        await store.revoke_token(self.rt, token, row.grant)
        log.warning(
            "OAuth access token of connection %s to bank %s sent in a URL: revoked",
            row.grant.grant_id,
            row.grant.bank_id,
        )

    async def _ours(self, token: str, resource: str, where: str) -> Principal:
        row = await store.get_token(self.rt, token) if len(token) < 200 else None
        if (
            row is None
            or row.kind != "access"
            or row.revoked
            or not row.grant.live
            or row.expires_at.timestamp() < time.time()
        ):
            raise TokenRefused("invalid, expired or revoked access token", where)
        grant = row.grant
        if grant.resource is not None and not same_resource(grant.resource, resource):
            raise TokenRefused(f"this token was issued for {grant.resource}, not {resource}", where)
        if row.last_used_at is None or time.time() - row.last_used_at.timestamp() > TOUCH_SECONDS:
            await store.touch_grant(self.rt, grant)
        return Principal(
            "bank",
            key_id=f"oauth:{grant.grant_id}",
            banks=frozenset({grant.bank_id}),
            read_only=grant.read_only,
            default_bank=grant.bank_id,
        )
