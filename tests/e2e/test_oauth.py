"""OAuth 2.1 on the MCP endpoints, end to end against a real server (hindsight/oauth/).

The MCP SDK's own OAuth client (`OAuthClientProvider`) connects the way a hosted assistant
does: it is refused with a 401 challenge, discovers the resource's and the authorization
server's metadata, registers itself, sends the person to the consent page (Debian's Chromium
driven by Playwright, where they approve with their API key), exchanges the code with PKCE,
calls tools and refreshes its token. The console lists the connection and disconnects it.

Then the refusals, with a plain HTTP client: the wrong audience, an expired or revoked token,
a reused refresh token or code, a redirect URI that was not registered, `plain` PKCE, a token for
one bank on another's endpoint, a read-only token writing, a revoked approving key. Last, no key,
token, code or client secret appears in the server's log.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import shutil
import time
from urllib.parse import parse_qs, urlsplit

import asyncpg
import httpx
import pytest

from conftest import ADMIN_KEY, AUTH_EXT, Server, fresh_database
from support import OAUTH_CALLBACK as CALLBACK
from support import make_key, oauth_connect, oauth_register, rpc, tool_error
from support import oauth_authorize as authorize
from support import oauth_decide as consent
from support import oauth_exchange as exchange

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking"]
# Every secret the tests see, to look for in the server's log at the end.
SECRETS: set[str] = set()


@pytest.fixture(scope="module")
def oauth_server(pg_url):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "oauth"),
            "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
            "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
        }
    ).start()
    yield s
    s.stop()


@pytest.fixture
def admin(oauth_server):
    with oauth_server.http(ADMIN_KEY) as c:
        yield c


@pytest.fixture
def anon(oauth_server):
    with oauth_server.http() as c:
        yield c


def key_for(admin, **body) -> str:
    secret = make_key(admin, **body)["key"]
    SECRETS.add(secret)
    return secret


@contextlib.asynccontextmanager
async def session(url: str, auth=None, headers: dict | None = None):
    """The official SDK client over Streamable HTTP, with an OAuth provider as its httpx auth."""
    from mcp import Client
    from mcp.client.streamable_http import streamable_http_client
    from mcp.shared._httpx_utils import create_mcp_http_client

    async with create_mcp_http_client(headers=headers, auth=auth) as http:
        async with Client(streamable_http_client(url, http_client=http)) as client:
            yield client


def register(anon, **metadata) -> dict:
    return oauth_register(anon, SECRETS, **metadata)


def connect(anon, key: str, resource: str | None, scope: str = "read write", client: dict | None = None, **choice):
    return oauth_connect(anon, key, resource, scope, client, SECRETS, **choice)


def refresh(anon, client, token):
    return anon.post(
        "/token", data={"grant_type": "refresh_token", "refresh_token": token, "client_id": client["client_id"]}
    )


# ---- the SDK's client, a browser and a person -------------------------------------------------------
class Memory:
    """The SDK client's token storage, in memory."""

    def __init__(self):
        self.tokens = None
        self.client = None

    async def get_tokens(self):
        return self.tokens

    async def set_tokens(self, tokens):
        self.tokens = tokens
        SECRETS.update(t for t in (tokens.access_token, tokens.refresh_token) if t)

    async def get_client_info(self):
        return self.client

    async def set_client_info(self, client_info):
        self.client = client_info
        if client_info.client_secret:
            SECRETS.add(client_info.client_secret)


