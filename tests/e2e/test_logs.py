"""The server's log as a person and a log shipper read it: one format for every line, uvicorn's and
ours; one JSON object a line on request; one line when an operation starts and one when it ends;
nothing from the scheduler while it has nothing to do."""

from __future__ import annotations

import json
import re
import time

from conftest import Server, fresh_database, wait_for

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
