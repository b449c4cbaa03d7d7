"""Fuzzed from the contract, against a real server over HTTP: every REST route (ours and
/v1/default) from the OpenAPI document, and every MCP tool (single- and multi-bank) from its
input schema, with valid, invalid and hostile input; and the OAuth endpoints (on a server with
API keys, which runs the authorization server) with forms in every encoding a client can send
(hindsight/fuzzing.py). No 5xx, no reset connection, answers of the documented status, content
type and schema, no redirect but to the consent page, and no traceback in the servers' logs. A
short budget here; `bench/fuzz.py` runs the long one and prints its figures."""

from __future__ import annotations

import pytest

from hindsight.fuzzing import OAUTH_ROUTES, fuzz_mcp, fuzz_oauth, fuzz_rest

from conftest import ADMIN_KEY, AUTH_EXT, Server, fresh_database

EXAMPLES = 6


@pytest.fixture(scope="module")
def fuzz_server(pg_url):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "fuzz"),
            # webhooks can be made (their secrets are sealed with it), so their routes are fuzzed past the 409
            "HINDSIGHT_API_SECRETS_KEY": "fuzz-secrets-key-0123456789-abcdefgh",
        }
    ).start()
    yield s
    s.stop()


def test_rest_routes_fuzzed(fuzz_server):
    report = fuzz_rest(fuzz_server.url, EXAMPLES, seed=0)
    assert len(report.by_target) >= 60 and report.calls >= 4 * len(report.by_target), report.line()
    assert not report.failures, "\n".join(report.failures[:20])


@pytest.mark.parametrize("path", ["/mcp/fuzzed/", "/mcp/"])
def test_mcp_tools_fuzzed(fuzz_server, path):
    report = fuzz_mcp(fuzz_server.url, path, 2 * EXAMPLES, seed=0)
    assert len(report.by_target) >= 20 and report.calls >= EXAMPLES * len(report.by_target), report.line()
    assert not report.failures, "\n".join(report.failures[:20])


def test_oauth_routes_fuzzed(pg_url):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "fuzz_oauth"),
            "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
            "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
        }
    ).start()
    try:
        report = fuzz_oauth(s.url, 4 * EXAMPLES, seed=0)
    finally:
        s.stop()
    assert set(report.by_target) == set(OAUTH_ROUTES) and report.calls >= 20 * len(OAUTH_ROUTES), report.line()
    assert not report.failures, "\n".join(report.failures[:20])
    log = s.log_path.read_text()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]


def test_no_traceback_in_the_log(fuzz_server):
    """Runs last in this module: whatever the fuzzers sent, nothing reached the log as a crash."""
    log = fuzz_server.log_path.read_text()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]
