"""URL fetching for document imports: every hop of a redirect is checked, not just the first, and
the connection goes to the address that was checked, so a DNS answer that changes between the
check and the connect (DNS rebinding) cannot lead anywhere else. Real local sites, real httpx;
only name resolution and the notion of "public" are the tests' own."""

from __future__ import annotations

import asyncio
import http.server
import ipaddress
import socket
import ssl
import threading
from types import SimpleNamespace

import pytest
import trustme

from hindsight.files.fetch import MAX_REDIRECTS, fetch, public_address, resolve
from hindsight.files.readers import UnreadableFile

BODY = b"<html><body><p>The Falcon X costs 199 euros.</p></body></html>"
PRIVATE = b"<html><body><p>The private network's secrets.</p></body></html>"

# This machine's 127.0.0.1 stands for the internet and 127.0.0.2 for the private network.
NAMES = {"public.test": ["127.0.0.1"], "private.test": ["127.0.0.2"], "mixed.test": ["127.0.0.1", "127.0.0.2"]}


def only_127_0_0_1(address: str) -> bool:
    return address == "127.0.0.1"


def resolver_of(names: dict[str, list[str]]):
    """A resolver that knows `names` (and IP literals) and nothing else, as DNS would."""

    def answer(host: str) -> list[str]:
        try:
            return [str(ipaddress.ip_address(host))]
        except ValueError:
            pass
        if host not in names:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        return names[host]

    return answer


def get(url: str, allow_private: bool = False, max_bytes: int = 1000, **kw):
    kw.setdefault("resolver", resolver_of(NAMES))
    kw.setdefault("is_public", only_127_0_0_1)
    return asyncio.run(fetch(url, max_bytes=max_bytes, allow_private=allow_private, **kw))


def serve(address: str, port: int, body: bytes, tls: ssl.SSLContext | None = None):
    """A local site on `address`:`port` (0 for any free port) that records the path and Host
    header of every request. /page serves `body`; /hop redirects to /page on `private.test`;
    /rel redirects to /page relatively; /loop redirects to itself; /ftp redirects to an ftp URL;
    /big is larger than the tests' limit; anything else is a 404."""
    seen: list[tuple[str, str]] = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            seen.append((self.path, self.headers["host"]))
            port = self.server.server_address[1]
            location = {
                "/hop": f"http://private.test:{port}/page",
                "/rel": "page",
                "/loop": "/loop",
                "/ftp": "ftp://public.test/page",
            }.get(self.path)
            if location:
                self.send_response(302)
                self.send_header("location", location)
                self.end_headers()
                return
            page = {"/page": body, "/big": b"x" * 5000}.get(self.path)
            self.send_response(200 if page else 404)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(page or b"")

        def log_message(self, *a):
            pass

    class Server(http.server.ThreadingHTTPServer):
        address_family = socket.AF_INET6 if ":" in address else socket.AF_INET

    srv = Server((address, port), H)
    if tls is not None:
        srv.socket = tls.wrap_socket(srv.socket, server_side=True)
    threading.Thread(target=srv.serve_forever, args=(0.05,), daemon=True).start()
    return srv, seen


@pytest.fixture
def sites():
    """The "public" site on 127.0.0.1 and the "private" one on 127.0.0.2, on the same port, so a
    name that switches between the two addresses names the same URL."""
    for _ in range(20):
        a, a_seen = serve("127.0.0.1", 0, BODY)
        try:
            b, b_seen = serve("127.0.0.2", a.server_port, PRIVATE)
            break
        except OSError:
            a.shutdown()
            a.server_close()
    else:
        pytest.skip("cannot listen on 127.0.0.2 with the port 127.0.0.1 got")
    yield SimpleNamespace(port=a.server_port, public=a_seen, private=b_seen)
    for srv in (a, b):
        srv.shutdown()
        srv.server_close()


