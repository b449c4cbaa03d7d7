"""The SDK's authorization-server provider (`mcp.server.auth.provider`) over our store.

The SDK's handlers run the protocol: they parse and validate every request, refuse `plain` PKCE
(only S256 parses), compare redirect URIs exactly, check the PKCE verifier and the client's
secret, and answer in RFC 6749's error format. The provider decides what only we can: which
clients exist, where the person approves (the console's consent page), and what a code or a
token stands for. One provider serves one issuer (oauth/endpoints.py builds one per issuer).

Rules that are ours:
- a request must name one of this server's MCP endpoints as its resource (RFC 8707), or none
  (the token then serves the bank the person chooses, on either endpoint);
- a code is used once; a second use revokes what the first issued (OAuth 2.1, section 4.1.3);
- a refresh token is used once; a second use revokes the whole grant (OAuth 2.1, section 4.3.1);
- nothing a client sends reaches PostgreSQL unless it holds to the text rule.
"""

from __future__ import annotations

import logging
import re
import time
import uuid
from typing import TYPE_CHECKING

from mcp.server.auth.provider import (
    AccessToken,
    AuthorizationCode,
    AuthorizationParams,
    AuthorizeError,
    OAuthAuthorizationServerProvider,
    RefreshToken,
    RegistrationError,
    TokenError,
)
from mcp.shared.auth import OAuthClientInformationFull, OAuthToken
from pydantic import AnyUrl, ConfigDict

from hindsight.engine.access.keys import hash_key
from hindsight.engine.rules.text import text_problem
from hindsight.oauth import store
from hindsight.oauth.clients import (
    ClientProblem,
    as_client,
    check_metadata,
    document_client,
    is_document_id,
    registration_error,
)
from hindsight.oauth.registration import Limited, current_address
from hindsight.oauth.resource import resource_bank

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

log = logging.getLogger("hindsight.oauth")

# An S256 challenge is the base64url SHA-256 of the verifier: always 43 characters.
_S256 = re.compile(r"^[A-Za-z0-9_-]{43}$")
MAX_STATE_CHARS = 1000
MAX_ID_CHARS = 2000
# A secret that matches nothing: what a confidential client's record carries when the secret it
# presented is wrong or missing, so that the SDK's comparison fails.
_NEVER = "!never-" + uuid.uuid4().hex


class GrantCode(AuthorizationCode):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    grant: store.Grant


class GrantRefresh(RefreshToken):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    grant: store.Grant


class GrantAccess(AccessToken):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    grant: store.Grant


def granted_scopes(access: str) -> list[str]:
    return ["read", "write"] if access == "read_write" else ["read"]


def _usable(value: str, prefix: str) -> bool:
    return value.startswith(prefix) and len(value) < 200 and text_problem(value) is None


