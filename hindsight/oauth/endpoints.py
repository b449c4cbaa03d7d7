"""The OAuth endpoints, from the MCP SDK's handlers: Authorization Server Metadata (RFC 8414),
authorization, token, dynamic client registration (RFC 7591), revocation (RFC 7009), and the
Protected Resource Metadata (RFC 9728) of each MCP endpoint.

The issuer is the server's own URL (HINDSIGHT_API_PUBLIC_URL, else the request's scheme and
Host), so the handlers are built per issuer and kept for the few a server is reached under. The
SDK's handlers are used as they are with two additions of ours: the metadata also says what the
server does beyond the SDK's defaults (Client ID Metadata Documents, public clients, the `iss`
of RFC 9207, the two scopes), and the token and revocation endpoints authenticate a client
against the hash of its secret, since only the hash is stored.

Every answer is JSON or a redirect: a wrong method or a too large body is refused here in the
server's own error format before the SDK sees it (its own would be plain text).
"""

from __future__ import annotations

import base64
import binascii
from collections import OrderedDict
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from mcp.server.auth.handlers.authorize import AuthorizationHandler
from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.revoke import RevocationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import ClientAuthenticator
from mcp.server.auth.routes import build_metadata, cors_middleware, validate_issuer_url
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, ProtectedResourceMetadata
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.routing import request_response

from hindsight.engine.errors import BadRequest, NotFound, TooLarge
from hindsight.oauth.clients import SCOPES
from hindsight.oauth.provider import Provider
from hindsight.oauth.resource import PRM_PREFIX, base_url, endpoint_bank, mcp_resource
from hindsight.web.errors import MethodNotAllowed

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

METHODS = {
    "/.well-known/oauth-authorization-server": ("GET", "HEAD", "OPTIONS"),
    "/authorize": ("GET", "HEAD", "POST"),
    "/token": ("POST", "OPTIONS"),
    "/register": ("POST", "OPTIONS"),
    "/revoke": ("POST", "OPTIONS"),
}
# No OAuth request is more than a few kilobytes: a registration with ten redirect URIs is ~25 KB.
MAX_BODY = 64 * 1024
ISSUERS_KEPT = 16
# Issuer URLs printed as RFC 8414 compares them: no trailing slash on an empty path.
_URL = TypeAdapter(AnyHttpUrl, config=ConfigDict(url_preserve_empty_path=True))


def handles(path: str) -> bool:
    return path in METHODS or path == PRM_PREFIX or path.startswith(PRM_PREFIX + "/")


class _Presenting:
    """The provider as the SDK's client authenticator sees it for one request (see
    Provider.client_presenting)."""

    def __init__(self, provider: Provider, secret: str | None):
        self.provider = provider
        self.secret = secret

    async def get_client(self, client_id: str) -> OAuthClientInformationFull | None:
        return await self.provider.client_presenting(client_id, self.secret)


class HashedSecrets(ClientAuthenticator):
    """The SDK's client authentication (client_secret_post, client_secret_basic, none), against
    a stored hash instead of the secret itself."""

    def __init__(self, provider: Provider):
        super().__init__(provider)
        self.hindsight = provider

    async def authenticate_request(self, request: Request) -> OAuthClientInformationFull:
        secret = await _presented_secret(request)
        presenting: Any = _Presenting(self.hindsight, secret)
        return await ClientAuthenticator(presenting).authenticate_request(request)


async def _presented_secret(request: Request) -> str | None:
    header = request.headers.get("authorization", "")
    if header.startswith("Basic "):
        try:
            decoded = base64.b64decode(header[6:], validate=True).decode("utf-8")
        except (ValueError, binascii.Error, UnicodeDecodeError):
            return None
        return unquote(decoded.partition(":")[2]) if ":" in decoded else None
    value = (await request.form()).get("client_secret")
    return value if isinstance(value, str) else None


