"""Fetching a document from a URL a client named, without letting the client reach our network.

A server that fetches URLs for its callers is an SSRF risk: by default every request, the first
and each redirect hop, must go to a public address. The check is an httpx request hook because a
public page may redirect to `http://169.254.169.254/` or `localhost`; checking only the URL the
client sent would follow it there. The body is streamed and cut at the document size limit."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable

import httpx

from .readers import UnreadableFile

TIMEOUT_S = 30
MAX_REDIRECTS = 5


def public_host(host: str) -> bool:
    """Whether every address `host` resolves to is public (an unresolvable name is left to the
    fetch, which reports it)."""
    try:
        infos = socket.getaddrinfo(host, None)
    except socket.gaierror:
        return True
    for info in infos:
        ip = ipaddress.ip_address(info[4][0])
        if ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast:
            return False
    return True


async def fetch(
    url: str, *, max_bytes: int, allow_private: bool, public: Callable[[str], bool] = public_host
) -> tuple[bytes, str | None]:
    """The body and content type at `url`. Raises UnreadableFile naming the URL (and the hop that
    was refused, when a redirect led to a private address)."""

    async def guard(request: httpx.Request) -> None:
        host = request.url.host
        if not allow_private and not await asyncio.to_thread(public, host):
            hop = "" if str(request.url) == url else f" (redirected to {request.url})"
            raise UnreadableFile(
                f"{url}: private, loopback and link-local addresses are refused{hop} "
                "(HINDSIGHT_API_ALLOW_PRIVATE_URLS=true allows them)",
                "urls",
            )

    hooks = {"request": [guard]}
    try:
        async with httpx.AsyncClient(
            timeout=TIMEOUT_S, follow_redirects=True, max_redirects=MAX_REDIRECTS, event_hooks=hooks
        ) as client:
            async with client.stream("GET", url) as r:
                if r.status_code >= 400:
                    raise UnreadableFile(f"{url}: HTTP {r.status_code}", "urls")
                data = bytearray()
                async for chunk in r.aiter_bytes():
                    data += chunk
                    if len(data) > max_bytes:
                        raise UnreadableFile(f"{url}: larger than {max_bytes} bytes", "urls")
                return bytes(data), r.headers.get("content-type")
    except httpx.HTTPError as exc:
        raise UnreadableFile(f"{url}: {type(exc).__name__}: {exc}", "urls") from None
