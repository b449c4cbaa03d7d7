"""The OAuth endpoints: Authorization Server Metadata (RFC 8414), authorization, token, dynamic
client registration (RFC 7591), revocation (RFC 7009), and the Protected Resource Metadata
(RFC 9728) of each MCP endpoint.

The issuer is the server's own URL (HINDSIGHT_API_PUBLIC_URL, else the request's scheme and
Host), so the handlers are built per issuer and kept for the few a server is reached under. The
SDK's handlers serve metadata, tokens and registration; ours serve authorization (where its
errors may go: oauth/authorize.py) and revocation (a public client revokes with its client_id
alone, RFC 7009 section 2.1). Around them:

- every form (token, revocation, a POSTed authorization) and the authorization query are read
  strictly first (oauth/forms.py), so no body of any shape reaches Starlette's form parser
  unchecked; a client authenticating with HTTP Basic need not repeat its client_id in the body;
- a registration is admitted first (oauth/registration.py: a rate per address, a cap on clients
  no person approved), before its body is read;
- the metadata says what the server does beyond the SDK's defaults (Client ID Metadata Documents,
  public clients, the `iss` of RFC 9207, the two scopes), and exactly how clients authenticate:
  at the token and revocation endpoints alike, each the way it registered (`none`,
  `client_secret_post` or `client_secret_basic`), against the hash of its secret.

Every answer is JSON, a redirect, or (to a person at /authorize) an error page: a wrong method or
a too large body is refused here in the server's own error format before any handler sees it.
"""

from __future__ import annotations

import base64
import binascii
from collections import OrderedDict
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from mcp.server.auth.handlers.metadata import MetadataHandler, ProtectedResourceMetadataHandler
from mcp.server.auth.handlers.register import RegistrationHandler
from mcp.server.auth.handlers.token import TokenHandler
from mcp.server.auth.middleware.client_auth import AuthenticationError, ClientAuthenticator
from mcp.server.auth.routes import build_metadata, cors_middleware, validate_issuer_url
from mcp.server.auth.settings import ClientRegistrationOptions, RevocationOptions
from mcp.shared.auth import OAuthClientInformationFull, ProtectedResourceMetadata
from mcp.shared.inbound import MCP_PROTOCOL_VERSION_HEADER
from pydantic import AnyHttpUrl, ConfigDict, TypeAdapter, ValidationError
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import request_response

from hindsight.engine.errors import BadRequest, NotFound, TooLarge
from hindsight.oauth import forms, registration
from hindsight.oauth.authorize import AuthorizationEndpoint, error_page
from hindsight.oauth.clients import SCOPES
from hindsight.oauth.provider import Provider
from hindsight.oauth.registration import Limited
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
NO_STORE = {"Cache-Control": "no-store", "Pragma": "no-cache"}
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


