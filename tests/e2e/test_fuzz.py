"""Fuzzed from the contract, against a real server over HTTP: every REST route (ours and
/v1/default) from the OpenAPI document, and every MCP tool (single- and multi-bank) from its
input schema, with valid, invalid and hostile input (hindsight/fuzzing.py). No 5xx, no reset
connection, answers of the documented status, content type and schema, and no traceback in the
server's log. A short budget here; `bench/fuzz.py` runs the long one and prints its figures."""

from __future__ import annotations

import pytest

from hindsight.fuzzing import fuzz_mcp, fuzz_rest

from conftest import Server, fresh_database

EXAMPLES = 6


@pytest.fixture(scope="module")
def fuzz_server(pg_url):
    s = Server({"HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "fuzz")}).start()
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


def test_no_traceback_in_the_log(fuzz_server):
    """Runs last in this module: whatever the fuzzers sent, nothing reached the log as a crash."""
    log = fuzz_server.log_path.read_text()
    assert "Traceback" not in log and "Exception in ASGI application" not in log, log[-3000:]
