"""An external identity provider (HINDSIGHT_API_OAUTH_ISSUER): the server is a resource server
only and takes that issuer's JWT access tokens on MCP, checked against the issuer's JWKS (served
here by a small local HTTP server, as Keycloak or Auth0 would), its `iss`, the endpoint as `aud`,
`exp`, and the banks claim; it runs no authorization server of its own."""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import jwt
import pytest
from cryptography.hazmat.primitives.asymmetric import rsa

from conftest import Server, fresh_database
from support import rpc, tool_error

ISSUER = "https://idp.example/realms/memory"
KID = "k1"


def _jwk(private) -> dict:
    public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(private.public_key()))
    return {**public, "kid": KID, "use": "sig", "alg": "RS256"}


@pytest.fixture(scope="module")
def signer():
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


@pytest.fixture(scope="module")
def jwks_url(signer):
    document = json.dumps({"keys": [_jwk(signer)]}).encode()

    class Keys(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802 (http.server's name)
            self.send_response(200 if self.path == "/jwks" else 404)
            self.send_header("Content-Type", "application/json")
            self.end_headers()
            self.wfile.write(document if self.path == "/jwks" else b"{}")

        def log_message(self, *args):
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Keys)
    threading.Thread(target=httpd.serve_forever, daemon=True).start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}/jwks"
    httpd.shutdown()


@pytest.fixture(scope="module")
def idp_server(pg_url, jwks_url):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "oauth_external"),
            "HINDSIGHT_API_OAUTH_ISSUER": ISSUER,
            "HINDSIGHT_API_OAUTH_JWKS_URL": jwks_url,
        }
    ).start()
    yield s
    s.stop()


def token(key, aud: str, banks, scope: str = "read write", exp: float | None = None, **extra) -> str:
    claims = {
        "iss": ISSUER,
        "sub": "user-42",
        "aud": aud,
        "exp": int(exp if exp is not None else time.time() + 300),
        "scope": scope,
        "hindsight_banks": banks,
        **extra,
    }
    return jwt.encode(claims, key, algorithm="RS256", headers={"kid": KID})


def test_the_issuers_tokens_open_their_banks(idp_server, signer, bank):
    resource = f"{idp_server.url}/mcp/{bank}"
    with idp_server.http() as h:
        # no token: the challenge points to this endpoint's metadata, which names the issuer
        r = h.post(f"/mcp/{bank}/", json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401
        challenge = r.headers["www-authenticate"]
        assert "resource_metadata=" in challenge
        meta_url = challenge.split('resource_metadata="')[1].split('"')[0]
        meta = h.get(meta_url).json()
        assert meta["resource"].rstrip("/") == resource and meta["authorization_servers"] == [ISSUER]
        # no authorization server of our own
        assert h.post("/register", json={"redirect_uris": ["https://a.example/cb"]}).status_code == 404

        good = token(signer, resource, [bank])
        assert rpc(h, f"/mcp/{bank}/", good).status_code == 200
        r = rpc(
            h, f"/mcp/{bank}/", good, "tools/call", {"name": "retain", "arguments": {"content": "Ines likes figs."}}
        )
        assert "result" in r.json() and not r.json()["result"].get("isError"), r.text
        # the banks claim as a string, separated by spaces or commas
        assert rpc(h, f"/mcp/{bank}/", token(signer, resource, f"other, {bank}")).status_code == 200

        # read-only scope: recall yes, retain no
        reader = token(signer, resource, [bank], scope="read")
        r = rpc(h, f"/mcp/{bank}/", reader, "tools/call", {"name": "retain", "arguments": {"content": "x"}})
        assert tool_error(r.json()["result"])["error"] == "forbidden", r.text
        r = rpc(h, f"/mcp/{bank}/", reader, "tools/call", {"name": "recall", "arguments": {"query": "figs"}})
        assert "Ines" in r.text


def test_the_issuers_tokens_are_checked(idp_server, signer, bank):
    resource = f"{idp_server.url}/mcp/{bank}"
    stranger = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    refused = {
        "another bank's endpoint": (token(signer, f"{idp_server.url}/mcp/{bank}_b", [bank + "_b"]), f"/mcp/{bank}/"),
        "a bank the claim does not name": (token(signer, resource, [bank + "_b"]), f"/mcp/{bank}/"),
        "another audience": (token(signer, "https://elsewhere.example/mcp", [bank]), f"/mcp/{bank}/"),
        "expired": (token(signer, resource, [bank], exp=time.time() - 600), f"/mcp/{bank}/"),
        "another issuer": (token(signer, resource, [bank], iss="https://evil.example"), f"/mcp/{bank}/"),
        "a key the issuer does not publish": (token(stranger, resource, [bank]), f"/mcp/{bank}/"),
        "no banks claim": (token(signer, resource, []), f"/mcp/{bank}/"),
        "alg none": (
            jwt.encode({"iss": ISSUER, "aud": resource, "exp": time.time() + 60}, None, "none"),
            f"/mcp/{bank}/",
        ),
        "a shared secret": (
            jwt.encode({"iss": ISSUER, "aud": resource, "exp": time.time() + 60, "hindsight_banks": [bank]}, "s" * 32),
            f"/mcp/{bank}/",
        ),
        "not a JWT": ("hsa_notatoken", f"/mcp/{bank}/"),
    }
    with idp_server.http() as h:
        for why, (tok, path) in refused.items():
            r = rpc(h, path, tok)
            assert r.status_code in (401, 403), (why, r.status_code, r.text)
            assert r.status_code == 403 or 'error="invalid_token"' in r.headers["www-authenticate"], why
    log = idp_server.log_path.read_text()
    assert "Traceback" not in log
    assert all(tok not in log for tok, _ in refused.values() if len(tok) > 20)
