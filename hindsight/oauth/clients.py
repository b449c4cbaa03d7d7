"""Who may be a client, and what a client may declare about itself.

Registration (RFC 7591) is open to anyone who can reach the server, as hosted assistants need it
to be, and a Client ID Metadata Document is fetched from a URL anyone can name; so what either
declares is held to rules before it is stored or shown to a person: the text rule of every
request (engine/rules/text.py), bounded sizes, and redirect URIs that can only land where the client
itself is (https, the loopback interface of a native app, or a native app's private-use scheme),
never a `javascript:` or `data:` URL. Redirect URIs then match exactly (the SDK compares them).
How many clients may come, and how long one no person approved is kept: oauth/registration.py.

Client ID Metadata Documents (MCP authorization, "Client ID Metadata Documents"): the client id
is an https URL whose JSON names the client and its redirect URIs. It is fetched like a URL
import (files/fetch.py: public addresses only unless HINDSIGHT_API_ALLOW_PRIVATE_URLS, every
redirect checked), kept for an hour, and must name itself as its `client_id`.
"""

from __future__ import annotations

import ipaddress
import json
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

from mcp.server.auth.provider import RegistrationError
from mcp.shared.auth import OAuthClientInformationFull
from pydantic import ValidationError

from hindsight.engine.rules.text import problem
from hindsight.files.fetch import fetch
from hindsight.files.readers import UnreadableFile
from hindsight.oauth import registration, store

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

SCOPES = ["read", "write"]
MAX_REDIRECT_URIS = 10
MAX_URI_CHARS = 2000
MAX_TEXT_CHARS = 300
MAX_DOCUMENT_BYTES = 64 * 1024
# What a client declares, as stored: room for ten redirect URIs of 2,000 characters and the rest.
MAX_METADATA_BYTES = 24 * 1024
MAX_CONTACTS = 10
DOCUMENT_SECONDS = 3600
_REFUSED_SCHEMES = {"javascript", "data", "file", "vbscript", "about", "blob", "filesystem"}
_TEXT_FIELDS = ("client_name", "software_id", "software_version")


def is_loopback_host(host: str) -> bool:
    """The loopback interface by address or by name (RFC 8252, section 7.3: a native app's
    redirect listener; `localhost` is allowed too, as clients use it)."""
    host = host.strip("[]").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class ClientProblem(Exception):
    def __init__(self, message: str, redirect: bool = False):
        super().__init__(message)
        self.message = message
        self.redirect = redirect


def redirect_uri_problem(uri: str) -> str | None:
    """Why `uri` may not be a redirect URI, or None."""
    if len(uri) > MAX_URI_CHARS:
        return f"redirect URI longer than {MAX_URI_CHARS} characters"
    try:
        parts = urlsplit(uri)
        host = parts.hostname
    except ValueError:
        return f"redirect URI {uri!r:.200} is not a URL"
    scheme = parts.scheme.lower()
    if parts.fragment or "#" in uri:
        return "a redirect URI may not have a fragment"
    if scheme in _REFUSED_SCHEMES or not scheme:
        return f"redirect URI scheme {scheme!r} is refused"
    if scheme in ("http", "https"):
        if not host:
            return f"redirect URI {uri!r:.200} has no host"
        if parts.username is not None or parts.password is not None:
            return "a redirect URI may not carry user information"
        if scheme == "http" and not is_loopback_host(host):
            return "an http redirect URI must be on the loopback interface (127.0.0.1, [::1], localhost); use https"
        return None
    # A native app's private-use scheme is a reversed domain name it owns (RFC 8252, section 7.1).
    if "." not in scheme:
        return f"redirect URI scheme {scheme!r}: a private-use scheme is a reversed domain name (com.example.app)"
    return None


def check_metadata(metadata: dict[str, Any]) -> None:
    """Refuse metadata that breaks the rules above (raises ClientProblem)."""
    if p := problem(metadata):
        raise ClientProblem(f"client metadata: {p}")
    uris = metadata.get("redirect_uris") or []
    if not uris:
        raise ClientProblem("redirect_uris: at least one redirect URI is required", redirect=True)
    if len(uris) > MAX_REDIRECT_URIS:
        raise ClientProblem(f"redirect_uris: at most {MAX_REDIRECT_URIS}", redirect=True)
    for uri in uris:
        if p := redirect_uri_problem(str(uri)):
            raise ClientProblem(f"redirect_uris: {p}", redirect=True)
    for name in _TEXT_FIELDS:
        value = metadata.get(name)
        if isinstance(value, str) and len(value) > MAX_TEXT_CHARS:
            raise ClientProblem(f"{name}: longer than {MAX_TEXT_CHARS} characters")
    for name, value in metadata.items():
        if name.endswith("_uri") and isinstance(value, str) and len(value) > MAX_URI_CHARS:
            raise ClientProblem(f"{name}: longer than {MAX_URI_CHARS} characters")
    if metadata.get("token_endpoint_auth_method") not in (None, "none", "client_secret_post", "client_secret_basic"):
        raise ClientProblem("token_endpoint_auth_method: none, client_secret_post or client_secret_basic")
    contacts = metadata.get("contacts")
    if isinstance(contacts, list) and len(contacts) > MAX_CONTACTS:
        raise ClientProblem(f"contacts: at most {MAX_CONTACTS}")
    size = len(json.dumps(metadata, ensure_ascii=False).encode())
    if size > MAX_METADATA_BYTES:
        raise ClientProblem(f"client metadata: {size} bytes of JSON, more than {MAX_METADATA_BYTES}")


