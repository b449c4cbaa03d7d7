"""The authorization endpoint (RFC 6749, section 4.1.1), ours instead of the SDK's handler, for
where its errors go.

Anyone may register a client with any https redirect URI, so a registered redirect URI proves
nothing about who is behind it, and an authorization server that sends its errors there with no
person involved is an open redirector (RFC 9700, section 4.11.2: redirect automatically only to
a redirect URI it trusts). The SDK's handler redirected an error to a client's only redirect URI
when the request named none, and tried to before the request's other parameters were read. Here
an error goes back to the client only when all of this holds, checked in this order:

- the request is readable (oauth/forms.py) and names a client this server knows;
- it names a redirect URI, and that is exactly (as a string) one the client registered;
- a person has approved this client before on the consent page: its redirect URIs are where a
  person agreed to send their browser.

Otherwise the person sees an error page (HTML; JSON when the request accepts only JSON) and goes
nowhere. A request without errors goes to the consent page, which shows where the browser will
go next before the person decides. Error redirects carry `iss` (RFC 9207), as the metadata says.
"""

from __future__ import annotations

import html
from typing import TYPE_CHECKING

from mcp.server.auth.errors import stringify_pydantic_error
from mcp.server.auth.handlers.authorize import AuthorizationRequest
from mcp.server.auth.provider import AuthorizationParams, AuthorizeError, construct_redirect_uri
from mcp.shared.auth import InvalidRedirectUriError, InvalidScopeError
from pydantic import AnyUrl, ValidationError
from starlette.responses import HTMLResponse, JSONResponse, RedirectResponse, Response

from hindsight.oauth import forms
from hindsight.oauth.registration import Limited
from hindsight.web.scope import header

if TYPE_CHECKING:
    from hindsight.oauth.provider import Provider

NO_STORE = {"Cache-Control": "no-store"}
PAGE_HEADERS = {
    **NO_STORE,
    "Content-Security-Policy": "default-src 'none'; style-src 'self'; frame-ancestors 'none'; base-uri 'none'",
    "X-Content-Type-Options": "nosniff",
    "X-Frame-Options": "DENY",
    "Referrer-Policy": "no-referrer",
}
_PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Cannot connect · Hindsight</title>
  <link rel="stylesheet" href="/ui/style.css">
</head>
<body>
  <header><span class="brand">Hindsight</span></header>
  <main><div class="panel login">
    <h1>Cannot connect</h1>
    <p class="error" id="oauth-error" data-error="{error}">{description}</p>
    <p class="muted">The application's request to this server was refused ({error}). Nothing was
    approved, and this page sends you nowhere: close it and start again from the application.</p>
  </div></main>
</body>
</html>
"""


def error_page(scope, status: int, error: str, description: str, headers: dict[str, str] | None = None) -> Response:
    """An authorization error shown to the person: a page, or JSON for a client that accepts only
    JSON (RFC 6749 leaves the form to the server)."""
    accept = (header(scope, b"accept") or "").lower()
    extra = {**PAGE_HEADERS, **(headers or {})}
    if "application/json" in accept and "text/html" not in accept:
        return JSONResponse({"error": error, "error_description": description}, status_code=status, headers=extra)
    body = _PAGE.format(error=html.escape(error), description=html.escape(description))
    return HTMLResponse(body, status_code=status, headers=extra)


class AuthorizationEndpoint:
    """GET or POST /authorize for one issuer's provider."""

    def __init__(self, provider: Provider):
        self.provider = provider

    async def answer(self, scope, fields: dict[str, str]) -> Response:
        def page(error: str, description: str) -> Response:
            return error_page(scope, 400, error, description)

        client_id = fields.get("client_id")
        if not client_id:
            return page("invalid_request", "client_id: required")
        try:
            found = await self.provider.find_client(client_id)
        except Limited as exc:
            return error_page(scope, 429, "temporarily_unavailable", exc.message, {"Retry-After": str(exc.retry_after)})
        if found is None:
            return page("invalid_request", f"client_id: no client {client_id[:200]!r} is known to this server")
        client, approved = found
        named = fields.get("redirect_uri")
        try:
            redirect_uri = client.validate_redirect_uri(AnyUrl(named) if named is not None else None)
        except ValidationError:
            return page("invalid_request", "redirect_uri: not a URL")
        except InvalidRedirectUriError as exc:
            return page("invalid_request", f"redirect_uri: {exc.message}")
        trusted = approved and named is not None and named in {str(u) for u in client.redirect_uris or []}

        def fail(error: str, description: str) -> Response:
            if not trusted:
                return page(error, description)
            state = fields.get("state")
            url = construct_redirect_uri(
                str(redirect_uri),
                error=error,
                error_description=description,
                state=state if state is not None and len(state) <= forms.MAX_VALUE_CHARS else None,
                iss=self.provider.issuer,
            )
            return RedirectResponse(url, status_code=302, headers=NO_STORE)

        try:
            request = AuthorizationRequest.model_validate(fields)
        except ValidationError as exc:
            unsupported = any(e["loc"] == ("response_type",) and e["type"] == "literal_error" for e in exc.errors())
            return fail(
                "unsupported_response_type" if unsupported else "invalid_request", stringify_pydantic_error(exc)
            )
        try:
            scopes = client.validate_scope(request.scope)
        except InvalidScopeError as exc:
            return fail("invalid_scope", exc.message)
        params = AuthorizationParams(
            state=request.state,
            scopes=scopes,
            code_challenge=request.code_challenge,
            redirect_uri=redirect_uri,
            redirect_uri_provided_explicitly=named is not None,
            resource=request.resource,
        )
        try:
            location = await self.provider.authorize(client, params)
        except AuthorizeError as exc:
            return fail(exc.error, exc.error_description or exc.error)
        return RedirectResponse(location, status_code=302, headers=NO_STORE)
