"""What every HTTP request must pass before any route or MCP server sees it.

Browsers: a page the user visits may send requests to a server on the user's own machine, and
through DNS rebinding (its name re-pointed at 127.0.0.1) even read the answers; with the default
open mode that would be every bank. The MCP specification asks servers to validate `Origin` on
Streamable HTTP, and we hold REST to the same: a request that carries an `Origin` (browsers
send it; curl, the SDKs and Claude Code do not) must come from the server's own origin (the
console) or one the operator allowed, and the server answers only to Host values a rebound page
cannot have: IP addresses, loopback names, this machine's own name and the names the operator
lists (a rebound page's requests are same-origin, so they need not carry an Origin at all).

"""

from __future__ import annotations

import ipaddress
import re
import socket
from urllib.parse import urlsplit

from hindsight.config import Settings
from hindsight.engine.errors import Forbidden, HindsightError
from hindsight.web.errors import InvalidHeader

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


_LABEL = r"[a-z0-9_](?:[a-z0-9_-]{0,61}[a-z0-9_])?"
_HOST = re.compile(rf"^(?:\[(?P<ip6>[0-9a-f:.]+)\]|(?P<name>{_LABEL}(?:\.{_LABEL})*\.?))(?::(?P<port>[0-9]{{1,5}}))?$")


def _split_host(value: str) -> tuple[str, int | None]:
    """`host[:port]` (IPv6 in brackets) into its name and port; ("", None) for anything that is
    not exactly that (userinfo, paths, fragments, stray characters): such a Host is refused."""
    m = _HOST.match(value.strip().lower())
    if m is None:
        return "", None
    name = m.group("ip6") or m.group("name")
    if m.group("ip6"):
        try:
            ipaddress.IPv6Address(name)
        except ValueError:
            return "", None
    return name, int(m.group("port")) if m.group("port") else None


def _ip_literal(name: str) -> bool:
    try:
        ipaddress.ip_address(name)
        return True
    except ValueError:
        return False


def _machine_names() -> set[str]:
    names = {socket.gethostname().lower()}
    try:
        names.add(socket.getfqdn().lower())
    except OSError:
        pass
    return {n for n in names if n}


def _origin(value: str) -> str | None:
    """An origin normalised for comparison: scheme://host[:port], default ports dropped; None
    for anything that is not exactly an origin (userinfo, a path, a query)."""
    try:
        parts = urlsplit(value.strip())
        host, port = parts.hostname, parts.port
    except ValueError:
        return None
    if parts.scheme not in ("http", "https") or not host or "@" in parts.netloc or parts.path or parts.query:
        return None
    if port == {"http": 80, "https": 443}[parts.scheme]:
        port = None
    host = f"[{host}]" if ":" in host else host
    return f"{parts.scheme}://{host.lower()}" + (f":{port}" if port else "")


class HostOriginRules:
    """The Host and Origin rules, configured once from the settings."""

    def __init__(self, settings: Settings):
        hosts = [h.strip().lower() for h in settings.allowed_hosts.split(",") if h.strip()]
        origins = [o.strip() for o in settings.allowed_origins.split(",") if o.strip()]
        self.any_host = "*" in hosts
        # A browser sends the Host of the page's own URL, so a DNS-rebound page arrives under the
        # attacker's name: a Host that is an IP address, a loopback name, this machine's own name
        # or a listed one cannot be that. Any other name is refused, however the server is bound
        # (a server on 0.0.0.0 is rebinding's prize on a LAN, and in a container).
        self.hosts = {_split_host(h)[0] or h for h in hosts if h != "*"} | _machine_names()
        self.any_origin = "*" in origins
        self.origins = {n for o in origins if o != "*" and (n := _origin(o))}

    def host_allowed(self, host: str | None) -> bool:
        if self.any_host:
            return True
        name, _ = _split_host(host or "")
        return bool(name) and (_ip_literal(name) or is_loopback(name) or name.rstrip(".") in self.hosts)

    def origin_allowed(self, origin: str, host: str | None, scheme: str) -> bool:
        if self.any_origin:
            return True
        normal = _origin(origin)
        if normal is None:  # "null" (sandboxed frames, files) and anything malformed
            return False
        return normal in self.origins or normal == _origin(f"{scheme}://{host or ''}")

    def refusal(self, scope) -> HindsightError | None:
        """The error that refuses the request here, else None."""
        seen = [(k.decode(), v.decode("latin-1")) for k, v in scope.get("headers", []) if k in (b"host", b"origin")]
        headers = dict(seen)
        if len(headers) < len(seen):  # two Host or Origin headers: which one is meant is anyone's guess
            return InvalidHeader("more than one Host or Origin header", "Host")
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
        return None


class HostOriginGuard:
    """Middleware: a request the rules refuse is refused (raised to error_answers.py) before any
    route or MCP server sees it."""

    def __init__(self, app, rules: HostOriginRules):
        self.app = app
        self.rules = rules

    async def __call__(self, scope, receive, send):
        if scope["type"] == "http" and (refused := self.rules.refusal(scope)) is not None:
            raise refused
        await self.app(scope, receive, send)