def test_a_public_page_is_fetched(sites):
    data, ctype = get(f"http://public.test:{sites.port}/page")
    assert data == BODY and ctype == "text/html"
    assert get(f"http://127.0.0.1:{sites.port}/page")[0] == BODY  # an IP literal resolves to itself
    assert sites.public == [("/page", f"public.test:{sites.port}"), ("/page", f"127.0.0.1:{sites.port}")]


def test_a_redirect_into_a_private_address_is_refused(sites):
    with pytest.raises(UnreadableFile) as e:
        get(f"http://public.test:{sites.port}/hop")
    assert e.value.message == (
        f"http://public.test:{sites.port}/hop: private, loopback and link-local addresses are refused "
        f"(redirected to http://private.test:{sites.port}/page) (HINDSIGHT_API_ALLOW_PRIVATE_URLS=true allows them)"
    )
    assert sites.private == []
    assert get(f"http://public.test:{sites.port}/hop", allow_private=True)[0] == PRIVATE  # the setting allows it
    assert sites.private == [("/page", f"private.test:{sites.port}")]


def test_a_private_address_is_refused_even_among_public_ones(sites):
    with pytest.raises(UnreadableFile, match="private, loopback and link-local addresses are refused \\(HINDSIGHT"):
        get(f"http://mixed.test:{sites.port}/page")
    assert sites.public == [] and sites.private == []


def test_redirects_are_relative_bounded_and_http_only(sites):
    assert get(f"http://public.test:{sites.port}/rel")[0] == BODY
    assert sites.public == [("/rel", f"public.test:{sites.port}"), ("/page", f"public.test:{sites.port}")]
    with pytest.raises(UnreadableFile, match=f"/loop: more than {MAX_REDIRECTS} redirects"):
        get(f"http://public.test:{sites.port}/loop")
    assert len(sites.public) == 2 + MAX_REDIRECTS + 1  # the URL sent and MAX_REDIRECTS redirects
    with pytest.raises(UnreadableFile, match="/ftp: not an http\\(s\\) URL \\(redirected to ftp://public.test/page\\)"):
        get(f"http://public.test:{sites.port}/ftp")


def test_limits_and_failures_name_the_url(sites):
    with pytest.raises(UnreadableFile, match="larger than 1000 bytes"):
        get(f"http://public.test:{sites.port}/big")
    with pytest.raises(UnreadableFile, match="HTTP 404"):
        get(f"http://public.test:{sites.port}/gone")


def test_a_name_that_does_not_resolve_names_the_url():
    for resolver in (resolver_of(NAMES), resolve):  # the tests' and the system's
        with pytest.raises(UnreadableFile) as e:
            get("http://nothing.invalid/page", resolver=resolver)
        assert e.value.message.startswith("http://nothing.invalid/page: nothing.invalid does not resolve")


def test_the_connection_goes_to_the_resolved_address_without_a_second_lookup(sites):
    """`rebind.invalid` means nothing to the system's resolver (RFC 6761), so the site can only be
    reached through the address our resolver gave; the site sees the name in the Host header."""
    with pytest.raises(socket.gaierror):
        socket.getaddrinfo("rebind.invalid", None)
    resolver = resolver_of({"rebind.invalid": ["127.0.0.1"]})
    for allow_private in (False, True):  # allow_private still connects to the address resolved
        data, _ = get(f"http://rebind.invalid:{sites.port}/page", allow_private=allow_private, resolver=resolver)
        assert data == BODY
    assert sites.public == [("/page", f"rebind.invalid:{sites.port}")] * 2


