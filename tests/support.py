"""Helpers shared by several test modules (no test module imports another)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.server
import io
import json
import secrets
import threading
from urllib.parse import parse_qs, urlsplit

from prometheus_client.parser import text_string_to_metric_families

from conftest import wait_for

# Tables whose rows belong to a bank: those with a bank_id column, and the link tables that hang
# off them. tests/unit/test_sql_bank_scope.py holds every statement on them to its bank;
# tests/db/test_sql_statements.py checks this list against the migrated schema.
BANK_TABLES = {
    "banks",
    "memories",
    "memory_terms",
    "entities",
    "memory_entities",
    "fact_sources",
    "memory_documents",
    "bank_lexemes",
    "chunk_lexemes",
    "mental_models",
    "mental_model_versions",
    "memory_versions",
    "operations",
    "llm_usage",
    "documents",
    "chunks",
    "document_uploads",
    "oauth_grants",
    "oauth_codes",
    "oauth_tokens",
    "bank_turns",
    "bank_positions",
    "bank_files",
    "directives",
    "webhooks",
    "knowledge_nodes",
    "audit_logs",
}
WITHOUT_BANK_COLUMN = {"oauth_codes", "oauth_tokens"}


def make_key(admin, **body):
    r = admin.post("/v1/keys", json={"name": "k", **body})
    assert r.status_code == 201, r.text
    return r.json()


def retain(api, bank, body, wait=True):
    r = api.post(f"/v1/banks/{bank}/memories", json=body, params={"wait": wait})
    assert r.status_code == 200, r.text
    return r.json()


def recall_texts(api, bank, query, **kw):
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": query, **kw})
    assert r.status_code == 200, r.text
    return [m["text"] for m in r.json()["results"]], r.json()["results"]


def op_done(api, bank, op_id):
    def check():
        op = api.get(f"/v1/banks/{bank}/operations/{op_id}").json()
        return op if op["status"] in ("succeeded", "failed", "cancelled") else None

    return wait_for(check)


def metric_samples(text: str) -> dict[tuple, float]:
    """A /metrics page as {(sample name, sorted labels): value}."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def metric(found: dict, name: str, **labels) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def pdf_bytes() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    for text in (
        "Falcon X installation guide. Mount the router on a wall bracket.",
        "Troubleshooting: if the Falcon X LED blinks red, reset the firmware.",
    ):
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.multi_cell(0, 10, text)
    return bytes(pdf.output())


def docx_bytes() -> bytes:
    import docx

    d = docx.Document()
    d.add_heading("Falcon X technical specifications", level=1)
    d.add_paragraph("The Falcon X draws twelve watts and supports WiFi 7.")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def import_docs(api, bank, wait=True, **body):
    r = api.post(f"/v1/banks/{bank}/documents", json=body, params={"wait": wait})
    assert r.status_code == 202, r.text
    return r.json()


def rpc(http, path: str, token: str, method: str = "tools/list", params: dict | None = None):
    """One JSON-RPC request to an MCP endpoint with a bearer credential (an API key or a token)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
    return http.post(
        path,
        json=body,
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
    )


# ---- OAuth: a client as a plain HTTP client drives it (the SDK's own client: tests/e2e/test_oauth.py)
OAUTH_CALLBACK = "http://127.0.0.1:9/callback"  # answered by the test, never by a server


def pkce() -> tuple[str, str]:
    verifier = secrets.token_urlsafe(48)
    challenge = base64.urlsafe_b64encode(hashlib.sha256(verifier.encode()).digest()).decode().rstrip("=")
    return verifier, challenge


def oauth_register(anon, seen: set | None = None, **metadata) -> dict:
    """A registered client (public unless `token_endpoint_auth_method` says otherwise); its secret
    added to `seen`."""
    body = {
        "redirect_uris": [OAUTH_CALLBACK],
        "client_name": "Raw client",
        "token_endpoint_auth_method": "none",
        **metadata,
    }
    r = anon.post("/register", json=body)
    assert r.status_code == 201, r.text
    client = r.json()
    if client.get("client_secret") and seen is not None:
        seen.add(client["client_secret"])
    return client


def oauth_authorize(anon, client: dict, resource: str | None, scope: str = "read write", headers=None, **extra):
    """GET /authorize as a browser would: (the answer, the PKCE verifier, the parameters sent). A
    parameter given as None is left out."""
    verifier, challenge = pkce()
    params = {
        "response_type": "code",
        "client_id": client["client_id"],
        "redirect_uri": OAUTH_CALLBACK,
        "code_challenge": challenge,
        "code_challenge_method": "S256",
        "state": "st-" + secrets.token_hex(4),
        "scope": scope,
        **({"resource": resource} if resource else {}),
        **extra,
    }
    params = {k: v for k, v in params.items() if v is not None}
    return anon.get("/authorize", params=params, headers=headers, follow_redirects=False), verifier, params


def oauth_decide(anon, location: str, key: str | None, approve: bool = True, **choice):
    """The consent page's decision on the request `location` (the consent page's URL) names."""
    request_id = parse_qs(urlsplit(location).fragment)["request"][0]
    headers = {"Authorization": f"Bearer {key}"} if key else {}
    return anon.post(
        "/v1/oauth/consent/decide", json={"request_id": request_id, "approve": approve, **choice}, headers=headers
    )


def oauth_exchange(anon, client, code, verifier, resource=None, redirect_uri=OAUTH_CALLBACK, auth=None):
    data = {
        "grant_type": "authorization_code",
        "code": code,
        "redirect_uri": redirect_uri,
        "client_id": client["client_id"],
        "code_verifier": verifier,
        **({"resource": resource} if resource else {}),
    }
    return anon.post("/token", data=data, auth=auth)


def oauth_connect(
    anon, key: str, resource: str | None, scope="read write", client=None, seen: set | None = None, **choice
):
    """Register (unless given a client), authorize, approve with `key`, exchange the code:
    (client, token answer); every secret added to `seen`."""
    seen = seen if seen is not None else set()
    client = client or oauth_register(anon, seen)
    r, verifier, params = oauth_authorize(anon, client, resource, scope)
    assert r.status_code == 302, r.text
    decided = oauth_decide(anon, r.headers["location"], key, **choice)
    assert decided.status_code == 200, decided.text
    back = parse_qs(urlsplit(decided.json()["redirect_to"]).query)
    assert back["state"] == [params["state"]]
    code = back["code"][0]
    seen.add(code)
    tokens = oauth_exchange(anon, client, code, verifier, resource)
    assert tokens.status_code == 200, tokens.text
    answer = tokens.json()
    seen.update([answer["access_token"], answer["refresh_token"]])
    return client, answer


def plan_nodes(plan: dict):
    """Every node of an EXPLAIN (FORMAT JSON) plan, the root first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


