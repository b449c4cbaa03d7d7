"""The server's log as a person and a log shipper read it: one format for every line, uvicorn's and
ours; one JSON object a line on request; one line when an operation starts and one when it ends;
nothing from the scheduler while it has nothing to do; no line a client wrote (whatever it sends
through the OAuth, REST and MCP faces, its text is escaped where it reaches a line)."""

from __future__ import annotations

import json
import re
import time
from urllib.parse import quote

import pytest

from conftest import ADMIN_KEY, AUTH_EXT, Server, fresh_database, wait_for
from support import rpc

# `time LEVEL logger: message`, what hindsight/logs.py's text format writes
TEXT_LINE = re.compile(r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3} (DEBUG|INFO|WARNING|ERROR|CRITICAL) [\w.]+: \S")


def test_json_lines_and_an_operation_start_and_end(pg_url, bank):
    s = Server(
        {"HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "logs_json"), "HINDSIGHT_API_LOG_FORMAT": "json"}
    ).start()
    try:
        with s.http() as api:
            r = api.post(
                f"/v1/default/banks/{bank}/memories",
                json={"items": [{"content": "Maya keeps the boat keys in the red tin."}], "async": True},
            )
            assert r.status_code == 200, r.text
            op_id = r.json()["operation_id"]
            wait_for(lambda: api.get(f"/v1/banks/{bank}/operations/{op_id}").json()["status"] == "succeeded")
    finally:
        s.stop()
    lines = s.log_path.read_text().splitlines()
    records = [json.loads(line) for line in lines]  # every line, start-up to shutdown
    assert records and all({"time", "level", "logger", "message"} <= r.keys() for r in records)
    access = [r for r in records if r["logger"] == "uvicorn.access"]
    assert any(f"POST /v1/default/banks/{bank}/memories" in r["message"] for r in access), access
    assert any(r["logger"] == "uvicorn.error" and "Application startup complete" in r["message"] for r in records)
    assert not any("color_message" in r for r in records)

    start, end = [r for r in records if r.get("operation_id") == op_id]
    for r in (start, end):
        assert r["logger"] == "hindsight.worker" and r["bank_id"] == bank and r["kind"] == "retain", r
        assert r["attempt"] == 1 and op_id in r["message"], r
    assert "outcome" not in start and "started" in start["message"]
    assert end["outcome"] == "succeeded" and end["duration_s"] >= 0 and "succeeded" in end["message"], end


def test_idle_text_log_has_one_format_and_no_scheduler_lines(pg_url):
    s = Server(
        {"HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "logs_text"), "HINDSIGHT_API_SCHEDULER_INTERVAL": "0.2"}
    ).start()
    try:
        with s.http() as api:
            assert api.get("/health").status_code == 200
        time.sleep(3)  # some fifteen claim ticks and three sweeps with nothing to do
    finally:
        s.stop()
    lines = s.log_path.read_text().splitlines()
    assert not [ln for ln in lines if "apscheduler" in ln], lines
    assert [ln for ln in lines if not TEXT_LINE.match(ln)] == [], lines
    loggers = {ln.split()[3].rstrip(":") for ln in lines}
    assert {"uvicorn.error", "uvicorn.access", "hindsight"} <= loggers, loggers


# What a client sends in to forge a line: a line break and a record's start, a carriage return,
# the Unicode line separator, a terminal escape and a bidirectional override.
FORGED = "\n2026-01-01 00:00:00,000 ERROR hindsight: FORGED\r\u2028FORGED\u001b[2J\u202eFORGED"
# What OAuth parameters may hold (they refuse control characters) and still breaks a line or
# reorders it where a log is read.
UNICODE_FORGED = "\u2028FORGED\u202eFORGED\u2066"
_UNSAFE = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029\u202a-\u202e\u2066-\u2069]")


def send_forgeries(s: Server, bank: str) -> None:
    """The forged text through every OAuth route and the REST and MCP faces, wherever a client's
    text can go: bodies, forms, queries, paths, a client_id that is logged when refused."""
    with s.http() as anon, s.http(ADMIN_KEY) as admin:
        sent = [
            anon.post("/register", json={"redirect_uris": ["http://127.0.0.1:9/cb"], "client_name": FORGED}),
            anon.post("/register", json={"redirect_uris": ["http://127.0.0.1:9/cb" + FORGED]}),
            # a Client ID Metadata Document this server may not fetch: its id is logged as refused
            anon.get("/authorize", params={"client_id": "https://127.0.0.1/client" + UNICODE_FORGED}),
            anon.get("/authorize", params={"client_id": "https://127.0.0.1/client" + FORGED}),
            anon.get("/authorize", params={"client_id": FORGED, "state": FORGED}),
            anon.post("/authorize", data={"client_id": FORGED}),
            anon.post("/token", data={"grant_type": "refresh_token", "client_id": FORGED, "refresh_token": FORGED}),
            anon.post("/revoke", data={"token": FORGED, "client_id": FORGED}),
            anon.post("/v1/oauth/consent/lookup", json={"request_id": FORGED}),
            anon.post("/v1/oauth/consent/decide", json={"request_id": FORGED, "approve": False}),
            admin.get(f"/v1/banks/{bank}{quote(FORGED[:3])}/memories", params={"q": FORGED}),
            admin.post(f"/v1/banks/{bank}/memories", json={"content": FORGED, "document_id": FORGED}),
            admin.post(f"/v1/banks/{bank}/documents", json={"urls": ["http://127.0.0.1:9/" + FORGED]}),
            admin.delete(f"/v1/oauth/clients/{quote(FORGED, safe='')}"),
            rpc(anon, f"/mcp/{bank}/", ADMIN_KEY, "tools/call", {"name": FORGED, "arguments": {}}),
            rpc(
                anon,
                "/mcp/",
                ADMIN_KEY,
                "tools/call",
                {"name": "recall", "arguments": {"query": FORGED, "bank_id": FORGED}},
            ),
            rpc(anon, f"/mcp/{bank}/", ADMIN_KEY, FORGED),
        ]
    assert [r.status_code for r in sent if r.status_code >= 500] == []


@pytest.mark.parametrize("fmt", ["text", "json"])
def test_no_client_forges_a_log_line(pg_url, bank, fmt):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, f"logs_forged_{fmt}"),
            "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
            "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
            "HINDSIGHT_API_LOG_FORMAT": fmt,
        }
    ).start()
    try:
        send_forgeries(s, bank)
    finally:
        s.stop()
    lines = s.log_path.read_text().splitlines()
    if fmt == "text":
        # every line is a record's, or a traceback's indented under it; none is a client's
        assert [ln for ln in lines if not TEXT_LINE.match(ln) and not ln.startswith("  ")] == [], lines
        assert not [ln for ln in lines if "FORGED" in ln.split(": ", 1)[0]]
        messages = lines
    else:
        records = [json.loads(line) for line in lines]
        texts = [v for r in records for k, v in r.items() if isinstance(v, str) and k != "exc_info"]
        assert not [t for t in texts if _UNSAFE.search(t)]
        messages = [r["message"] for r in records]
    # the refused client's id reached the log, escaped (the text format's line, or JSON's value);
    # the one with control characters was refused before anything looked it up
    (refused,) = [m for m in messages if "OAuth client https://127.0.0.1/client" in m]
    assert "https://127.0.0.1/client\\u2028FORGED\\u202eFORGED\\u2066 refused" in refused, refused
    assert not [ln for ln in lines if "Traceback" in ln]
