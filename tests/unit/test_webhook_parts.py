"""Webhooks' pure parts: sealing secrets (bound to their bank and webhook, and to the key), the
signature Hindsight's receivers check, what a webhook's URL and headers may be, the wait before a
retry; and sending, which refuses a private address found when the name is resolved (the
sites are on this machine: only name resolution and "public" are the test's own)."""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import http.server
import ipaddress
import socket
import threading
from types import SimpleNamespace
from typing import get_args

import pytest
from pydantic import ValidationError

from hindsight.config import load_settings
from hindsight.engine.errors import Conflict, InvalidArgument
from hindsight.engine.notify.delivery import LONGEST_WAIT, backoff
from hindsight.engine.notify.events import EVENTS
from hindsight.engine.notify.schemas import EventType, HttpConfig
from hindsight.engine.notify.secrets import SecretBox, SecretUnreadable, _derive, new_secret, secret_box, signature
from hindsight.engine.notify.webhooks import check_url
from hindsight.files.fetch import Refused, Unreachable, send


def test_a_secret_opens_only_in_its_own_row_and_with_its_key():
    box = SecretBox(_derive(b"a key of thirty-two characters or more"))
    sealed = box.seal("whsec_abc", "bank-a", "w1")
    assert b"whsec_abc" not in sealed
    assert box.open(sealed, box.fingerprint, "bank-a", "w1") == "whsec_abc"
    with pytest.raises(SecretUnreadable, match="does not decrypt"):
        box.open(sealed, box.fingerprint, "bank-b", "w1")  # copied into another bank's row
    with pytest.raises(SecretUnreadable, match="does not decrypt"):
        box.open(sealed, box.fingerprint, "bank-a", "w2")
    with pytest.raises(SecretUnreadable, match="does not decrypt"):
        box.open(sealed[:-1] + bytes([sealed[-1] ^ 1]), box.fingerprint, "bank-a", "w1")
    other = SecretBox(_derive(b"another key of thirty-two characters"))
    with pytest.raises(SecretUnreadable, match="another key"):
        other.open(sealed, box.fingerprint, "bank-a", "w1")
    assert box.seal("x", "b", "w") != box.seal("x", "b", "w")  # a nonce each time
    assert new_secret() != new_secret() and len(new_secret()) > 40


def test_the_signature_is_hindsights():
    body = b'{"event": "retain.completed"}'
    expected = "sha256=" + hmac.new(b"s3cret-value", body, hashlib.sha256).hexdigest()
    assert signature("s3cret-value", body) == expected


def test_where_the_key_comes_from(tmp_path):
    given = load_settings({"HINDSIGHT_API_SECRETS_KEY": "k" * 32, "HINDSIGHT_API_DATABASE_URL": "postgresql://x/y"})
    assert secret_box(given).fingerprint == SecretBox(_derive(b"k" * 32)).fingerprint
    with pytest.raises(Exception, match="at least 32"):
        load_settings({"HINDSIGHT_API_SECRETS_KEY": "short"})
    external = load_settings(
        {"HINDSIGHT_API_DATABASE_URL": "postgresql://x/y", "HINDSIGHT_API_DATA_DIR": str(tmp_path)}
    )
    with pytest.raises(Conflict, match="HINDSIGHT_API_SECRETS_KEY"):
        secret_box(external)
    embedded = load_settings({"HINDSIGHT_API_DATA_DIR": str(tmp_path / "data")})
    first = secret_box(embedded)
    key_file = tmp_path / "data" / "secrets.key"
    assert key_file.exists() and (key_file.stat().st_mode & 0o777) == 0o600
    again = load_settings({"HINDSIGHT_API_DATA_DIR": str(tmp_path / "data"), "HINDSIGHT_API_PORT": "9999"})
    assert secret_box(again).fingerprint == first.fingerprint  # read back, not made anew