class Provider(OAuthAuthorizationServerProvider[GrantCode, GrantRefresh, GrantAccess]):
    """The provider of one issuer. The SDK's SEP-990 identity-assertion grant is left as the
    protocol has it: refused (this server is not an enterprise IdP's relying party)."""

    def __init__(self, rt: Runtime, issuer: str):
        self.rt = rt
        self.issuer = issuer

    # ---- clients --------------------------------------------------------------------------------
    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        """The client as the SDK's handlers look it up; a metadata document that may not be
        admitted now (registration.Limited) is no client to them."""
        try:
            found = await self.find_client(client_id)
        except Limited:
            return None
        return found[0] if found is not None else None

    async def find_client(self, client_id: str) -> tuple[OAuthClientInformationFull, bool] | None:
        """A client and whether a person ever approved it (on the consent page), or None. Raises
        registration.Limited for a metadata document not seen before that may not come now."""
        if not client_id or len(client_id) > MAX_ID_CHARS or text_problem(client_id):
            return None
        if is_document_id(client_id):
            try:
                return await document_client(self.rt, client_id)
            except ClientProblem as exc:
                log.warning("OAuth client %.200s refused: %s", client_id, exc.message)
                return None
        stored = await store.get_client(self.rt, client_id)
        if stored is None or stored.kind != "registered":
            return None
        return as_client(stored.client_id, stored.metadata), stored.approved_at is not None

    async def client_presenting(self, client_id: str, secret: str | None) -> OAuthClientInformationFull | None:
        """The client, as the SDK's token-endpoint authenticator must see it: with the secret it
        presented if that is the one it was issued (only its hash is kept), else with one that
        matches nothing."""
        client = await self.get_client(client_id)
        if client is None or is_document_id(client_id):
            return client
        stored = await store.get_client(self.rt, client_id)
        if stored is None or stored.secret_hash is None:
            return client
        right = secret is not None and text_problem(secret) is None and hash_key(secret) == stored.secret_hash
        return client.model_copy(update={"client_secret": secret if right else _NEVER})

    async def register_client(self, client_info: OAuthClientInformationFull) -> None:
        metadata = client_info.model_dump(mode="json", exclude_none=True)
        secret = metadata.pop("client_secret", None)
        try:
            check_metadata(metadata)
        except ClientProblem as exc:
            raise registration_error(exc) from None
        if not str(metadata.get("client_id", "")):
            raise RegistrationError("invalid_client_metadata", "no client id")
        # Admitted by the endpoint before the SDK's handler read the body (oauth/endpoints.py).
        await store.register_client(self.rt, metadata.pop("client_id"), secret, metadata, current_address())

    # ---- authorization --------------------------------------------------------------------------
    async def authorize(self, client: OAuthClientInformationFull, params: AuthorizationParams) -> str:
        for name, value in (("state", params.state), ("code_challenge", params.code_challenge)):
            if value is not None and (text_problem(value) or len(value) > MAX_STATE_CHARS):
                raise AuthorizeError("invalid_request", f"{name}: not usable text")
        if not _S256.match(params.code_challenge):
            raise AuthorizeError("invalid_request", "code_challenge: an S256 challenge (43 base64url characters)")
        resource = params.resource
        if resource is not None:
            if text_problem(resource) or len(resource) > MAX_ID_CHARS:
                raise AuthorizeError("invalid_target", "resource: not usable text")
            found, _ = resource_bank(self.issuer, resource)
            if not found:
                raise AuthorizeError(
                    "invalid_target", f"resource: {resource:.200} is not an MCP endpoint of {self.issuer}"
                )
        scopes = [s for s in params.scopes or [] if not text_problem(s)][:20]
        request_id = await store.create_request(
            self.rt,
            client_id=client.client_id,
            issuer=self.issuer,
            resource=resource,
            redirect_uri=str(params.redirect_uri),
            redirect_given=params.redirect_uri_provided_explicitly,
            code_challenge=params.code_challenge,
            state=params.state,
            scopes=scopes,
        )
        # In the fragment: never sent to a server, so never in an access log or a Referer.
        return f"{self.issuer}/ui/consent.html#request={request_id}"

    # ---- codes ----------------------------------------------------------------------------------
    async def load_authorization_code(self, client: OAuthClientInformationFull, authorization_code: str):
        if not _usable(authorization_code, store.CODE_PREFIX):
            return None
        row = await store.get_code(self.rt, authorization_code)
        if row is None or row.grant.client_id != client.client_id:
            return None
        if row.used:
            await store.revoke_grant(self.rt, row.grant.bank_id, row.grant.grant_id)
            log.warning(
                "OAuth code used twice: connection %s to bank %s revoked", row.grant.grant_id, row.grant.bank_id
            )
            return None
        if not row.grant.live:
            return None
        return GrantCode(
            code=authorization_code,
            scopes=row.grant.scopes,
            expires_at=row.expires_at.timestamp(),
            client_id=row.grant.client_id,
            code_challenge=row.code_challenge,
            redirect_uri=AnyUrl(row.redirect_uri),
            redirect_uri_provided_explicitly=row.redirect_given,
            resource=row.grant.resource,
            grant=row.grant,
        )

    async def exchange_authorization_code(
        self, client: OAuthClientInformationFull, authorization_code: GrantCode
    ) -> OAuthToken:
        grant = authorization_code.grant
        if not await store.use_code(self.rt, authorization_code.code, grant):
            await store.revoke_grant(self.rt, grant.bank_id, grant.grant_id)
            raise TokenError("invalid_grant", "authorization code was already used")
        return await self._tokens(grant)

    # ---- refresh tokens -------------------------------------------------------------------------
    async def load_refresh_token(self, client: OAuthClientInformationFull, refresh_token: str):
        if not _usable(refresh_token, store.REFRESH_PREFIX):
            return None
        row = await store.get_token(self.rt, refresh_token)
        if row is None or row.kind != "refresh" or row.grant.client_id != client.client_id:
            return None
        if row.used:
            await self._reused(row.grant)
            return None
        if row.revoked or not row.grant.live:
            return None
        return GrantRefresh(
            token=refresh_token,
            client_id=row.grant.client_id,
            scopes=row.grant.scopes,
            expires_at=int(row.expires_at.timestamp()),
            resource=row.grant.resource,
            grant=row.grant,
        )

    async def exchange_refresh_token(
        self, client: OAuthClientInformationFull, refresh_token: GrantRefresh, scopes: list[str]
    ) -> OAuthToken:
        grant = refresh_token.grant
        if not await store.use_refresh_token(self.rt, refresh_token.token, grant):
            await self._reused(grant)
            raise TokenError("invalid_grant", "refresh token was already used; the connection is revoked")
        return await self._tokens(grant)

    async def _reused(self, grant: store.Grant) -> None:
        await store.revoke_grant(self.rt, grant.bank_id, grant.grant_id)
        log.warning("OAuth refresh token reused: connection %s to bank %s revoked", grant.grant_id, grant.bank_id)

    async def _tokens(self, grant: store.Grant) -> OAuthToken:
        issued = await store.issue_tokens(self.rt, grant)
        if issued is None:
            raise TokenError("invalid_grant", "the connection was revoked")
        access, refresh = issued
        return OAuthToken(
            access_token=access,
            token_type="Bearer",
            expires_in=self.rt.settings.oauth_access_token_ttl,
            scope=" ".join(granted_scopes(grant.access)),
            refresh_token=refresh,
        )

    # ---- access tokens and revocation -----------------------------------------------------------
    async def load_access_token(self, token: str):
        if not _usable(token, store.ACCESS_PREFIX):
            return None
        row = await store.get_token(self.rt, token)
        if row is None or row.kind != "access" or row.revoked or not row.grant.live:
            return None
        if row.expires_at.timestamp() < time.time():
            return None
        return GrantAccess(
            token=token,
            client_id=row.grant.client_id,
            scopes=granted_scopes(row.grant.access),
            expires_at=int(row.expires_at.timestamp()),
            resource=row.grant.resource,
            grant=row.grant,
        )

    async def revoke_token(self, token: GrantAccess | GrantRefresh) -> None:
        """RFC 7009. A refresh token ends its grant (and every access token of it); an access
        token ends itself."""
        if isinstance(token, GrantRefresh):
            await store.revoke_grant(self.rt, token.grant.bank_id, token.grant.grant_id)
        else:
            await store.revoke_token(self.rt, token.token, token.grant)