def test_a_name_that_rebinds_after_the_check_cannot_reach_the_private_address(sites):
    """The name answers public the first time and private after: the fetch uses the first answer,
    asks once per hop, and a later hop's private answer is refused, not followed."""

    def rebinding():
        calls: list[str] = []

        def answer(host: str) -> list[str]:
            calls.append(host)
            return ["127.0.0.1"] if len(calls) == 1 else ["127.0.0.2"]

        return answer, calls

    resolver, calls = rebinding()
    assert get(f"http://rebind.test:{sites.port}/page", resolver=resolver)[0] == BODY
    assert calls == ["rebind.test"]
    resolver, calls = rebinding()
    with pytest.raises(UnreadableFile, match=f"refused \\(redirected to http://rebind.test:{sites.port}/page\\)"):
        get(f"http://rebind.test:{sites.port}/rel", resolver=resolver)
    assert calls == ["rebind.test", "rebind.test"]  # one lookup per hop
    assert sites.private == []
    assert sites.public == [("/page", f"rebind.test:{sites.port}"), ("/rel", f"rebind.test:{sites.port}")]


def test_an_ipv6_address_is_connected_to():
    try:
        srv, seen = serve("::1", 0, BODY)
    except OSError:
        pytest.skip("no IPv6 loopback")
    try:
        port = srv.server_port
        resolver = resolver_of({"six.test": ["::1"]})
        assert get(f"http://six.test:{port}/page", allow_private=True, resolver=resolver)[0] == BODY
        assert get(f"http://[::1]:{port}/page", allow_private=True, resolver=resolver)[0] == BODY
        assert seen == [("/page", f"six.test:{port}"), ("/page", f"[::1]:{port}")]
    finally:
        srv.shutdown()
        srv.server_close()


@pytest.fixture(scope="module")
def ca():
    return trustme.CA()


def tls_site(ca, *names: str):
    """An https site whose certificate is for `names`; it also records the SNI name it was sent."""
    ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    ca.issue_cert(*names).configure_cert(ctx)
    sni: list[str | None] = []
    ctx.sni_callback = lambda sock, name, c: sni.append(name)
    srv, seen = serve("127.0.0.1", 0, BODY, tls=ctx)
    return srv, seen, sni


def test_https_to_a_pinned_address_verifies_the_certificate_against_the_name(ca):
    trusting = ssl.create_default_context()
    ca.configure_trust(trusting)
    resolver = resolver_of({"pinned.test": ["127.0.0.1"]})
    good, seen, sni = tls_site(ca, "pinned.test")
    # valid for the IP we connect to and for another name, not for the name in the URL
    wrong, wrong_seen, _ = tls_site(ca, "127.0.0.1", "other.test")
    try:
        url = f"https://pinned.test:{good.server_port}/page"
        data, ctype = get(url, allow_private=True, resolver=resolver, ssl_context=trusting)
        assert data == BODY and ctype == "text/html"
        assert seen == [("/page", f"pinned.test:{good.server_port}")] and sni == ["pinned.test"]
        with pytest.raises(UnreadableFile, match="CERTIFICATE_VERIFY_FAILED"):
            get(url, allow_private=True, resolver=resolver)  # verification is on by default: the test CA is unknown
        with pytest.raises(UnreadableFile, match="Hostname mismatch, certificate is not valid for 'pinned.test'"):
            get(
                f"https://pinned.test:{wrong.server_port}/page",
                allow_private=True,
                resolver=resolver,
                ssl_context=trusting,
            )
        assert wrong_seen == []
    finally:
        for srv in (good, wrong):
            srv.shutdown()
            srv.server_close()


def test_loopback_metadata_and_wrapped_addresses_are_not_public():
    for address in (
        "127.0.0.1", "10.0.0.1", "169.254.169.254", "100.100.100.200", "0.0.0.0", "224.0.0.1",
        "::1", "::", "fd00::1", "fe80::1", "fe80::1%eth0", "::ffff:127.0.0.1", "64:ff9b::a9fe:a9fe", "2002:7f00:1::",
    ):  # fmt: skip
        assert not public_address(address), address
    for address in ("8.8.8.8", "2606:4700:4700::1111", "::ffff:8.8.8.8"):
        assert public_address(address), address
