"""What every HTTP request must pass before any route or MCP server sees it.

Browsers: a page the user visits may send requests to a server on the user's own machine, and
through DNS rebinding (its name re-pointed at 127.0.0.1) even read the answers; with the default
open mode that would be every bank. The MCP specification asks servers to validate `Origin` on
Streamable HTTP, and we hold REST to the same: a request that carries an `Origin` (browsers
send it; curl, the SDKs and Claude Code do not) must come from the server's own origin (the
console) or one the operator allowed, and a server bound to a loopback address answers only to
loopback host names, which a rebound name is not.

URLs: the request models hold bodies to one text rule (engine/strict.py); path and query
parameters are checked here with the same rule, so a NUL in `?q=` or a path id is a 422 naming
the parameter, not a database error.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import parse_qsl, urlsplit

from ..config import Settings
from ..engine.errors import Forbidden, HindsightError, InvalidArgument
from ..engine.strict import text_problem

LOOPBACK_NAMES = {"localhost", "localhost.", "ip6-localhost"}


def is_loopback(host: str) -> bool:
    """Whether a host name or address (no port) stands for this machine's loopback interface."""
    host = host.strip("[]").lower()
    if host in LOOPBACK_NAMES or host.endswith(".localhost"):
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def _split_host(value: str) -> tuple[str, int | None]:
    """`host[:port]` (IPv6 in brackets) into its name and port."""
    try:
        parts = urlsplit("//" + value)
        return (parts.hostname or "").lower(), parts.port
    except ValueError:
        return "", None


def _origin(value: str) -> str | None:
    """An origin normalised for comparison: scheme://host[:port], default ports dropped."""
    try:
        parts = urlsplit(value.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host:
        return None
    if port == {"http": 80, "https": 443}[parts.scheme]:
        port = None
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host.lower()}" + (f":{port}" if port else "")


class Edge:
    """The Host and Origin rules and the URL text rule, configured once from the settings."""

    def __init__(self, settings: Settings):
        hosts = [h.strip().lower() for h in settings.allowed_hosts.split(",") if h.strip()]
        origins = [o.strip() for o in settings.allowed_origins.split(",") if o.strip()]
        self.any_host = "*" in hosts
        self.hosts = {_split_host(h)[0] or h for h in hosts if h != "*"}
        # Bound to loopback, only this machine can connect, so only a rebound name could bring
        # a browser here under another Host; bound elsewhere, the names are the operator's.
        self.check_host = not self.any_host and (is_loopback(settings.host) or bool(self.hosts))
        self.any_origin = "*" in origins
        self.origins = {n for o in origins if o != "*" and (n := _origin(o))}

    def host_allowed(self, host: str | None) -> bool:
        if not self.check_host:
            return True
        name, _ = _split_host(host or "")
        return bool(name) and (is_loopback(name) or name in self.hosts)

    def origin_allowed(self, origin: str, host: str | None, scheme: str) -> bool:
        if self.any_origin:
            return True
        normal = _origin(origin)
        if normal is None:  # "null" (sandboxed frames, files) and anything malformed
            return False
        return normal in self.origins or normal == _origin(f"{scheme}://{host or ''}")

    def refusal(self, scope) -> HindsightError | None:
        """The error that refuses the request here, else None."""
        headers = {k.decode(): v.decode("latin-1") for k, v in scope.get("headers", []) if k in (b"host", b"origin")}
        host = headers.get("host")
        if not self.host_allowed(host):
            return Forbidden(
                f"Host {host!r} is not one this server answers to (a DNS-rebinding guard); "
                "add it to HINDSIGHT_API_ALLOWED_HOSTS"
            )
        origin = headers.get("origin")
        if origin is not None and not self.origin_allowed(origin, host, scope.get("scheme", "http")):
            return Forbidden(
                f"requests from the web page origin {origin!r} are refused; "
                "add it to HINDSIGHT_API_ALLOWED_ORIGINS to allow it"
            )
        return url_refusal(scope)


def url_refusal(scope) -> InvalidArgument | None:
    """A 422 naming the path or query parameter whose text breaks the rule of engine/strict.py."""
    if p := text_problem(scope.get("path", "")):
        return InvalidArgument(f"path: {p}", "path")
    query = scope.get("query_string", b"").decode("latin-1")
    for name, value in parse_qsl(query, keep_blank_values=True):
        for what, text in (("name", name), ("value", value)):
            if p := text_problem(text):
                where = name if what == "value" and not text_problem(name) else "query"
                return InvalidArgument(f"{where}: {p}", where)
    return None
