"""Fetching a document from a URL a client named, and sending a webhook to one, without letting
the client reach our network.

A server that fetches URLs for its callers is an SSRF risk: by default every request, the first
and each redirect hop, must go to a public address. Redirects are followed here, not by httpx,
because a public page may redirect to `http://169.254.169.254/` or `localhost`; checking only the
URL the client sent would follow it there.

Checking a name and then letting the HTTP client look it up again to connect is not enough
either: a name whose DNS answer changes between the two lookups (DNS rebinding) passes the check
with a public address and connects to a private one. So each hop's name is looked up once, and
the connection goes to an address that lookup returned and the check passed. The name still goes
in the Host header and, for https, as SNI and as the name the certificate must be valid for, so
pinning the address does not weaken TLS. Proxies from the environment are not used: a proxy
would look the name up again. The body is streamed and cut at the document size limit.

`send` (webhook deliveries) makes one request under the same rules and follows no redirect: a
receiver that answers 3xx has not received the event."""

from __future__ import annotations

import asyncio
import ipaddress
import socket
import ssl
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from hindsight.files.readers import UnreadableFile

if TYPE_CHECKING:
    import httpx

TIMEOUT_S = 30
MAX_REDIRECTS = 5

Resolver = Callable[[str], list[str]]

_NAT64 = ipaddress.ip_network("64:ff9b::/96")


def resolve(host: str) -> list[str]:
    """The addresses `host` resolves to, in the system's order of preference (raises OSError or
    UnicodeError when it does not resolve)."""
    infos = socket.getaddrinfo(host, None, type=socket.SOCK_STREAM)
    return list(dict.fromkeys(str(info[4][0]) for info in infos))


def public_address(address: str) -> bool:
    """Whether `address` is on the public internet. An IPv6 address that only wraps an IPv4 one
    (IPv4-mapped, 6to4, the NAT64 prefix) is judged by the IPv4 address it reaches, so that
    `::ffff:127.0.0.1` is loopback; `is_global` also refuses shared space such as 100.64/10,
    where some clouds put their metadata service."""
    ip: ipaddress.IPv4Address | ipaddress.IPv6Address = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address):
        if ip.ipv4_mapped is not None:
            ip = ip.ipv4_mapped
        elif ip.sixtofour is not None:
            ip = ip.sixtofour
        elif ip in _NAT64:
            ip = ipaddress.IPv4Address(int(ip) & 0xFFFFFFFF)
    return ip.is_global and not (
        ip.is_private or ip.is_loopback or ip.is_link_local or ip.is_reserved or ip.is_multicast or ip.is_unspecified
    )


async def fetch(
    url: str,
    *,
    max_bytes: int,
    allow_private: bool,
    resolver: Resolver = resolve,
    is_public: Callable[[str], bool] = public_address,
    ssl_context: ssl.SSLContext | None = None,
) -> tuple[bytes, str | None]:
    """The body and content type at `url`. Raises UnreadableFile naming the URL (and the hop that
    was refused, when a redirect led there). `resolver`, `is_public` and `ssl_context` are there
    for tests, which serve "public" sites and made-up names on this machine."""
    import httpx  # loaded by the first fetch: a server that fetches nothing never holds it (~4 MB)

    verify = httpx.create_ssl_context() if ssl_context is None else ssl_context
    try:
        current = httpx.URL(url)
        for hop in range(MAX_REDIRECTS + 1):
            where = "" if hop == 0 else f" (redirected to {current})"
            if current.scheme not in ("http", "https"):
                raise UnreadableFile(f"{url}: not an http(s) URL{where}", "urls")
            addresses = await _resolve(url, current, where, resolver)
            if not allow_private and not all(is_public(a) for a in addresses):
                raise UnreadableFile(
                    f"{url}: private, loopback and link-local addresses are refused{where} "
                    "(HINDSIGHT_API_ALLOW_PRIVATE_URLS=true allows them)",
                    "urls",
                )
            # A client per hop: no connection, cookie or TLS session carries over to another name.
            async with httpx.AsyncClient(verify=verify, timeout=TIMEOUT_S, trust_env=False) as client:
                r = await _open(client, current, addresses)
                try:
                    if r.has_redirect_location:
                        current = current.join(r.headers["location"])
                        continue
                    if r.status_code >= 400:
                        raise UnreadableFile(f"{url}: HTTP {r.status_code}", "urls")
                    data = bytearray()
                    async for chunk in r.aiter_bytes():
                        data += chunk
                        if len(data) > max_bytes:
                            raise UnreadableFile(f"{url}: larger than {max_bytes} bytes", "urls")
                    return bytes(data), r.headers.get("content-type")
                finally:
                    await r.aclose()
        raise UnreadableFile(f"{url}: more than {MAX_REDIRECTS} redirects", "urls")
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise UnreadableFile(f"{url}: {type(exc).__name__}: {exc}", "urls") from None


