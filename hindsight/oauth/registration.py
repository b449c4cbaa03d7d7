"""Open registration, bounded.

Anyone who reaches the server may add a client: by registering (RFC 7591, as hosted assistants
need) or by naming a Client ID Metadata Document at /authorize. So each new client is admitted
first, against counts kept in PostgreSQL (shared by every server process):

- one address adds at most HINDSIGHT_API_OAUTH_REGISTRATIONS_PER_HOUR clients in an hour (an IPv6
  /64 counts as one address: one host commonly holds a whole /64); past that, 429 with a
  Retry-After of when the first of them leaves the hour;
- at most HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENTS clients that no person approved are kept; past
  that, 429 with a Retry-After of when the oldest of them expires;
- a client no person approved is deleted HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENT_TTL seconds after
  it came, by the next admission (a few hundred at a time; it has no grant in any bank, so no
  bank's rows go with it: store.registration_load, migration 020);
- what a client declares is bounded in size (clients.check_metadata: 400).

Two registrations at the same instant may both pass at a limit; the limits bound growth, they
are not a count to the unit. The address is the connection's, or the one a proxy uvicorn trusts
forwards (X-Forwarded-For from FORWARDED_ALLOW_IPS, loopback by default).
"""

from __future__ import annotations

import ipaddress
import math
from contextvars import ContextVar
from typing import TYPE_CHECKING

from hindsight.oauth import store

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

WINDOW_SECONDS = 3600.0
# The address of the request being served: the endpoints set it (oauth/endpoints.py) for the
# SDK's handlers, which call the provider without the request.
_ADDRESS: ContextVar[str | None] = ContextVar("hindsight_oauth_address", default=None)


class Limited(Exception):
    """A new client refused for now: 429 with Retry-After."""

    def __init__(self, message: str, retry_after: float | None):
        super().__init__(message)
        self.message = message
        self.retry_after = max(1, math.ceil(retry_after)) if retry_after is not None else 60


def client_address(scope) -> str | None:
    """The address a request came from, as registrations are counted: an IPv4 address, or the
    /64 network of an IPv6 one."""
    client = scope.get("client")
    host = client[0] if client else None
    if not host:
        return None
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        return str(host)[:100]
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            return str(ip.ipv4_mapped)
        return str(ipaddress.ip_network(f"{ip}/64", strict=False))
    return str(ip)


def serve_address(scope) -> None:
    _ADDRESS.set(client_address(scope))


def current_address() -> str | None:
    return _ADDRESS.get()


async def admit(rt: Runtime) -> str | None:
    """Admit a new client from the current request's address (raises Limited); the address to
    record with it."""
    s = rt.settings
    address = current_address()
    load = await store.registration_load(rt, address, WINDOW_SECONDS, float(s.oauth_unapproved_client_ttl))
    if address is not None and load.recent >= s.oauth_registrations_per_hour:
        raise Limited(
            f"{load.recent} clients came from this address in the last hour, the limit "
            "(HINDSIGHT_API_OAUTH_REGISTRATIONS_PER_HOUR); retry after Retry-After seconds",
            load.recent_frees_in,
        )
    if load.unapproved >= s.oauth_unapproved_clients:
        raise Limited(
            f"{load.unapproved} clients await a person's approval, the most this server keeps "
            "(HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENTS); the oldest expire first, retry after Retry-After seconds",
            load.unapproved_frees_in,
        )
    return address
