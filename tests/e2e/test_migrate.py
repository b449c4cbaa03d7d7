"""`hindsight migrate`, the real command, from a Hindsight server replayed on loopback: the
answers a real Hindsight 0.9.1 gave (hindsight-api-slim, recorded by bench/migrate_hindsight.py
--record into tests/e2e/fixtures/), each checked here against the response schema its OpenAPI
document gives that operation. What arrives here, what is reported, and what a second run and an
interrupted one do."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import jsonschema
import pytest

from hindsight.testing import Replay

from conftest import Server, fresh_database

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "hindsight-0.9.1-migrate.json"
SPEC = Path(__file__).resolve().parents[3] / "shared" / "hindsight" / "openapi-0.9.1.json"
RECORDING = json.loads(FIXTURE.read_text())
# The real 0.9.1 server's lists of banks, models and directives leave out the page fields its
# document marks required (migrate pages without them).
DEVIATIONS = {
    (path, f"'{f}' is a required property")
    for path in (
        "/v1/default/banks",
        "/v1/default/banks/{bank_id}/mental-models",
        "/v1/default/banks/{bank_id}/directives",
    )
    for f in ("total", "limit", "offset")
}
BANKS = sorted({e["path"].split("/")[4] for e in RECORDING["exchanges"] if e["path"].count("/") >= 4})


@pytest.mark.skipif(not SPEC.exists(), reason="../shared/hindsight/ is not beside this checkout")
def test_the_recording_is_shaped_by_the_openapi_document():
    spec = json.loads(SPEC.read_text())
    templates = []
    for path, ops in spec["paths"].items():
        if "get" in ops:
            pattern = "^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(path)) + "$"
            templates.append((re.compile(pattern), path, ops["get"]))
    found = set()
    for e in RECORDING["exchanges"]:
        assert e["method"] == "GET" and e["status"] == 200, e
        path, op = next((p, o) for rx, p, o in templates if rx.match(e["path"]))
        schema = op["responses"]["200"]["content"]["application/json"]["schema"]
        validator = jsonschema.Draft202012Validator({**schema, "components": spec["components"]})
        found |= {(path, err.message) for err in validator.iter_errors(e["body"])}
    # Where the real server answers other than its own document says (migrate copes with it).
    assert found == DEVIATIONS


@pytest.fixture
def ours(pg_url, request):
    s = Server({"HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, f"migrate_{request.node.name[:40]}")}).start()
    yield s
    s.stop()


def run(source: str, target: Server, state: Path, *extra: str) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "hindsight.cli.main", "migrate", "--from", source, "--url", target.url]
    return subprocess.run([*cmd, "--state", str(state), *extra], capture_output=True, text=True, timeout=300)


def summary(p: subprocess.CompletedProcess) -> dict:
    assert p.returncode == 0, p.stdout + p.stderr
    return {s["bank_id"]: s for s in json.loads(p.stdout)}


def test_banks_arrive_with_what_they_hold(ours, tmp_path):
    replay = Replay(RECORDING).start()
    try:
        first = run(replay.url, ours, tmp_path / "state.json", "--all", "--json")
        got = summary(first)
        assert replay.misses == []
    finally:
        replay.stop()
    assert sorted(got) == BANKS and "documents 3/3" in first.stderr  # progress, per batch
    bank = BANKS[0]
    s = got[bank]
    assert s["error"] is None and s["copied"]["documents"] == 3 and s["copied"]["facts"] == 3
    assert s["copied"]["mental models created"] == 2
    assert s["copied"]["directives"] == 2 and "directives" not in s["not_copied"], s
    with ours.http() as h:
        p = f"/v1/default/banks/{bank}"
        profile = h.get(f"{p}/profile").json()
        assert profile["name"] == "Bench 0" and profile["mission"].startswith("Remember the bench's people")
        assert profile["disposition"] == {"skepticism": 4, "literalism": 2, "empathy": 5}
        config = h.get(f"{p}/config").json()
        assert (
            config["overrides"]["retain_mission"] == "People and places." and "retain_mission" in config["not_applied"]
        )
        doc = h.get(f"{p}/documents/doc-0-00001").json()
        assert doc["tags"] == ["bank-0", "group-1"] and doc["original_text"].startswith("Bruno met Carla in")
        chunks = h.get(f"{p}/documents/doc-0-00001/chunks").json()["items"]
        assert (
            "".join(c["chunk_text"] for c in chunks).replace(" ", "")[:40] == doc["original_text"].replace(" ", "")[:40]
        )
        facts = h.get(f"/v1/banks/{bank}/memories", params={"document_id": "doc-0-00001"}).json()["memories"]
        fact = next((m for m in facts if m["text"] == doc["original_text"]), None)
        assert fact, [(m["text"][:60], len(m["text"]), len(doc["original_text"])) for m in facts]
        assert fact["metadata"] == {"source": "bench", "n": "1"} and fact["tags"] == ["bank-0", "group-1"]
        assert fact["mentioned_at"].startswith("2024-02-02T10:00:00")
        models = {m["id"] for m in h.get(f"{p}/mental-models").json()["items"]}
        assert models == {"people-0", "people-1"}
        rules = h.get(f"{p}/directives", params={"active_only": False}).json()["items"]
        assert len(rules) == 2 and all(r["name"] and r["content"] for r in rules), rules
        hit = h.post(f"{p}/memories/recall", json={"query": "Who met Carla?"}).json()["results"]
        assert hit and "Carla" in hit[0]["text"]


def test_a_second_run_copies_nothing_new(ours, tmp_path):
    replay = Replay(RECORDING).start()
    try:
        summary(run(replay.url, ours, tmp_path / "state.json", "--all", "--json"))
        with ours.http() as h:
            before = [h.get(f"/v1/banks/{b}/memories", params={"limit": 1}).json()["total"] for b in BANKS]
        again = summary(run(replay.url, ours, tmp_path / "state.json", "--all", "--json"))
        fresh_state = summary(run(replay.url, ours, tmp_path / "other-state.json", "--all", "--json"))
    finally:
        replay.stop()
    for b in BANKS:
        assert again[b]["copied"].get("documents", 0) == 0 and again[b]["copied"]["documents done before"] == 3
        # without the state file the server itself keeps it idempotent: every document already here
        assert fresh_state[b]["copied"]["documents already here"] == 3 and not fresh_state[b]["copied"].get("facts")
        assert fresh_state[b]["copied"]["mental models created"] == 0
    with ours.http() as h:
        after = [h.get(f"/v1/banks/{b}/memories", params={"limit": 1}).json()["total"] for b in BANKS]
    assert after == before


def test_an_interrupted_run_goes_on_where_it_stopped(ours, tmp_path):
    state = tmp_path / "state.json"
    cut = Replay(RECORDING, fail_after=12).start()
    try:
        stopped = run(cut.url, ours, state, "--all")
    finally:
        cut.stop()
    assert stopped.returncode == 1 and "FAILED" in stopped.stdout and "503" in stopped.stdout, stopped.stdout
    assert json.loads(state.read_text())["banks"]  # what was done is recorded
    replay = Replay(RECORDING).start()
    try:
        resumed = summary(run(replay.url, ours, state, "--all", "--json"))
    finally:
        replay.stop()
    assert all(s["error"] is None for s in resumed.values())
    with ours.http() as h:
        for b in BANKS:
            assert h.get(f"/v1/default/banks/{b}/documents").json()["total"] == 3
            assert h.get(f"/v1/banks/{b}/memories", params={"limit": 1}).json()["total"] == 9  # nothing twice


def test_usage_errors_are_plain(tmp_path):
    base = [sys.executable, "-m", "hindsight.cli.main", "migrate", "--from", "http://127.0.0.1:9"]
    both = subprocess.run([*base, "--bank", "a", "--all"], capture_output=True, text=True)
    assert both.returncode == 2 and "give --bank B" in both.stderr
    state = str(tmp_path / "s.json")
    gone = subprocess.run([*base, "--bank", "a", "--state", state], capture_output=True, text=True, timeout=60)
    assert gone.returncode != 0 and "cannot reach" in gone.stderr + gone.stdout and "Traceback" not in gone.stderr


def test_a_source_that_answers_out_of_shape_is_reported_not_a_traceback(ours, tmp_path):
    """The source is another server, trusted for nothing: an answer that is not JSON, or JSON of
    another shape, stops with a sentence naming the source, never a traceback."""

    def listing(body) -> dict:
        return {
            "method": "GET",
            "path": "/v1/default/banks",
            "query": "limit=100&offset=0",
            "status": 200,
            "body": body,
        }

    def profile(body) -> dict:
        return {"method": "GET", "path": "/v1/default/banks/zz/profile", "query": "", "status": 200, "body": body}

    for exchanges, args in (
        ([listing({"banks": [{"name": "no id"}]})], ["--all"]),
        ([listing({"banks": "abc"})], ["--all"]),
        ([listing({"banks": [{"bank_id": {"a": 1}}]})], ["--all"]),
        ([listing("<html>")], ["--all"]),
        ([profile([1])], ["--bank", "zz"]),
    ):
        replay = Replay({"exchanges": exchanges}).start()
        try:
            p = run(replay.url, ours, tmp_path / f"state-{len(args)}.json", *args)
        finally:
            replay.stop()
        out = p.stdout + p.stderr
        assert p.returncode == 1 and "Traceback" not in out, out
        assert "the Hindsight server" in out and "shape" in out, out
