"""What an attacker sends to the OAuth face, against real servers over HTTP (hindsight/oauth/).

Open registration is bounded (a rate per address, a cap on clients no person approved, which
expire) and an admin lists and deletes clients; no form body of any shape makes a 5xx or a
traceback; /authorize sends an error back to a client only when the request named a redirect
URI the client registered and a person has approved that client before; a public client revokes
with its client_id alone, a confidential one with HTTP Basic alone; a read-only key sees a
bank's connections but not who approved them, and disconnects none; a token sent in a URL is
revoked and no secret of a query reaches the log. (Log lines a client cannot forge:
tests/e2e/test_logs.py.)
"""

from __future__ import annotations

import asyncio
from urllib.parse import parse_qs, urlsplit

import asyncpg
import httpx
import pytest

from conftest import ADMIN_KEY, AUTH_EXT, Server, fresh_database
from support import (
    OAUTH_CALLBACK,
    make_key,
    oauth_authorize,
    oauth_connect,
    oauth_decide,
    oauth_exchange,
    oauth_register,
    rpc,
)


def oauth_env(url: str, **settings) -> dict:
    return {
        "HINDSIGHT_API_DATABASE_URL": url,
        "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
        "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
        **settings,
    }


@pytest.fixture(scope="module")
def db(pg_url):
    return fresh_database(pg_url, "oauth_abuse")


@pytest.fixture(scope="module")
def server(db):
    s = Server(oauth_env(db)).start()
    yield s
    s.stop()


@pytest.fixture
def anon(server):
    with server.http() as c:
        yield c


@pytest.fixture
def admin(server):
    with server.http(ADMIN_KEY) as c:
        yield c


def sql(url: str, statement: str, *args):
    async def run():
        conn = await asyncpg.connect(url)
        try:
            return await conn.fetch(statement, *args)
        finally:
            await conn.close()

    return asyncio.run(run())


def from_address(address: str) -> dict:
    """Headers that make the request come from `address`: uvicorn takes X-Forwarded-For from a
    proxy it trusts, and it trusts loopback by default."""
    return {"X-Forwarded-For": address}


# ---- registration --------------------------------------------------------------------------------
def test_registration_is_bounded_and_unapproved_clients_expire(pg_url):
    url = fresh_database(pg_url, "oauth_bounds")
    s = Server(
        oauth_env(
            url,
            HINDSIGHT_API_OAUTH_REGISTRATIONS_PER_HOUR="3",
            HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENTS="8",
            HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENT_TTL="600",
        )
    ).start()
    try:
        with s.http() as anon, s.http(ADMIN_KEY) as admin:
            # a client a person approves is no longer counted among the unapproved, and never expires
            with s.http(**from_address("192.0.2.200")) as approver:
                kept, tokens = oauth_connect(approver, ADMIN_KEY, f"{s.url}/mcp/kept")

            def register(address: str, **metadata):
                body = {"redirect_uris": [OAUTH_CALLBACK], "token_endpoint_auth_method": "none", **metadata}
                return anon.post("/register", json=body, headers=from_address(address))

            assert [register("192.0.2.1").status_code for _ in range(3)] == [201, 201, 201]
            refused = register("192.0.2.1")
            assert refused.status_code == 429, refused.text
            assert refused.json()["error"] == "temporarily_unavailable"
            assert "HINDSIGHT_API_OAUTH_REGISTRATIONS_PER_HOUR" in refused.json()["error_description"]
            assert 3000 < int(refused.headers["retry-after"]) <= 3600
            # an IPv6 /64 is one address
            assert [register(f"2001:db8::{i}").status_code for i in (1, 2, 3, 4)] == [201, 201, 201, 429]
            assert register("2001:db8:0:1::1").status_code == 201
            # metadata past its bounds is a 400 and no client
            huge = register("192.0.2.2", contacts=["x" * 60_000 + "@example.com"])
            assert huge.status_code == 400 and huge.json()["error"] == "invalid_client_metadata", huge.text
            many = register("192.0.2.2", contacts=[f"a{i}@example.com" for i in range(11)])
            assert many.status_code == 400 and "contacts" in many.json()["error_description"]
            # eight unapproved clients now: the cap, whatever the address
            assert register("192.0.2.3").status_code == 201
            full = register("192.0.2.4")
            assert full.status_code == 429 and "HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENTS" in full.text, full.text
            assert 0 < int(full.headers["retry-after"]) <= 600
            listed = admin.get("/v1/oauth/clients").json()
            assert (listed["total"], listed["unapproved"]) == (9, 8), listed
            assert {a["registered_from"] for a in listed["applications"]} >= {"192.0.2.1", "2001:db8::/64"}
            (mine,) = [a for a in listed["applications"] if a["client_id"] == kept["client_id"]]
            assert mine["approved_at"] and mine["connections"] == 1 and mine["registered_from"] == "192.0.2.200"

            # past their lifetime, the next registration deletes the unapproved ones, nothing else
            sql(url, "UPDATE oauth_clients SET created_at = now() - interval '11 minutes'")
            assert register("192.0.2.4").status_code == 201
            left = {r["client_id"] for r in sql(url, "SELECT client_id FROM oauth_clients")}
            assert len(left) == 2 and kept["client_id"] in left, left
            assert rpc(anon, "/mcp/kept/", tokens["access_token"]).status_code == 200
    finally:
        s.stop()
    assert "Traceback" not in s.log_path.read_text()


