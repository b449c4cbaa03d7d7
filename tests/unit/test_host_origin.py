"""The Host and Origin rules (server/host_origin.py) under each configuration an operator may
choose, and the URL text rule (server/url_text.py)."""

from __future__ import annotations

import pytest

from hindsight.config import load_settings
from hindsight.server.host_origin import HostOriginRules, is_loopback
from hindsight.server.url_text import url_refusal


def edge(**env) -> HostOriginRules:
    return HostOriginRules(load_settings({f"HINDSIGHT_API_{k.upper()}": v for k, v in env.items()}))


def scope(host: str | None = None, origin: str | None = None, scheme: str = "http") -> dict:
    headers = [(b"host", host.encode())] if host is not None else []
    headers += [(b"origin", origin.encode())] if origin is not None else []
    return {"type": "http", "path": "/v1/banks", "query_string": b"", "headers": headers, "scheme": scheme}


@pytest.mark.parametrize("host", ["localhost", "127.0.0.1", "127.3.4.5", "::1", "[::1]", "app.localhost"])
def test_loopback_names(host):
    assert is_loopback(host)


@pytest.mark.parametrize("host", ["example.com", "10.0.0.1", "0.0.0.0", "localhost.example.com", ""])
def test_not_loopback(host):
    assert not is_loopback(host)


def test_bound_to_loopback_only_loopback_names_and_the_listed_ones():
    e = edge()
    assert e.refusal(scope("127.0.0.1:8888")) is None
    assert e.refusal(scope("localhost")) is None
    assert e.refusal(scope("rebound.attacker.example:8888")).status == 403
    assert e.refusal(scope(None)).status == 403  # HTTP/1.1 needs a Host; nothing to trust without it
    e = edge(allowed_hosts="memory.example.com")
    assert e.refusal(scope("memory.example.com")) is None
    assert e.refusal(scope("other.example.com")).status == 403


def test_bound_elsewhere_addresses_and_own_names_but_no_other_name():
    """A server on 0.0.0.0 (a container, a LAN) is what rebinding is for: a rebound page's
    requests are same-origin and carry no Origin, so only the Host check stops them."""
    import socket

    assert edge(host="0.0.0.0").refusal(scope("10.1.2.3:8888")) is None
    assert edge(host="0.0.0.0").refusal(scope("[2001:db8::1]:8888")) is None
    assert edge(host="0.0.0.0").refusal(scope(f"{socket.gethostname()}:8888")) is None
    assert edge(host="0.0.0.0").refusal(scope("rebind.attacker.example:8888")).status == 403
    assert edge(host="0.0.0.0", allowed_hosts="a.example").refusal(scope("a.example")) is None
    assert edge(host="0.0.0.0", allowed_hosts="a.example").refusal(scope("b.example")).status == 403
    assert edge(allowed_hosts="*").refusal(scope("anything.example")) is None


def test_origins():
    e = edge(allowed_origins="https://app.example.com, http://localhost:3000")
    assert e.refusal(scope("127.0.0.1:8888", "http://127.0.0.1:8888")) is None  # its own console
    assert e.refusal(scope("127.0.0.1:8888", "https://app.example.com:443")) is None  # default port
    assert e.refusal(scope("127.0.0.1:8888", "http://localhost:3000")) is None
    assert e.refusal(scope("127.0.0.1:8888", "http://localhost:3001")).status == 403
    assert e.refusal(scope("127.0.0.1:8888", "https://127.0.0.1:8888")).status == 403  # another scheme
    assert e.refusal(scope("127.0.0.1:8888", "null")).status == 403
    assert e.refusal(scope("127.0.0.1:8888", "javascript:alert(1)")).status == 403
    assert edge(allowed_origins="*").refusal(scope("127.0.0.1", "https://anywhere.example")) is None


def test_text_rule_in_the_url():
    s = scope("127.0.0.1")
    assert url_refusal({**s, "query_string": b"q=a%00"}).field == "q"
    assert url_refusal({**s, "path": "/v1/banks/a\x00b"}).field == "path"
    assert url_refusal({**s, "query_string": b"q=%ED%A0%80"}) is None  # invalid UTF-8 decodes as U+FFFD