def index_names(plan: dict) -> set:
    """The indexes an EXPLAIN (FORMAT JSON) plan reads."""
    return {n.get("Index Name") for n in plan_nodes(plan)}


async def generic_plan(conn, sql: str, *values) -> dict:
    """The generic plan PostgreSQL would keep of `sql` (its parameters' values unseen)."""
    return json.loads(await conn.fetchval("EXPLAIN (GENERIC_PLAN, FORMAT JSON) " + sql, *values))[0]["Plan"]


class Runs:
    """Counts an embedder's model runs while installed (`with Runs(emb) as runs:`): the most under
    way at once, and the threads they ran on."""

    def __init__(self, emb):
        import threading

        self.emb, self.lock, self.running, self.peak, self.threads = emb, threading.Lock(), 0, 0, []

    def __enter__(self):
        import threading

        run = self.emb._run

        def counted(texts):
            with self.lock:
                self.running += 1
                self.peak = max(self.peak, self.running)
                self.threads.append(threading.current_thread().name)
            try:
                return run(texts)
            finally:
                with self.lock:
                    self.running -= 1

        self.emb._run = counted
        return self

    def __exit__(self, *exc):
        del self.emb._run


def tool_error(result) -> dict:
    """The error an MCP tool answered as its result (flagged `isError`, the message as its text,
    the REST error body as structured content); fails when the result is not an error. Takes the
    SDK client's CallToolResult or a JSON-RPC answer's `result` object."""
    if isinstance(result, dict):
        assert result.get("isError") is True, result
        body = result["structuredContent"]
        assert [c["text"] for c in result["content"]] == [body["message"]], result
    else:
        assert result.is_error, result
        body = result.structured_content
        assert [c.text for c in result.content] == [body["message"]], result
    assert isinstance(body.get("error"), str) and isinstance(body.get("message"), str), body
    return body


async def tool_failure_message(client, name: str, args: dict) -> str:
    """The message of a tool call that failed (tool_error's checks), called through `client`."""
    return tool_error(await client.call_tool(name, args))["message"]


class Receiver:
    """A webhook receiver on 127.0.0.1: records every request (path, headers, body) and answers
    with the statuses `answers` holds, in turn (then 200s); `verify(secret)` checks each
    signature. Started in a thread; `stop()` ends it."""

    def __init__(self, answers: list[int] | None = None):
        self.requests: list[tuple[str, dict[str, str], bytes]] = []
        self.answers = list(answers or [])
        receiver = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                receiver.requests.append((self.path, {k.lower(): v for k, v in self.headers.items()}, body))
                status = receiver.answers.pop(0) if receiver.answers else 200
                self.send_response(status)
                self.send_header("content-type", "text/plain")
                self.end_headers()
                self.wfile.write(b"ok" if status < 300 else b"not now")

            def log_message(self, *args):
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def events(self, name: str | None = None) -> list[dict]:
        found = [json.loads(body) for _, _, body in self.requests]
        return [e for e in found if name is None or e["event"] == name]

    def verify(self, secret: str) -> int:
        """How many requests carry a valid signature of their body with `secret` (all must)."""
        for _, headers, body in self.requests:
            expected = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
            assert hmac.compare_digest(headers["x-hindsight-signature"], expected), headers
        return len(self.requests)

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()