def test_an_admin_lists_and_deletes_clients(server, anon, admin, bank):
    client, tokens = oauth_connect(anon, ADMIN_KEY, f"{server.url}/mcp/{bank}")
    listed = admin.get("/v1/oauth/clients", params={"limit": 1000}).json()["applications"]
    (row,) = [a for a in listed if a["client_id"] == client["client_id"]]
    assert (
        row["client_name"] == "Raw client" and row["redirect_uris"] == [OAUTH_CALLBACK] and row["kind"] == "registered"
    )
    assert row["connections"] == 1
    with server.http(make_key(admin, role="bank", banks=[bank])["key"]) as scoped:
        assert scoped.get("/v1/oauth/clients").status_code == 403
        assert scoped.delete(f"/v1/oauth/clients/{client['client_id']}").status_code == 403
    assert anon.get("/v1/oauth/clients").status_code == 401
    assert admin.get("/v1/oauth/clients", params={"limit": 0}).status_code == 422
    r = admin.delete(f"/v1/oauth/clients/{client['client_id']}")
    assert r.status_code == 200 and r.json() == {"client_id": client["client_id"], "deleted": True}
    assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 401  # its connection ended
    assert admin.get(f"/v1/banks/{bank}/connections").json()["connections"] == []
    assert admin.delete(f"/v1/oauth/clients/{client['client_id']}").status_code == 404


# ---- odd forms -----------------------------------------------------------------------------------
FORM = "application/x-www-form-urlencoded"
MANY_FIELDS = "&".join(f"f{i}=v" for i in range(1500)).encode()
# (body, Content-Type) pairs a client can send, each wrong in its own way
ODD_BODIES = [
    (MANY_FIELDS, FORM),
    (b"grant_type=refresh_token&" * 2, FORM),  # a repeated parameter
    (b"client_id=a&client_id=b&token=t", FORM),
    (b'--x\r\nContent-Disposition: form-data; name="token"\r\n\r\nt\r\n--x--\r\n', "multipart/form-data"),
    (b'--x\r\nContent-Disposition: form-data; name="token"\r\n\r\nt\r\n--x--\r\n', "multipart/form-data; boundary=x"),
    (b"--x\r\nbroken", "multipart/form-data; boundary=x"),
    (b'{"token": "t", "client_id": "c"}', "application/json"),
    (b"token=t&client_id=c", "text/plain"),
    (b"token=t&client_id=c", None),
    (b"token=t&client_id=c", f"{FORM}; charset=latin-1"),
    (b"token=" + b"x" * 60_000 + b"&client_id=c", FORM),
    (b"token=%FF%FE&client_id=c", FORM),
    (b"token=\xff\xfe&client_id=c", FORM),
    (b"token=a%00b&client_id=c", FORM),
    (b"token=a%0D%0Aforged&client_id=c", FORM),
    (b"token=%ED%A0%80&client_id=c", FORM),  # an encoded lone surrogate
    (b"=value&token=t", FORM),
    (b"client_id=c&%%%=1", FORM),
    (b"n" * 5000 + b"=1&client_id=c", FORM),  # a name past any OAuth parameter's
    (b"x" * 70_000, FORM),  # past the OAuth body limit
]