@pytest.mark.skipif(not CHROMIUM, reason="Chromium is not installed (scripts/test.sh installs Debian's)")
async def test_an_assistant_connects_through_the_consent_page(oauth_server, admin, bank):
    from mcp.client.auth import OAuthClientProvider
    from mcp.shared.auth import AuthorizationCodeResult, OAuthClientMetadata
    from playwright.async_api import async_playwright, expect

    key = key_for(admin, role="bank", banks=[bank])
    url = f"{oauth_server.url}/mcp/{bank}/"
    storage = Memory()
    async with async_playwright() as p:
        browser = await p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        page = await browser.new_page()
        errors: list[str] = []
        page.on("pageerror", lambda e: errors.append(str(e)))
        page.on("dialog", lambda d: asyncio.ensure_future(d.accept()))
        landed: asyncio.Future[str] = asyncio.get_running_loop().create_future()

        async def at_callback(route):
            if not landed.done():
                landed.set_result(route.request.url)
            await route.fulfill(status=200, content_type="text/plain", body="You can close this window.")

        await page.route(CALLBACK + "**", at_callback)

        async def redirect_handler(authorization_url: str) -> None:
            await page.goto(authorization_url)
            await expect(page.locator("#consent-app")).to_have_text("Test Assistant")
            await expect(page.locator("#consent-bank")).to_have_text(bank)
            await expect(page.locator("#consent-return")).to_have_text("127.0.0.1:9")
            await page.fill("#consent-key", "hsk_not-a-key")
            await page.click("#approve")
            await expect(page.locator("#consent-error")).to_contain_text("invalid")
            await page.fill("#consent-key", key)
            await page.click("#approve")

        async def callback_handler() -> AuthorizationCodeResult:
            query = parse_qs(urlsplit(await asyncio.wait_for(landed, 60)).query)
            SECRETS.add(query["code"][0])
            return AuthorizationCodeResult(code=query["code"][0], state=query["state"][0], iss=query["iss"][0])

        auth = OAuthClientProvider(
            url,
            OAuthClientMetadata(client_name="Test Assistant", redirect_uris=[CALLBACK]),
            storage,
            redirect_handler,
            callback_handler,
        )
        async with session(url, auth) as c:
            r = await c.call_tool("retain", {"content": "Maeve waters the fig tree on Sundays."})
            assert not r.is_error
            r = await c.call_tool("recall", {"query": "Who waters the fig tree?"})
            assert "Maeve" in r.structured_content["results"][0]["text"]
            first = storage.tokens
            assert first.access_token.startswith("hsa_") and first.refresh_token.startswith("hsr_")
            assert first.scope == "read write"
            # the access token ran out: the client refreshes, and gets both tokens anew
            auth.context.token_expiry_time = time.time() - 1
            r = await c.call_tool("recall", {"query": "fig tree"})
            assert r.structured_content["results"]
            assert storage.tokens.access_token != first.access_token
            assert storage.tokens.refresh_token != first.refresh_token
        assert storage.client.client_secret  # registered as a confidential client (the SDK's default)
        assert not errors, errors

        # the console lists the connection and disconnects it
        with oauth_server.http() as h:
            assert rpc(h, f"/mcp/{bank}/", storage.tokens.access_token).status_code == 200
        listed = admin.get(f"/v1/banks/{bank}/connections").json()["connections"]
        assert [c["client_name"] for c in listed] == ["Test Assistant"], listed
        await page.goto(f"{oauth_server.url}/ui/")
        await page.fill("#key", ADMIN_KEY)
        await page.click("button[type=submit]")
        # as a person would: the bank in the list, then its "Connected apps" tab
        await page.click(f"a:has-text('{bank}')")
        await page.click("[data-tab=connections]")
        row = page.locator("tr[data-connection]")
        await expect(row).to_have_count(1)
        await expect(row).to_contain_text("Test Assistant")
        await expect(row).to_contain_text("read and write")
        await row.locator("button.danger").click()
        await expect(page.locator("tr[data-connection]")).to_have_count(0)
        await browser.close()
    with oauth_server.http() as h:
        r = rpc(h, f"/mcp/{bank}/", storage.tokens.access_token)
        assert r.status_code == 401 and 'error="invalid_token"' in r.headers["www-authenticate"]
        assert refresh(h, {"client_id": storage.client.client_id}, storage.tokens.refresh_token).status_code in (
            400,
            401,
        )