class Endpoints:
    """An ASGI app for the OAuth paths (`handles`)."""

    def __init__(self, rt: Runtime):
        self.rt = rt
        self.settings = rt.settings
        self._issuers: OrderedDict[str, dict[str, Any]] = OrderedDict()

    async def __call__(self, scope, receive, send):
        path, method = scope["path"], scope["method"]
        base = base_url(self.settings, scope)
        if path in METHODS:
            if not self.settings.oauth_server:
                raise NotFound(
                    "this server runs no OAuth authorization server "
                    "(API keys off, HINDSIGHT_API_OAUTH_ENABLED=false, or an external HINDSIGHT_API_OAUTH_ISSUER)"
                )
            if method not in METHODS[path]:
                raise MethodNotAllowed(f"{path} takes {', '.join(METHODS[path])}", ", ".join(METHODS[path]))
            app = self._apps(base)[path]
        else:
            app = self._resource_metadata(base, path, method)
        await app(scope, _bounded(scope, receive), send)

    def _apps(self, base: str) -> dict[str, Any]:
        apps = self._issuers.get(base)
        if apps is None:
            apps = self._issuers[base] = self._build(base)
            while len(self._issuers) > ISSUERS_KEPT:
                self._issuers.popitem(last=False)
        return apps

    def _build(self, base: str) -> dict[str, Any]:
        try:
            issuer = _URL.validate_python(base)
            validate_issuer_url(issuer)
        except (ValueError, ValidationError):
            raise BadRequest(
                f"OAuth needs an https URL (or a loopback address), not {base!r}: "
                "set HINDSIGHT_API_PUBLIC_URL to the https URL clients reach this server at"
            ) from None
        provider = Provider(self.rt, base)
        registration = ClientRegistrationOptions(enabled=True, default_scopes=SCOPES)
        revocation = RevocationOptions(enabled=True)
        metadata = build_metadata(issuer, None, registration, revocation)
        metadata.scopes_supported = SCOPES
        metadata.client_id_metadata_document_supported = True
        metadata.authorization_response_iss_parameter_supported = True
        metadata.token_endpoint_auth_methods_supported = ["none", "client_secret_post", "client_secret_basic"]
        metadata.revocation_endpoint_auth_methods_supported = ["none", "client_secret_post", "client_secret_basic"]
        clients = HashedSecrets(provider)
        cors = ["POST", "OPTIONS"]
        return {
            "/.well-known/oauth-authorization-server": cors_middleware(
                MetadataHandler(metadata).handle, ["GET", "OPTIONS"]
            ),
            "/authorize": request_response(AuthorizationHandler(provider).handle),
            "/token": cors_middleware(TokenHandler(provider, clients).handle, cors),
            "/register": cors_middleware(RegistrationHandler(provider, registration).handle, cors),
            "/revoke": cors_middleware(RevocationHandler(provider, clients).handle, cors),
        }

    def _resource_metadata(self, base: str, path: str, method: str):
        """RFC 9728, section 3.1: `/.well-known/oauth-protected-resource` + the endpoint's path."""
        rest = path[len(PRM_PREFIX) :]
        if not self.settings.oauth_resource or not (rest.rstrip("/") == "/mcp" or rest.startswith("/mcp/")):
            raise NotFound(f"no protected resource metadata at {path}")
        if method not in ("GET", "HEAD", "OPTIONS"):
            raise MethodNotAllowed(f"{path} takes GET", "GET, HEAD, OPTIONS")
        bank_id = endpoint_bank(rest)
        metadata = ProtectedResourceMetadata(
            resource=_URL.validate_python(mcp_resource(base, bank_id)),
            authorization_servers=[_URL.validate_python(self.settings.oauth_issuer or base)],
            scopes_supported=SCOPES,
            resource_name=f"Hindsight memory bank {bank_id}" if bank_id else "Hindsight memory banks",
        )
        return cors_middleware(ProtectedResourceMetadataHandler(metadata).handle, ["GET", "OPTIONS"])


def _bounded(scope, receive):
    too_large = TooLarge(f"body: larger than {MAX_BODY} bytes, the limit of OAuth requests")
    for k, v in scope.get("headers", []):
        if k == b"content-length" and v.isdigit() and int(v) > MAX_BODY:
            raise too_large
    seen = 0

    async def bounded():
        nonlocal seen
        message = await receive()
        seen += len(message.get("body", b""))
        if seen > MAX_BODY:
            raise too_large
        return message

    return bounded