def test_no_form_body_makes_a_5xx_or_a_traceback(server, anon):
    client = oauth_register(anon)
    for path in ("/token", "/revoke", "/authorize", "/register"):
        for body, kind in ODD_BODIES:
            body = body.replace(b"client_id=c", f"client_id={client['client_id']}".encode())
            headers = {"Content-Type": kind} if kind else {}
            r = anon.post(path, content=body, headers=headers, follow_redirects=False)
            assert 400 <= r.status_code < 500, (path, kind, body[:80], r.status_code, r.text[:300])
            if path == "/authorize":
                assert r.headers["content-type"].startswith(("text/html", "application/json")), r.headers
            else:
                assert r.json()["error"], (path, r.text[:300])
    # the same mistakes in /authorize's query: an error page, never a redirect
    for query in ("client_id=a&client_id=b", "client_id=%FF", "client_id=a%0Ab", "=x", "&".join(["a=b"] * 40)):
        r = anon.get(f"/authorize?{query}", follow_redirects=False)
        assert r.status_code in (400, 422) and "location" not in r.headers, (query, r.status_code)
    r = anon.post("/token", content=b"grant_type=password", headers={"Content-Type": "multipart/form-data"})
    assert r.json() == {
        "error": "invalid_request",
        "error_description": "body: send it as application/x-www-form-urlencoded (RFC 6749), not 'multipart/form-data'",
    }
    assert "Traceback" not in server.log_path.read_text()


# ---- where /authorize sends its errors ----------------------------------------------------------
def test_authorize_redirects_an_error_only_to_an_approved_client_and_a_named_uri(server, anon, bank):
    resource = f"{server.url}/mcp/{bank}"
    evil = oauth_register(anon, redirect_uris=["https://evil.example/landing"])
    for extra in ({"scope": "admin"}, {"code_challenge_method": "plain"}, {"response_type": "token"}):
        params = {"client_id": evil["client_id"], "response_type": "code", "code_challenge": "x" * 43, **extra}
        for with_uri in (False, True):
            sent = {**params, **({"redirect_uri": "https://evil.example/landing"} if with_uri else {})}
            r = anon.get("/authorize", params=sent, follow_redirects=False)
            assert r.status_code == 400 and "location" not in r.headers, (extra, with_uri, r.headers)
            assert "evil.example" not in r.text and r.headers["content-type"].startswith("text/html")
            assert "frame-ancestors 'none'" in r.headers["content-security-policy"]
    # a POSTed request, and a person's browser asking for JSON, are refused the same way
    r = anon.post("/authorize", data={"client_id": evil["client_id"], "scope": "admin"}, follow_redirects=False)
    assert r.status_code == 400 and "location" not in r.headers
    r = anon.get("/authorize", params={"client_id": evil["client_id"]}, headers={"Accept": "application/json"})
    assert r.status_code == 400 and r.json()["error"] == "invalid_request"

    # once a person approved a client, its errors go back to the redirect URI the request names
    client, _ = oauth_connect(anon, ADMIN_KEY, resource)
    r, _, params = oauth_authorize(anon, client, resource, scope="admin")
    assert r.status_code == 302, r.text
    back = parse_qs(urlsplit(r.headers["location"]).query)
    assert r.headers["location"].startswith(OAUTH_CALLBACK + "?")
    assert back["error"] == ["invalid_scope"] and back["state"] == [params["state"]] and back["iss"] == [server.url]
    # ... but not when the request named none, or named it other than as registered
    r, _, _ = oauth_authorize(anon, client, resource, scope="admin", redirect_uri=None)
    assert r.status_code == 400 and "location" not in r.headers
    r, _, _ = oauth_authorize(anon, client, resource, scope="admin", redirect_uri=OAUTH_CALLBACK.upper())
    assert r.status_code == 400 and "location" not in r.headers
    # a good request goes to the consent page, where a person decides
    r, _, _ = oauth_authorize(anon, evil, resource, redirect_uri="https://evil.example/landing")
    assert r.status_code == 302 and r.headers["location"].startswith(f"{server.url}/ui/consent.html#request=")