async def _resolve(url: str, at: httpx.URL, where: str, resolver: Resolver) -> list[str]:
    host = at.raw_host.decode("ascii")
    try:
        addresses = await asyncio.wait_for(asyncio.to_thread(resolver, host), TIMEOUT_S) if host else []
    except TimeoutError:
        raise UnreadableFile(f"{url}: {host} did not resolve in {TIMEOUT_S} s{where}", "urls") from None
    except (OSError, UnicodeError) as exc:
        raise UnreadableFile(f"{url}: {host or 'no host'} does not resolve ({exc}){where}", "urls") from None
    if not addresses:
        raise UnreadableFile(f"{url}: {host or 'no host'} does not resolve{where}", "urls")
    return addresses


async def _open(client: httpx.AsyncClient, at: httpx.URL, addresses: list[str]) -> httpx.Response:
    """The response from the first of `addresses` that accepts a connection (a refused or
    unreachable address, an IPv6 one on a host without IPv6 say, moves on to the next, as
    httpx's own connect would; a timeout does not, so that a name with many silent addresses
    cannot hold the import for long)."""
    import httpx

    extensions = {"sni_hostname": at.raw_host.decode("ascii")} if at.scheme == "https" else {}
    for i, address in enumerate(addresses):
        request = client.build_request(
            "GET", at.copy_with(host=address), headers={"Host": at.netloc.decode("ascii")}, extensions=extensions
        )
        try:
            return await client.send(request, stream=True)
        except httpx.ConnectError:
            if i == len(addresses) - 1:
                raise
    raise AssertionError("unreachable: addresses is never empty")


class Refused(Exception):
    """A destination this server does not send to (a private address without
    HINDSIGHT_API_ALLOW_PRIVATE_URLS, a URL that is not http(s)): sending again cannot help."""


class Unreachable(Exception):
    """A destination that could not be reached this time (its name did not resolve, the
    connection failed, no answer in time): sending again later may work."""


@dataclass
class Sent:
    status: int
    body: str  # its first SENT_BODY_CHARS characters


SENT_BODY_CHARS = 1_000


async def send(
    url: str,
    *,
    content: bytes,
    headers: dict[str, str],
    params: dict[str, str],
    timeout: float,
    allow_private: bool,
    resolver: Resolver = resolve,
    is_public: Callable[[str], bool] = public_address,
    ssl_context: ssl.SSLContext | None = None,
) -> Sent:
    """POST `content` to `url` (with `params` added to its query), to an address its name resolved
    to and that passed the check, as fetch() connects. Raises Refused or Unreachable."""
    import httpx  # as in fetch()

    verify = httpx.create_ssl_context() if ssl_context is None else ssl_context
    try:
        at = httpx.URL(url)
        if params:
            at = at.copy_merge_params(params)
    except (httpx.InvalidURL, TypeError) as exc:
        raise Refused(f"{url}: not a URL ({exc})") from None
    if at.scheme not in ("http", "https") or not at.raw_host:
        raise Refused(f"{url}: not an http(s) URL")
    host = at.raw_host.decode("ascii")
    try:
        addresses = await asyncio.wait_for(asyncio.to_thread(resolver, host), timeout)
    except TimeoutError:
        raise Unreachable(f"{host} did not resolve in {timeout:g} s") from None
    except (OSError, UnicodeError) as exc:
        raise Unreachable(f"{host} does not resolve ({exc})") from None
    if not addresses:
        raise Unreachable(f"{host} does not resolve")
    if not allow_private and not all(is_public(a) for a in addresses):
        raise Refused(
            f"{host}: private, loopback and link-local addresses are refused "
            "(HINDSIGHT_API_ALLOW_PRIVATE_URLS=true allows them)"
        )
    extensions = {"sni_hostname": host} if at.scheme == "https" else {}
    async with httpx.AsyncClient(verify=verify, timeout=timeout, trust_env=False) as client:
        for i, address in enumerate(addresses):
            request = client.build_request(
                "POST",
                at.copy_with(host=address),
                content=content,
                headers={**headers, "Host": at.netloc.decode("ascii")},
                extensions=extensions,
            )
            try:
                r = await client.send(request, stream=True)
            except httpx.ConnectError as exc:
                if i == len(addresses) - 1:
                    raise Unreachable(f"{host}: {type(exc).__name__}: {exc}") from None
                continue
            except httpx.HTTPError as exc:
                raise Unreachable(f"{host}: {type(exc).__name__}: {exc}") from None
            try:
                body = bytearray()
                async for chunk in r.aiter_bytes():
                    body += chunk
                    if len(body) >= SENT_BODY_CHARS * 4:
                        break
                return Sent(r.status_code, body.decode("utf-8", "replace")[:SENT_BODY_CHARS])
            except httpx.HTTPError as exc:
                raise Unreachable(f"{host}: {type(exc).__name__} while reading the answer: {exc}") from None
            finally:
                await r.aclose()
    raise AssertionError("unreachable: addresses is never empty")