# How a client authenticates at the token and revocation endpoints: the way it registered.
AUTH_METHODS = ("none", "client_secret_post", "client_secret_basic")


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
            registration.serve_address(scope)
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
        registration_options = ClientRegistrationOptions(enabled=True, default_scopes=SCOPES)
        metadata = build_metadata(issuer, None, registration_options, RevocationOptions(enabled=True))
        metadata.scopes_supported = SCOPES
        metadata.client_id_metadata_document_supported = True
        metadata.authorization_response_iss_parameter_supported = True
        metadata.token_endpoint_auth_methods_supported = list(AUTH_METHODS)
        metadata.revocation_endpoint_auth_methods_supported = list(AUTH_METHODS)
        clients = HashedSecrets(provider)
        posted = ["POST", "OPTIONS"]
        return {
            "/.well-known/oauth-authorization-server": cors_middleware(
                MetadataHandler(metadata).handle, ["GET", "OPTIONS"]
            ),
            "/authorize": _authorization(AuthorizationEndpoint(provider)),
            "/token": _cors(_form(request_response(TokenHandler(provider, clients).handle)), posted),
            "/register": _cors(
                _admitted(self.rt, request_response(RegistrationHandler(provider, registration_options).handle)),
                posted,
            ),
            "/revoke": _cors(_form(request_response(Revocation(provider, clients).handle)), posted),
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


def oauth_error(status: int, error: str, description: str, headers: dict[str, str] | None = None) -> Response:
    """An error in OAuth's format (RFC 6749, section 5.2; RFC 7591, section 3.2.2)."""
    return JSONResponse(
        {"error": error, "error_description": description}, status_code=status, headers={**NO_STORE, **(headers or {})}
    )


class Revocation:
    """RFC 7009: a client revokes one of its own tokens, authenticated the way it registered, so
    a public client (`none`) with its client_id alone. A refresh token ends its connection; an
    access token ends itself; a token that is unknown, expired or another client's is answered
    200 all the same (section 2.2). The SDK's handler asked every client for a client_secret."""

    def __init__(self, provider: Provider, clients: ClientAuthenticator):
        self.provider = provider
        self.clients = clients

    async def handle(self, request: Request) -> Response:
        try:
            client = await self.clients.authenticate_request(request)
        except AuthenticationError as exc:
            return oauth_error(401, "invalid_client", exc.message)
        token = (await request.form()).get("token")
        if not isinstance(token, str) or not token:
            return oauth_error(400, "invalid_request", "token: required")
        # token_type_hint only orders a search that covers both kinds anyway (section 2.1).
        found = await self.provider.load_access_token(token) or await self.provider.load_refresh_token(client, token)
        if found is not None and found.client_id == client.client_id:
            await self.provider.revoke_token(found)
        return Response(status_code=200, headers=NO_STORE)


class _HungUp(Exception):
    """The client went away before its body arrived: nobody to answer."""


async def _body(receive) -> bytes:
    chunks = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            raise _HungUp
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _cors(app, methods: list[str]):
    """As the SDK's endpoints answer browsers (its `cors_middleware`, around any ASGI app)."""
    return CORSMiddleware(app, allow_origins="*", allow_methods=methods, allow_headers=[MCP_PROTOCOL_VERSION_HEADER])


def _form(app):
    """`app` (the SDK's token handler, our revocation) behind the strict reading of its form
    (oauth/forms.py); the client_id of an HTTP Basic header added to the form when it has none."""

    async def read(scope, receive, send):
        if scope["method"] != "POST":
            return await app(scope, receive, send)
        try:
            forms.check_media_type(scope)
            fields = forms.parse(await _body(receive))
        except forms.FormProblem as exc:
            return await oauth_error(400, "invalid_request", exc.message)(scope, receive, send)
        except _HungUp:
            return None
        if "client_id" not in fields and (client_id := forms.basic_client_id(scope)) is not None:
            fields["client_id"] = client_id
        scope, receive = forms.replaced_body(scope, receive, forms.encode(fields))
        await app(scope, receive, send)

    return read


def _authorization(endpoint: AuthorizationEndpoint):
    """/authorize: its query (GET) or form (POST) read strictly, then answered (oauth/authorize.py)."""

    async def read(scope, receive, send):
        try:
            if scope["method"] == "POST":
                forms.check_media_type(scope)
                fields = forms.parse(await _body(receive))
            else:
                fields = forms.parse(scope.get("query_string", b""), "query")
        except forms.FormProblem as exc:
            return await error_page(scope, 400, "invalid_request", exc.message)(scope, receive, send)
        except _HungUp:
            return None
        response = await endpoint.answer(scope, fields)
        await response(scope, receive, send)

    return read


def _admitted(rt: Runtime, app):
    """A registration admitted (oauth/registration.py) before its body is read."""

    async def admit(scope, receive, send):
        if scope["method"] == "POST":
            try:
                await registration.admit(rt)
            except Limited as exc:
                answer = oauth_error(429, "temporarily_unavailable", exc.message, {"Retry-After": str(exc.retry_after)})
                return await answer(scope, receive, send)
        await app(scope, receive, send)

    return admit