# ---- revocation --------------------------------------------------------------------------------
def test_every_kind_of_client_revokes_as_the_metadata_says(server, anon, bank):
    meta = anon.get("/.well-known/oauth-authorization-server").json()
    methods = ["none", "client_secret_post", "client_secret_basic"]
    assert meta["revocation_endpoint_auth_methods_supported"] == methods
    assert meta["token_endpoint_auth_methods_supported"] == methods
    resource = f"{server.url}/mcp/{bank}"

    # public: client_id alone
    client, tokens = oauth_connect(anon, ADMIN_KEY, resource)
    r = anon.post("/revoke", data={"token": tokens["access_token"], "client_id": client["client_id"]})
    assert r.status_code == 200 and r.headers["cache-control"] == "no-store"
    assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 401
    assert anon.post("/revoke", data={"client_id": client["client_id"]}).json()["error"] == "invalid_request"
    # another client's token is left alone (and answered 200, RFC 7009 section 2.2)
    other, others = oauth_connect(anon, ADMIN_KEY, resource)
    assert (
        anon.post("/revoke", data={"token": others["access_token"], "client_id": client["client_id"]}).status_code
        == 200
    )
    assert rpc(anon, f"/mcp/{bank}/", others["access_token"]).status_code == 200

    # confidential with HTTP Basic: no client_id in the body, at the token endpoint and here
    basic = oauth_register(anon, token_endpoint_auth_method="client_secret_basic")
    auth = httpx.BasicAuth(basic["client_id"], basic["client_secret"])
    r, verifier, _ = oauth_authorize(anon, basic, resource)
    code = parse_qs(urlsplit(oauth_decide(anon, r.headers["location"], ADMIN_KEY).json()["redirect_to"]).query)["code"]
    data = {
        "grant_type": "authorization_code",
        "code": code[0],
        "redirect_uri": OAUTH_CALLBACK,
        "code_verifier": verifier,
    }
    exchanged = anon.post("/token", data=data, auth=auth)
    assert exchanged.status_code == 200, exchanged.text
    refresh = exchanged.json()["refresh_token"]
    wrong = httpx.BasicAuth(basic["client_id"], "hss_wrong")
    r = anon.post("/revoke", data={"token": refresh}, auth=wrong)
    assert r.status_code == 401 and r.json()["error"] == "invalid_client"
    assert anon.post("/revoke", data={"token": refresh, "client_id": basic["client_id"]}).status_code == 401
    assert anon.post("/revoke", data={"token": refresh}, auth=auth).status_code == 200
    assert (
        anon.post("/token", data={"grant_type": "refresh_token", "refresh_token": refresh}, auth=auth).status_code
        == 400
    )

    # confidential with the secret in the body
    post = oauth_register(anon, token_endpoint_auth_method="client_secret_post")
    r, verifier, _ = oauth_authorize(anon, post, resource)
    code = parse_qs(urlsplit(oauth_decide(anon, r.headers["location"], ADMIN_KEY).json()["redirect_to"]).query)["code"]
    exchanged = oauth_exchange(anon, {"client_id": post["client_id"]}, code[0], verifier)
    assert exchanged.status_code == 401  # without its secret
    data = {"token": "hsa_unknown", "client_id": post["client_id"]}
    assert anon.post("/revoke", data=data).status_code == 401
    assert anon.post("/revoke", data={**data, "client_secret": post["client_secret"]}).status_code == 200