# ---- discovery ----------------------------------------------------------------------------------------
def test_discovery_documents(oauth_server, anon, bank):
    for path, resource in ((f"/mcp/{bank}/", f"/mcp/{bank}"), ("/mcp", "/mcp"), ("/mcp/", "/mcp")):
        r = anon.post(path, json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"})
        assert r.status_code == 401 and r.json()["error"] == "unauthorized"
        challenge = r.headers["www-authenticate"]
        where = f"{oauth_server.url}/.well-known/oauth-protected-resource{resource}"
        assert challenge == f'Bearer resource_metadata="{where}"'
        prm = anon.get(where).json()
        assert prm["resource"] == oauth_server.url + resource
        assert prm["authorization_servers"] == [oauth_server.url]
        assert prm["scopes_supported"] == ["read", "write"]
    meta = anon.get("/.well-known/oauth-authorization-server").json()
    assert meta["issuer"] == oauth_server.url
    assert meta["code_challenge_methods_supported"] == ["S256"]
    assert meta["client_id_metadata_document_supported"] is True
    assert {"registration_endpoint", "revocation_endpoint", "token_endpoint"} <= set(meta)
    # the endpoints answer in JSON, whatever was wrong
    for method, path in (("GET", "/token"), ("GET", "/register"), ("DELETE", "/authorize")):
        r = anon.request(method, path)
        assert r.status_code == 405 and r.json()["error"] == "method_not_allowed"
    assert anon.get("/.well-known/oauth-protected-resource/elsewhere").status_code == 404
    assert anon.get("/.well-known/oauth-protected-resource/mcp/a/b").json()["error"] == "not_found"
    assert anon.post("/token", content=b"x" * 100_000).status_code == 413
    # an API key still works beside OAuth, and REST does not take OAuth tokens
    assert rpc(anon, f"/mcp/{bank}/", ADMIN_KEY).status_code == 200


def test_registration_rules(anon):
    for uris in (["http://evil.example/cb"], ["javascript:alert(1)"], ["https://a.example/cb#frag"], []):
        r = anon.post("/register", json={"redirect_uris": uris, "client_name": "x"})
        assert r.status_code == 400 and r.json()["error"] in ("invalid_redirect_uri", "invalid_client_metadata"), uris
    r = anon.post("/register", json={"redirect_uris": [CALLBACK], "client_name": "nul\u0000name"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_client_metadata"
    ok = register(anon, redirect_uris=["https://app.example/cb", "com.example.app:/cb", "http://localhost:3000/cb"])
    assert ok["client_id"] and not ok.get("client_secret")


# ---- refusals -------------------------------------------------------------------------------------------
def test_plain_pkce_and_unregistered_redirects_are_refused(oauth_server, anon, admin, bank):
    client = register(anon)
    resource = f"{oauth_server.url}/mcp/{bank}"
    r, _, _ = authorize(anon, client, resource, code_challenge_method="plain")
    # no person approved this client yet: the error is shown to the person, not sent to the client
    # (where errors go once one did: tests/e2e/test_oauth_abuse.py)
    assert r.status_code == 400 and r.headers["content-type"].startswith("text/html")
    assert 'data-error="invalid_request"' in r.text and "location" not in r.headers
    r, _, _ = authorize(anon, client, resource, redirect_uri="http://127.0.0.1:9/other")
    assert r.status_code == 400 and "not registered" in r.text
    r, _, _ = authorize(anon, client, "https://elsewhere.example/mcp", headers={"Accept": "application/json"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_target"
    r, _, _ = authorize(anon, {"client_id": "no-such-client"}, resource)
    assert r.status_code == 400
    # a code is bound to its redirect URI and verifier, and is used once
    key = key_for(admin, role="bank", banks=[bank])
    r, verifier, _ = authorize(anon, client, resource)
    code = parse_qs(urlsplit(consent(anon, r.headers["location"], key).json()["redirect_to"]).query)["code"][0]
    SECRETS.add(code)
    assert exchange(anon, client, code, verifier, redirect_uri="http://127.0.0.1:9/other").status_code == 400
    assert exchange(anon, client, code, "x" * 64).json()["error"] == "invalid_grant"
    first = exchange(anon, client, code, verifier)
    assert first.status_code == 200
    SECRETS.update([first.json()["access_token"], first.json()["refresh_token"]])
    again = exchange(anon, client, code, verifier)
    assert again.status_code == 400 and again.json()["error"] == "invalid_grant"
    # ... and the second use revoked what the first issued
    assert rpc(anon, f"/mcp/{bank}/", first.json()["access_token"]).status_code == 401


def test_audience_and_banks(oauth_server, anon, admin, bank):
    other = bank + "_b"
    key = key_for(admin, role="bank", banks=[bank, other])
    _, tokens = connect(anon, key, f"{oauth_server.url}/mcp/{bank}")
    token = tokens["access_token"]
    assert rpc(anon, f"/mcp/{bank}/", token).status_code == 200
    assert rpc(anon, f"/mcp/{bank}", token).status_code == 200
    for path in (f"/mcp/{other}/", "/mcp", "/mcp/"):  # issued for /mcp/<bank>: another resource
        r = rpc(anon, path, token)
        assert r.status_code == 401 and "issued for" in r.json()["message"], path
    with httpx.Client(base_url=oauth_server.url.replace("127.0.0.1", "localhost")) as elsewhere:
        assert rpc(elsewhere, f"/mcp/{bank}/", token).status_code == 401  # another origin, another resource
    # REST takes API keys only
    r = anon.post(f"/v1/banks/{bank}/recall", json={"query": "x"}, headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401
    # the multi-bank endpoint: the bank is chosen on the consent page, and is the default there
    _, tokens = connect(anon, key, f"{oauth_server.url}/mcp", bank_id=other)
    multi = tokens["access_token"]
    r = rpc(anon, "/mcp", multi, "tools/call", {"name": "retain", "arguments": {"content": "Into the chosen bank."}})
    assert r.status_code == 200 and "error" not in r.json(), r.text
    assert "Into the chosen bank." in str(admin.get(f"/v1/banks/{other}/memories").json())
    r = rpc(anon, "/mcp", multi, "tools/call", {"name": "recall", "arguments": {"query": "x", "bank_id": bank}})
    assert tool_error(r.json()["result"])["error"] == "forbidden"
    assert rpc(anon, "/mcp", multi).status_code == 200
    r = anon.post(
        "/mcp",
        json={"jsonrpc": "2.0", "id": 1, "method": "tools/list"},
        headers={"Authorization": f"Bearer {multi}", "X-Bank-Id": bank},
    )
    assert r.status_code == 403
    # no resource named: the token serves the chosen bank only, on either endpoint
    _, tokens = connect(anon, key, None, bank_id=bank)
    loose = tokens["access_token"]
    assert rpc(anon, f"/mcp/{bank}/", loose).status_code == 200
    assert rpc(anon, f"/mcp/{other}/", loose).status_code == 403


def test_a_key_approves_no_more_than_it_may(oauth_server, anon, admin, bank):
    resource = f"{oauth_server.url}/mcp/{bank}"
    stranger = key_for(admin, role="bank", banks=[bank + "_x"])
    client = register(anon)
    r, _, _ = authorize(anon, client, resource)
    refused = consent(anon, r.headers["location"], stranger)
    assert refused.status_code == 403
    assert consent(anon, r.headers["location"], None).status_code == 401  # approving needs a key
    # the request is still pending: the person may refuse it, and the client hears so
    no = consent(anon, r.headers["location"], None, approve=False)
    assert no.status_code == 200 and "error=access_denied" in no.json()["redirect_to"]
    assert consent(anon, r.headers["location"], None, approve=False).status_code == 404  # decided once
    # a read-only key grants read-only access, whatever the client asked
    reader = key_for(admin, role="bank", banks=[bank], access="read")
    _, tokens = connect(anon, reader, resource)
    assert tokens["scope"] == "read"
    r = rpc(
        anon, f"/mcp/{bank}/", tokens["access_token"], "tools/call", {"name": "retain", "arguments": {"content": "x"}}
    )
    refused = tool_error(r.json()["result"])
    assert refused["error"] == "forbidden" and "only read" in refused["message"]
    r = rpc(
        anon, f"/mcp/{bank}/", tokens["access_token"], "tools/call", {"name": "recall", "arguments": {"query": "x"}}
    )
    assert "result" in r.json()
    # a client that asks to read only gets no more, even from an admin
    _, tokens = connect(anon, ADMIN_KEY, resource, scope="read")
    assert tokens["scope"] == "read"
    # the admin key approves for one bank: the token is never an admin's (no other bank, no
    # multi-bank endpoint, no REST)
    _, tokens = connect(anon, ADMIN_KEY, resource)
    assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 200
    assert rpc(anon, f"/mcp/{bank}_other/", tokens["access_token"]).status_code == 401
    assert rpc(anon, "/mcp/", tokens["access_token"]).status_code == 401
    r = anon.get("/v1/banks", headers={"Authorization": f"Bearer {tokens['access_token']}"})
    assert r.status_code == 401, r.text


async def test_expired_revoked_and_reused_tokens(oauth_server, anon, admin, bank, pg_url):
    resource = f"{oauth_server.url}/mcp/{bank}"
    approver = make_key(admin, role="bank", banks=[bank])
    SECRETS.add(approver["key"])
    client, tokens = connect(anon, approver["key"], resource)
    # rotation: a refresh gives both tokens anew, and the old refresh token is spent
    r = refresh(anon, client, tokens["refresh_token"])
    assert r.status_code == 200
    rotated = r.json()
    SECRETS.update([rotated["access_token"], rotated["refresh_token"]])
    assert rotated["refresh_token"] != tokens["refresh_token"]
    assert rpc(anon, f"/mcp/{bank}/", rotated["access_token"]).status_code == 200
    # reusing the spent one ends the whole family: the new tokens stop working too
    r = refresh(anon, client, tokens["refresh_token"])
    assert r.status_code == 400 and r.json()["error"] == "invalid_grant"
    assert rpc(anon, f"/mcp/{bank}/", rotated["access_token"]).status_code == 401
    assert refresh(anon, client, rotated["refresh_token"]).status_code == 400

    # an expired access token
    client, tokens = connect(anon, approver["key"], resource)
    conn = await asyncpg.connect(fresh_url(pg_url))
    try:
        digest = hashlib.sha256(tokens["access_token"].encode()).hexdigest()
        await conn.execute(
            "UPDATE oauth_tokens SET expires_at = now() - interval '1 second' WHERE token_hash = $1", digest
        )
        stored = await conn.fetch("SELECT token_hash FROM oauth_tokens")
        assert tokens["access_token"] not in str(stored) and digest in str(stored)
    finally:
        await conn.close()
    r = rpc(anon, f"/mcp/{bank}/", tokens["access_token"])
    assert r.status_code == 401 and "expired" in r.json()["message"]
    assert 'error="invalid_token"' in r.headers["www-authenticate"]

    # revocation (RFC 7009): an access token alone, then a refresh token and its grant
    client, tokens = connect(anon, approver["key"], resource)
    # a public client revokes with its client_id alone (RFC 7009, section 2.1)
    rv = anon.post("/revoke", data={"token": tokens["access_token"], "client_id": client["client_id"]})
    assert rv.status_code == 200, rv.text
    assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 401
    assert refresh(anon, client, tokens["refresh_token"]).status_code == 200
    client, tokens = connect(anon, approver["key"], resource)
    rv = anon.post("/revoke", data={"token": tokens["refresh_token"], "client_id": client["client_id"]})
    assert rv.status_code == 200, rv.text
    assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 401

    # revoking the key that approved ends what it approved
    client, tokens = connect(anon, approver["key"], resource)
    assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 200
    assert admin.delete(f"/v1/keys/{approver['key_id']}").status_code == 200
    assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 401
    assert refresh(anon, client, tokens["refresh_token"]).status_code == 400
    assert admin.get(f"/v1/banks/{bank}/connections").json()["connections"] == []


def fresh_url(pg_url: str) -> str:
    return pg_url.replace("/postgres?", "/oauth?", 1)


def test_connections_are_listed_per_bank_and_scoped(oauth_server, anon, admin, bank):
    key = key_for(admin, role="bank", banks=[bank])
    connect(anon, key, f"{oauth_server.url}/mcp/{bank}")
    listed = admin.get(f"/v1/banks/{bank}/connections").json()["connections"]
    assert [c["client_name"] for c in listed] == ["Raw client"] and listed[0]["access"] == "read_write"
    with oauth_server.http(key_for(admin, role="bank", banks=[bank + "_y"])) as stranger:
        assert stranger.get(f"/v1/banks/{bank}/connections").status_code == 403
        assert stranger.delete(f"/v1/banks/{bank}/connections/{listed[0]['connection_id']}").status_code == 403
    with oauth_server.http(key) as owner:
        assert owner.delete(f"/v1/banks/{bank}_z/connections/{listed[0]['connection_id']}").status_code == 403
        r = owner.delete(f"/v1/banks/{bank}/connections/{listed[0]['connection_id']}")
        assert r.status_code == 200 and r.json()["disconnected"] is True
        assert owner.delete(f"/v1/banks/{bank}/connections/{listed[0]['connection_id']}").status_code == 200
        assert owner.get(f"/v1/banks/{bank}/connections").json()["connections"] == []


def test_deleting_a_bank_ends_its_connections(oauth_server, anon, admin, bank):
    """The OAuth tables refer to no bank's row (migration 021): deleting the bank deletes its
    grants itself, and their tokens go with them."""
    resource = f"{oauth_server.url}/mcp/{bank}"
    _, tokens = connect(anon, key_for(admin, role="bank", banks=[bank]), resource)
    assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 200
    assert admin.delete(f"/v1/banks/{bank}").status_code == 200
    assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 401
    assert admin.get(f"/v1/banks/{bank}/connections").json()["connections"] == []


def test_the_consent_decision_comes_from_this_server_only(oauth_server, anon, admin, bank):
    key = key_for(admin, role="bank", banks=[bank])
    client = register(anon)
    r, _, _ = authorize(anon, client, f"{oauth_server.url}/mcp/{bank}")
    request_id = parse_qs(urlsplit(r.headers["location"]).fragment)["request"][0]
    body = {"request_id": request_id, "approve": True}
    auth = {"Authorization": f"Bearer {key}"}
    r = anon.post("/v1/oauth/consent/decide", json=body, headers={**auth, "Origin": "https://evil.example"})
    assert r.status_code == 403
    r = anon.post("/v1/oauth/consent/decide", json=body, headers={**auth, "Sec-Fetch-Site": "cross-site"})
    assert r.status_code == 403
    r = anon.post(
        "/v1/oauth/consent/decide",
        content=f"request_id={request_id}&approve=true",
        headers={**auth, "Content-Type": "application/x-www-form-urlencoded"},
    )
    assert r.status_code == 422
    r = anon.post("/v1/oauth/consent/decide", json=body, headers={**auth, "Origin": oauth_server.url})
    assert r.status_code == 200
    assert anon.post("/v1/oauth/consent/lookup", json={"request_id": request_id}).status_code == 404
    assert anon.post("/v1/oauth/consent/lookup", json={"request_id": "a\u0000b"}).status_code == 422


def test_no_secret_in_the_log(oauth_server):
    """Runs last in this module: every key, code, token and client secret the tests saw."""
    log = oauth_server.log_path.read_text()
    assert len(SECRETS) > 20
    leaked = [s[:8] for s in SECRETS if s in log]
    assert not leaked, leaked
    assert "Traceback" not in log, log[-3000:]


def test_hostile_input_gets_a_4xx_never_a_500(oauth_server, anon):
    """What an attacker or a broken client sends to the OAuth endpoints: each answered 4xx (or
    a redirect carrying the error), never a 500, and nothing in the log but one line each."""
    client = register(anon)
    big = "x" * 1_000_000
    deep = b'{"redirect_uris": ["' + CALLBACK.encode() + b'"], "contacts": ' + b"[" * 5000 + b"]" * 5000 + b"}"
    sent = [
        ("POST", "/register", {"content": b"not json"}),
        ("POST", "/register", {"json": []}),
        ("POST", "/register", {"json": {"redirect_uris": CALLBACK}}),  # a string is not a list
        ("POST", "/register", {"json": {"redirect_uris": [f"https://a.example/{i}" for i in range(10_000)]}}),
        ("POST", "/register", {"json": {"redirect_uris": ["https://a.example/\u0000"]}}),
        ("POST", "/register", {"content": b'{"redirect_uris": ["https://a.example/cb"], "client_name": "\\ud800"}'}),
        ("POST", "/register", {"json": {"redirect_uris": [CALLBACK], "client_name": big}}),
        ("POST", "/register", {"json": {"redirect_uris": [CALLBACK], "grant_types": ["password"]}}),
        ("POST", "/register", {"json": {"redirect_uris": [CALLBACK], "token_endpoint_auth_method": "private_key_jwt"}}),
        ("POST", "/register", {"content": deep, "headers": {"Content-Type": "application/json"}}),
        ("POST", "/token", {"data": {}}),
        ("POST", "/token", {"data": {"grant_type": "password", "username": "a", "password": "b"}}),
        ("POST", "/token", {"data": {"grant_type": "authorization_code", "client_id": client["client_id"]}}),
        (
            "POST",
            "/token",
            {"data": {"grant_type": "authorization_code", "client_id": client["client_id"], "code": "\u0000"}},
        ),
        (
            "POST",
            "/token",
            {"data": {"grant_type": "refresh_token", "client_id": client["client_id"], "refresh_token": big}},
        ),
        (
            "POST",
            "/token",
            {
                "content": b"grant_type=authorization_code&client_id=%ED%A0%80x&code=c",
                "headers": {"Content-Type": "application/x-www-form-urlencoded"},
            },
        ),
        ("GET", "/authorize", {"params": {}}),
        ("GET", "/authorize", {"params": {"client_id": "nul\u0000", "response_type": "code"}}),
        ("GET", "/authorize", {"params": {"client_id": "no-such-client", "response_type": "code"}}),
        ("GET", "/authorize", {"params": {"client_id": "https://127.0.0.1/meta.json", "response_type": "code"}}),
        ("GET", "/authorize", {"params": {"client_id": "https://169.254.169.254/latest", "response_type": "code"}}),
        ("POST", "/revoke", {"data": {}}),
        ("POST", "/revoke", {"data": {"token": big, "client_id": client["client_id"], "client_secret": ""}}),
        ("POST", "/v1/oauth/consent/decide", {"content": b"{"}),
        ("POST", "/v1/oauth/consent/decide", {"json": {"request_id": "\u0000", "approve": True}}),
        ("POST", "/v1/oauth/consent/decide", {"json": {"request_id": big, "approve": "yes"}}),
        ("GET", "/v1/oauth/consent/no-such-request", {}),
        ("GET", "/.well-known/oauth-protected-resource/mcp/bad%00bank", {}),
        ("GET", "/.well-known/oauth-protected-resource/mcp/" + "b" * 500, {}),
    ]
    for method, path, kw in sent:
        r = anon.request(method, path, follow_redirects=False, **kw)
        assert r.status_code < 500, (method, path, r.status_code, r.text[:300])
        assert r.status_code != 200 or path.startswith("/.well-known"), (method, path, r.text[:300])
    assert "Traceback" not in oauth_server.log_path.read_text()
