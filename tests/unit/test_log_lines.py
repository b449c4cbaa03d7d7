"""The log formatters' guarantees (hindsight/logs.py), whatever a call site passes: a record is
its own lines (no client text breaks one or starts one), and no secret of a URL's query is
written. Through a real server: tests/e2e/test_logs.py, tests/e2e/test_oauth_abuse.py."""

from __future__ import annotations

import json
import logging
import sys

from hindsight.logs import REDACTED, JsonLines, TextFormatter, config, escape, redact

FORGED = "evil\r\n2026-01-01 00:00:00,000 ERROR hindsight: forged\x1b[2J\x85\u2028\u202e"


def record(msg: str, *args, exc: BaseException | None = None, **extra) -> logging.LogRecord:
    r = logging.LogRecord("hindsight.oauth", logging.WARNING, __file__, 1, msg, args, None)
    if exc is not None:
        try:
            raise exc
        except type(exc):
            r.exc_info = sys.exc_info()
    r.__dict__.update(extra)
    return r


def test_escape_writes_every_line_breaking_or_hiding_character_as_an_escape():
    assert escape(FORGED) == (
        "evil\\r\\n2026-01-01 00:00:00,000 ERROR hindsight: forged\\u001b[2J\\u0085\\u2028\\u202e"
    )
    assert escape("plain text, ünïcode, 日本") == "plain text, ünïcode, 日本"


def test_redact_hides_the_values_of_secret_query_parameters_only():
    line = '"GET /mcp/b?access_token=hsa_x&q=code&Code=c1&API%5FKEY=k&token=&state=s HTTP/1.1" 401'
    assert redact(line) == (
        f'"GET /mcp/b?access_token={REDACTED}&q=code&Code={REDACTED}&API%5FKEY={REDACTED}&token=&state=s HTTP/1.1" 401'
    )
    assert redact("exit code=3, key=value") == "exit code=3, key=value"  # not a query


def test_a_text_record_is_one_line_and_its_traceback_is_indented_under_it():
    fmt = TextFormatter(config("text", "info")["formatters"]["default"]["fmt"])
    out = fmt.format(record("client %s refused at /cb?code=%s", FORGED, "hsc_secret", exc=ValueError("bad\nforged")))
    first, *rest = out.split("\n")
    assert first.endswith(f"client {escape(FORGED)} refused at /cb?code={REDACTED}")
    assert rest == ["  Traceback (most recent call last):", rest[1], rest[2], "  ValueError: bad", "  forged"]
    assert all(line.startswith("  ") for line in rest)


def test_a_json_record_has_no_control_character_in_any_text_field():
    fmt = JsonLines("%(levelname)s %(name)s %(message)s")
    out = fmt.format(record("client %s", FORGED, exc=ValueError("x?token=t1"), bank_id="b\nforged", attempt=2))
    assert "\n" not in out
    data = json.loads(out)
    assert data["message"] == f"client {escape(FORGED)}" and data["bank_id"] == "b\\nforged" and data["attempt"] == 2
    assert data["exc_info"].endswith(f"ValueError: x?token={REDACTED}")  # a traceback keeps its line breaks