# ---- a bank's connections and read-only keys ----------------------------------------------------
def test_a_read_only_key_sees_connections_but_disconnects_none(server, anon, admin, bank):
    writer = make_key(admin, role="bank", banks=[bank])
    _, tokens = oauth_connect(anon, writer["key"], f"{server.url}/mcp/{bank}")
    reader = make_key(admin, role="bank", banks=[bank], access="read")["key"]
    with server.http(reader) as r, server.http(writer["key"]) as w:
        (seen,) = r.get(f"/v1/banks/{bank}/connections").json()["connections"]
        assert seen["client_name"] == "Raw client" and seen["approved_by"] is None
        assert w.get(f"/v1/banks/{bank}/connections").json()["connections"][0]["approved_by"] == writer["key_id"]
        refused = r.delete(f"/v1/banks/{bank}/connections/{seen['connection_id']}")
        assert refused.status_code == 403 and "only read" in refused.json()["message"]
        assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 200
        assert w.delete(f"/v1/banks/{bank}/connections/{seen['connection_id']}").status_code == 200
    assert rpc(anon, f"/mcp/{bank}/", tokens["access_token"]).status_code == 401


# ---- secrets in URLs ----------------------------------------------------------------------------
def test_a_token_in_a_url_is_revoked_and_no_query_secret_is_logged(server, anon, admin, bank):
    client, tokens = oauth_connect(anon, ADMIN_KEY, f"{server.url}/mcp/{bank}")
    token = tokens["access_token"]
    body = {"jsonrpc": "2.0", "id": 1, "method": "tools/list"}
    r = anon.post(f"/mcp/{bank}/?access_token={token}", json=body)
    assert r.status_code == 401 and "revoked" in r.json()["message"]
    assert 'error="invalid_token"' in r.headers["www-authenticate"]
    assert rpc(anon, f"/mcp/{bank}/", token).status_code == 401  # taken as leaked
    # the refresh token was not in the URL: the client carries on with a new access token
    renewed = anon.post(
        "/token",
        data={
            "grant_type": "refresh_token",
            "refresh_token": tokens["refresh_token"],
            "client_id": client["client_id"],
        },
    )
    assert renewed.status_code == 200 and rpc(anon, f"/mcp/{bank}/", renewed.json()["access_token"]).status_code == 200

    key = make_key(admin, role="bank", banks=[bank])["key"]
    secrets = [token, key, ADMIN_KEY, tokens["refresh_token"], "hsc_code-in-a-url", "a-client-secret"]
    anon.get(f"/v1/banks?api_key={key}&x=1")
    anon.get(f"/v1/banks/{bank}/memories?key={ADMIN_KEY}")
    anon.get("/authorize?code=hsc_code-in-a-url&client_secret=a-client-secret")
    anon.post(f"/token?refresh_token={tokens['refresh_token']}&API%5FKEY={key}")
    log = server.log_path.read_text()
    assert not [s[:8] for s in secrets if s in log]
    access = [line for line in log.splitlines() if "uvicorn.access" in line and "[redacted]" in line]
    assert any("?access_token=[redacted]" in line for line in access), access
    assert any("api_key=[redacted]&x=1" in line for line in access), access
    assert any("API%5FKEY=[redacted]" in line for line in access), access


def test_no_traceback_in_the_log(server):
    """Runs last in this module: whatever was sent, nothing reached the log as a crash."""
    log = server.log_path.read_text()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]