def declared_text(metadata: dict[str, Any], name: str) -> str | None:
    """A text field a client declared about itself (`client_name`, `client_uri`), if it is text."""
    value = metadata.get(name)
    return value if isinstance(value, str) else None


def registration_error(exc: ClientProblem) -> RegistrationError:
    return RegistrationError("invalid_redirect_uri" if exc.redirect else "invalid_client_metadata", exc.message)


def as_client(client_id: str, metadata: dict[str, Any]) -> OAuthClientInformationFull:
    """The SDK's record of a client. Its `client_secret` is left out: only the hash is kept, and
    the token endpoint's authenticator compares against it (oauth/endpoints.py). Every client
    may ask for the two scopes there are, whatever it registered."""
    record = {k: v for k, v in metadata.items() if k not in ("client_secret", "client_id")}
    declared = str(record.get("scope") or "").split()
    record["scope"] = " ".join(dict.fromkeys([*declared, *SCOPES]))
    return OAuthClientInformationFull.model_validate({**record, "client_id": client_id})


def is_document_id(client_id: str) -> bool:
    """Whether a client id is a Client ID Metadata Document's URL: https, with a path."""
    try:
        parts = urlsplit(client_id)
    except ValueError:
        return False
    return parts.scheme == "https" and bool(parts.hostname) and parts.path not in ("", "/") and not parts.fragment


async def document_client(rt: Runtime, client_id: str) -> tuple[OAuthClientInformationFull, bool] | None:
    """The client a metadata document describes, and whether a person ever approved it: kept an
    hour, then fetched again (an earlier copy under a day old stands in while its site is down).
    None when there is no usable one. A document not seen before is a new client: admitted
    first (registration.admit raises Limited)."""
    stored = await store.get_client(rt, client_id)
    if stored is not None and stored.kind == "registered":
        return None  # a registered client's id is a UUID; a URL-shaped one was never ours
    fresh = stored is not None and _age(stored.fetched_at) < DOCUMENT_SECONDS
    if not fresh:
        address = await registration.admit(rt) if stored is None else None
        try:
            metadata = await _fetch_document(rt, client_id)
        except ClientProblem:
            if stored is None or _age(stored.fetched_at) > 86_400:
                raise
            metadata = stored.metadata
        else:
            await store.save_document_client(rt, client_id, metadata, address)
    else:
        assert stored is not None
        metadata = stored.metadata
    return as_client(client_id, metadata), stored is not None and stored.approved_at is not None


def _age(when: datetime) -> float:
    return time.time() - when.astimezone(UTC).timestamp()


async def _fetch_document(rt: Runtime, client_id: str) -> dict[str, Any]:
    try:
        body, _ = await fetch(client_id, max_bytes=MAX_DOCUMENT_BYTES, allow_private=rt.settings.allow_private_urls)
    except UnreadableFile as exc:
        raise ClientProblem(f"client metadata document: {exc.message}") from None
    try:
        metadata = json.loads(body)
    except ValueError:
        raise ClientProblem("client metadata document: not JSON") from None
    if not isinstance(metadata, dict):
        raise ClientProblem("client metadata document: not a JSON object")
    if metadata.get("client_id") != client_id:
        raise ClientProblem("client metadata document: its client_id is not the URL it was fetched from")
    if metadata.get("client_secret") is not None or metadata.get("client_secret_expires_at") is not None:
        raise ClientProblem("client metadata document: may not carry a client secret")
    if metadata.get("token_endpoint_auth_method") not in (None, "none"):
        raise ClientProblem("client metadata document: token_endpoint_auth_method must be none")
    check_metadata(metadata)
    try:
        as_client(client_id, metadata)
    except ValidationError as exc:
        raise ClientProblem(f"client metadata document: {exc.errors()[0].get('msg', 'invalid')}") from None
    metadata["token_endpoint_auth_method"] = "none"
    return metadata