def test_what_a_webhook_url_may_be():
    for url in ("https://example.com/hook", "http://8.8.8.8:8080/x?y=1", "https://hooks.example.com"):
        assert check_url(url, allow_private=False) == url
    for url in (
        "http://127.0.0.1/",
        "http://localhost:8000/",
        "http://api.localhost/",
        "http://169.254.169.254/latest/meta-data/",
        "http://[::1]/",
        "http://[::ffff:10.0.0.1]/",
        "http://192.168.1.10/",
        "http://100.64.0.1/",
    ):
        with pytest.raises(InvalidArgument, match="private"):
            check_url(url, allow_private=False)
        assert check_url(url, allow_private=True) == url
    for url in (
        "ftp://example.com/",
        "https://u:p@example.com/",
        "https:///nohost",
        "https://e.com:70000/",
        "http://a b/",
    ):
        with pytest.raises(InvalidArgument):
            check_url(url, allow_private=True)


def test_headers_and_params_of_a_delivery():
    HttpConfig(headers={"Authorization": "Bearer x", "X-Team": "blue"}, params={"a": "b"})
    for headers in (
        {"X-Hindsight-Signature": "forged"},
        {"content-type": "text/plain"},
        {"Host": "elsewhere"},
        {"X-A": "line\r\nX-B: injected"},
        {"X A": "v"},
        {f"X-{i}": "v" for i in range(21)},
    ):
        with pytest.raises(ValidationError):
            HttpConfig(headers=headers)
    with pytest.raises(ValidationError):
        HttpConfig(method="GET")


def test_every_event_is_a_subscribable_type():
    assert set(get_args(EventType)) == set(EVENTS)


def test_retries_wait_four_times_longer_each_time():
    s = SimpleNamespace(webhook_retry_base=10.0)
    assert [backoff(s, n) for n in (1, 2, 3)] == [10.0, 40.0, 160.0]
    assert backoff(s, 30) == LONGEST_WAIT


# ---- sending: a name that resolves to a private address is refused before any connection --------
def _site():
    seen: list[bytes] = []

    class H(http.server.BaseHTTPRequestHandler):
        def do_POST(self):
            seen.append(self.rfile.read(int(self.headers["content-length"])))
            self.send_response(204 if self.path == "/ok?k=v" else 302)
            self.send_header("location", "http://127.0.0.1/elsewhere")
            self.end_headers()

        def log_message(self, *args):
            pass

    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, seen


def _names(names: dict[str, list[str]]):
    def answer(host: str) -> list[str]:
        try:
            return [str(ipaddress.ip_address(host))]
        except ValueError:
            pass
        if host not in names:
            raise OSError("Name or service not known")
        return names[host]

    return answer


def _send(url: str, allow_private: bool = False):
    resolver = _names(
        {"public.test": ["127.0.0.1"], "private.test": ["127.0.0.2"], "both.test": ["127.0.0.1", "10.0.0.1"]}
    )
    return asyncio.run(
        send(
            url,
            content=b"{}",
            headers={"Content-Type": "application/json"},
            params={"k": "v"},
            timeout=5,
            allow_private=allow_private,
            resolver=resolver,
            is_public=lambda a: a == "127.0.0.1",
        )
    )


def test_sending_checks_what_the_name_resolves_to():
    server, seen = _site()
    port = server.server_address[1]
    try:
        assert _send(f"http://public.test:{port}/ok").status == 204 and seen == [b"{}"]
        for host in ("private.test", "both.test"):
            with pytest.raises(Refused, match="private"):
                _send(f"http://{host}:{port}/ok")
        assert len(seen) == 1
        with pytest.raises(Unreachable, match="does not resolve"):
            _send(f"http://nowhere.test:{port}/ok")
        with pytest.raises(Refused):
            _send("ftp://public.test/x")
        redirected = _send(f"http://public.test:{port}/moved")  # a 3xx is an answer, never followed
        assert redirected.status == 302 and len(seen) == 2
        with pytest.raises(Unreachable):
            _send(f"http://public.test:{_free_port()}/ok")  # nobody listens
    finally:
        server.shutdown()
        server.server_close()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_nothing_is_read_from_the_environment_proxy(monkeypatch):
    """trust_env=False: a proxy would look the name up again, past the check."""
    monkeypatch.setenv("HTTP_PROXY", "http://127.0.0.9:1")
    server, _ = _site()
    try:
        assert _send(f"http://public.test:{server.server_address[1]}/ok").status == 204
    finally:
        server.shutdown()
        server.server_close()
