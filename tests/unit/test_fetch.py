"""URL fetching for document imports: every hop of a redirect is checked, not just the first."""

from __future__ import annotations

import asyncio
import http.server
import threading

import pytest

from hindsight.documents.fetch import fetch, public_host
from hindsight.documents.readers import UnreadableFile

BODY = b"<html><body><p>The Falcon X costs 199 euros.</p></body></html>"


@pytest.fixture(scope="module")
def site():
    """A local site: /page serves a page, /hop redirects to /page on `localhost` (a different
    host name for the same server), /big is larger than the tests' limit, /gone is a 404."""

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            port = self.server.server_address[1]
            if self.path == "/hop":
                self.send_response(302)
                self.send_header("location", f"http://localhost:{port}/page")
                self.end_headers()
                return
            body = {"/page": BODY, "/big": b"x" * 5000}.get(self.path)
            self.send_response(200 if body else 404)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(body or b"")

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{srv.server_port}"
    srv.shutdown()


def only_ip_literal(host: str) -> bool:
    """Treats the site's IP as public and the name `localhost` as private, so a redirect from one
    to the other stands for a public page redirecting into the private network."""
    return host == "127.0.0.1"


def get(url: str, allow_private: bool = False, max_bytes: int = 1000):
    return asyncio.run(fetch(url, max_bytes=max_bytes, allow_private=allow_private, public=only_ip_literal))


def test_a_public_page_is_fetched(site):
    data, ctype = get(f"{site}/page")
    assert data == BODY and ctype == "text/html"


def test_a_redirect_into_a_private_address_is_refused(site):
    with pytest.raises(UnreadableFile) as e:
        get(f"{site}/hop")
    assert "private" in e.value.message and "redirected to http://localhost:" in e.value.message
    assert get(f"{site}/hop", allow_private=True)[0] == BODY  # the setting lets it through


def test_limits_and_failures_name_the_url(site):
    with pytest.raises(UnreadableFile, match="larger than 1000 bytes"):
        get(f"{site}/big")
    with pytest.raises(UnreadableFile, match="HTTP 404"):
        get(f"{site}/gone")


def test_loopback_and_metadata_addresses_are_not_public():
    assert not public_host("127.0.0.1") and not public_host("169.254.169.254") and not public_host("10.0.0.1")
    assert public_host("8.8.8.8")
