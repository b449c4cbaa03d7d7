"""Bank export / import: round trip to another server with identical recall and search, idempotent
re-import, id remapping on the same server, conflict policies, re-embedding, bad files."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
import time

import pytest

from conftest import ADMIN_KEY, Server, fresh_database
from support import b64, docx_bytes, import_docs, make_key, pdf_bytes

ITEMS = [
    {
        "content": "Melanie painted a sunrise over the lake last weekend.",
        "timestamp": "2023-05-08T10:00:00Z",
        "tags": ["art"],
        "metadata": {"turn": "D1:1"},
        "document_id": "session-1",
    },
    {
        "content": "Caroline said her support group meets every Tuesday in Boston.",
        "timestamp": "2023-05-08T10:01:00Z",
        "metadata": {"turn": "D1:2"},
        "document_id": "session-1",
    },
    {
        "content": "Melanie is training for a half marathon in October.",
        "timestamp": "2023-06-01T09:00:00Z",
        "tags": ["sport"],
        "metadata": {"turn": "D2:1"},
    },
    {"content": "The team adopted PostgreSQL with pgvector for the memory service.", "context": "work"},
]
QUERIES = ["What did Melanie paint?", "When does the support group meet?", "marathon training", "database choice"]
PHRASES = [["reset the firmware"], ["watts power draw", "WiFi"], ["Falcon X"]]


def snapshot(api, bank):
    recalls = [
        [(m["id"], m["text"]) for m in api.post(f"/v1/banks/{bank}/recall", json={"query": q}).json()["results"]]
        for q in QUERIES
    ]
    searches = [
        [
            (s["segment_uid"], s["raw_text"])
            for s in api.post(f"/v1/banks/{bank}/documents/search", json={"search_phrases": p}).json()["segments"]
        ]
        for p in PHRASES
    ]
    docs = sorted(
        (d["source_name"], d["content_hash"], d["chunk_count"], tuple(d["tags"]))
        for d in api.get(f"/v1/banks/{bank}/documents").json()["documents"]
    )
    models = sorted(
        (m["mental_model_id"], m["source_query"], m["content"])
        for m in api.get(f"/v1/banks/{bank}/mental-models").json()["mental_models"]
    )
    return recalls, searches, docs, models


@pytest.fixture
def filled_bank(api, bank):
    assert api.post(f"/v1/banks/{bank}/memories", json={"items": ITEMS}).status_code == 200
    import_docs(
        api,
        bank,
        files=[
            {"name": "guide.pdf", "content_base64": b64(pdf_bytes())},
            {"name": "specs.docx", "content_base64": b64(docx_bytes())},
        ],
        tags=[],
    )
    r = api.post(
        f"/v1/banks/{bank}/mental-models",
        json={"name": "Melanie", "source_query": "What does Melanie do?", "mental_model_id": "melanie"},
    )
    assert r.status_code == 202, r.text
    op = api.get(f"/v1/banks/{bank}/operations/{r.json()['operation_id']}", params={"wait": 30})
    for _ in range(100):  # content is generated asynchronously (extractively, offline)
        if api.get(f"/v1/banks/{bank}/mental-models/melanie").json()["content"]:
            break
        time.sleep(0.1)
    assert op.status_code == 200
    return bank


def export(api, bank) -> bytes:
    r = api.get(f"/v1/banks/{bank}/export")
    assert r.status_code == 200 and r.headers["content-type"] == "application/gzip", r.text
    return r.content


def do_import(api, bank, data: bytes, **params):
    r = api.post(f"/v1/banks/{bank}/import", content=data, params=params, headers={"Content-Type": "application/gzip"})
    assert r.status_code == 200, r.text
    return r.json()


@pytest.fixture(scope="module")
def elsewhere(pg_url):
    s = Server({"HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "portable_elsewhere")}).start()
    yield s
    s.stop()


def test_round_trip_to_another_server_gives_identical_recall(api, filled_bank, elsewhere):
    data = export(api, filled_bank)
    lines = [json.loads(x) for x in gzip.decompress(data).decode().splitlines()]
    assert lines[0]["kind"] == "header" and lines[0]["embedding"]["dim"] == 384 and lines[-1]["kind"] == "end"
    assert lines[-1]["counts"]["memory"] == 4 and lines[-1]["counts"]["chunk"] >= 2
    assert lines[-1]["counts"]["entity"] >= 3 and lines[-1]["counts"]["mental_model"] == 1
    before = snapshot(api, filled_bank)
    with elsewhere.http() as other:
        res = do_import(other, filled_bank, data)
        assert res["created_bank"] is True and res["re_embedded"] is False
        assert (
            res["imported"]["memory"] == 4 and res["imported"]["document"] == 2 and res["imported"]["mental_model"] == 1
        )
        assert snapshot(other, filled_bank) == before
        again = do_import(other, filled_bank, data)  # the same file again: nothing new
        assert again["imported"].get("memory", 0) == 0 and again["skipped"]["memory"] == 4
        assert again["skipped"]["document"] == 2 and again["skipped"]["mental_model"] == 1
        assert snapshot(other, filled_bank) == before
        stats = other.get(f"/v1/banks/{filled_bank}").json()
        assert stats["memory_count"] == 4 and stats["entity_count"] >= 3


def test_import_on_the_same_server_renumbers_and_resolves_conflicts(api, filled_bank, bank):
    data = export(api, filled_bank)
    copy = bank + "_copy"
    # an existing bank with a different document under the same name and an existing model id
    import_docs(api, copy, files=[{"name": "guide.pdf", "text": "Another guide entirely.", "type": "txt"}])
    api.post(
        f"/v1/banks/{copy}/mental-models",
        json={"name": "M", "source_query": "Something else?", "mental_model_id": "melanie"},
    )
    res = do_import(api, copy, data)
    assert res["created_bank"] is False and res["renamed"] == {"document": 1, "mental_model": 1}
    names = {d["source_name"] for d in api.get(f"/v1/banks/{copy}/documents").json()["documents"]}
    assert "guide.pdf" in names and any(n.startswith("guide.pdf (imported ") for n in names) and "specs.docx" in names
    models = {m["mental_model_id"] for m in api.get(f"/v1/banks/{copy}/mental-models").json()["mental_models"]}
    assert "melanie" in models and any(m.startswith("melanie-imported-") for m in models)
    original = snapshot(api, filled_bank)[0]
    copied = snapshot(api, copy)[0]
    assert [[t for _, t in q] for q in copied] == [[t for _, t in q] for q in original]  # same answers
    assert not {i for q in copied for i, _ in q} & {i for q in original for i, _ in q}  # under new ids
    assert api.get(f"/v1/banks/{filled_bank}").json()["memory_count"] == 4  # the source is untouched

    skip = bank + "_skip"
    import_docs(api, skip, files=[{"name": "guide.pdf", "text": "Local guide.", "type": "txt"}])
    res = do_import(api, skip, data, on_conflict="skip")
    assert res["skipped"]["document"] == 1 and res["imported"]["document"] == 1
    texts = [
        s["raw_text"]
        for s in api.post(f"/v1/banks/{skip}/documents/search", json={"search_phrases": ["guide"]}).json()["segments"]
    ]
    assert "Local guide." in texts
    res = do_import(api, skip, data, on_conflict="replace")
    assert res["replaced"]["document"] == 1
    names = [d["source_name"] for d in api.get(f"/v1/banks/{skip}/documents").json()["documents"]]
    assert sorted(names) == ["guide.pdf", "specs.docx"]


def test_other_embedding_model_is_re_embedded(api, filled_bank, bank):
    lines = [json.loads(x) for x in gzip.decompress(export(api, filled_bank)).decode().splitlines()]
    lines[0]["embedding"]["model"] = "some-other-model"
    for rec in lines:
        if rec["kind"] in ("memory", "chunk"):
            rec["row"]["embedding"] = "[" + ",".join(["0.01"] * 384) + "]"  # meaningless vectors
    data = gzip.compress(("\n".join(json.dumps(x) for x in lines) + "\n").encode())
    target = bank + "_re"
    res = do_import(api, target, data)
    assert res["re_embedded"] is True and res["source_model"] == "some-other-model"
    orig, new = snapshot(api, filled_bank), snapshot(api, target)
    assert [[t for _, t in q] for q in new[0]] == [[t for _, t in q] for q in orig[0]]
    assert [[t for _, t in q] for q in new[1]] == [[t for _, t in q] for q in orig[1]]


def test_bad_archives_change_nothing(api, filled_bank):
    data = export(api, filled_bank)
    bank = filled_bank + "_bad"
    raw = gzip.decompress(data).decode().splitlines()
    truncated = gzip.compress("\n".join(raw[:-1]).encode())
    for body, words in [
        (truncated, "truncated"),
        (b"not gzip at all", "gzip"),
        (gzip.compress(b'{"kind": "x"}\n'), "not a Hindsight"),
        (gzip.compress(b"{broken\n"), "not JSON"),
        (b"", "empty"),
        (gzip.compress(("\n".join(raw[:3] + ['{"kind":"memory","row":{"id":"x"}}'] + raw[3:])).encode()), "archive"),
    ]:
        r = api.post(f"/v1/banks/{bank}/import", content=body)
        assert r.status_code == 422, (words, r.text)
        assert words in r.json()["message"] and r.json()["message"].startswith("archive"), r.json()
    assert api.get(f"/v1/banks/{bank}").status_code == 404  # not even the bank was created
    r = api.post(f"/v1/banks/{bank}/import", content=data, params={"on_conflict": "merge"})
    assert r.status_code == 422 and "on_conflict" in r.text
    assert api.get(f"/v1/banks/{bank}_missing/export").status_code == 404


def one_memory_archive(api, bank) -> tuple[list[dict], int]:
    """The lines of an export of a bank holding one memory, and that memory's line."""
    api.post(f"/v1/banks/{bank}/memories", json={"content": "Caroline went hiking."}).raise_for_status()
    lines = [json.loads(x) for x in gzip.decompress(export(api, bank)).decode().splitlines()]
    return lines, next(i for i, line in enumerate(lines) if line["kind"] == "memory")


def edited(lines, memory, header=None, row=None, end=None, first=None, raw_metadata=None) -> bytes:
    """The archive with its header, the memory's row and the end line updated; `first`: a line put
    before the header; `raw_metadata`: the memory's metadata as this JSON text (deeper than
    json.dumps writes)."""
    row = dict(row or {}, **({"metadata": "RAW"} if raw_metadata is not None else {}))
    changed = [dict(line) for line in lines]
    changed[0] = {**changed[0], **(header or {})}
    changed[memory] = {**changed[memory], "row": {**changed[memory]["row"], **row}}
    changed[-1] = {**changed[-1], **(end or {})}
    text = "\n".join(json.dumps(line) for line in changed)
    if raw_metadata is not None:
        text = text.replace('"RAW"', raw_metadata)
    return gzip.compress(((first + "\n") if first is not None else "").encode() + text.encode())


def test_archive_values_must_be_storable_and_answerable(api, bank):
    """A row's free JSON nested much deeper than clients may send (strict.MAX_DEPTH, with slack
    for the history rows that wrap it), or text with a NUL or an unpaired surrogate, is refused
    with the line named: metadata ~200 levels deep made every recall and listing of the bank fail."""
    lines, memory = one_memory_archive(api, bank)
    # a vector of zeros has no direction: its cosine distance to every query is NaN
    zeros = "[" + ",".join("0" for _ in lines[memory]["row"]["embedding"].strip("[]").split(",")) + "]"

    def archive(raw: str | None = None, **row) -> bytes:
        return edited(lines, memory, row=row, raw_metadata=raw)

    def nested(depth: int):
        value: object = 1
        for _ in range(depth):
            value = {"a": value}
        return value

    for body, words in [
        (archive(metadata=nested(40)), "nested deeper than 32 levels"),
        (archive(metadata=nested(230)), "nested deeper than 32 levels"),
        (archive(raw='{"a": ' * 5000 + "1" + "}" * 5000), "nested too deeply"),
        (archive(text="Caroline\u0000 went hiking."), "NUL"),
        (archive(metadata={"k": "\ud800"}), "surrogate"),
        (archive(metadata={"k": "x" * 20_000}), "16 KiB"),
        (archive(metadata="not an object"), "object"),
        (archive(embedding=zeros), "all zeros"),
        (archive(embedding=zeros.replace("0", "-0.0")), "all zeros"),
    ]:
        r = api.post(f"/v1/banks/{bank}_x/import", content=body)
        assert r.status_code == 422, (words, r.text)
        message = r.json()["message"]
        assert message.startswith(f"archive: line {memory + 1}") and words in message, message
    assert api.get(f"/v1/banks/{bank}_x").status_code == 404
    # As deep as a client may send: imported, recalled and listed.
    do_import(api, f"{bank}_x", archive(metadata=nested(32)))
    for r in (
        api.post(f"/v1/banks/{bank}_x/recall", json={"query": "hiking"}),
        api.get(f"/v1/banks/{bank}_x/memories"),
    ):
        assert r.status_code == 200 and "Caroline went hiking." in r.text, r.text


def test_cli_export_import_and_key_scope(auth_server, tmp_path, bank):
    with auth_server.http(ADMIN_KEY) as admin:
        assert admin.post(f"/v1/banks/{bank}/memories", json={"items": ITEMS}).status_code == 200
        reader = make_key(admin, role="bank", banks=[bank], access="read")["key"]
        other = make_key(admin, role="bank", banks=[bank + "_x"])["key"]
    path = tmp_path / "b.gz"

    def run(cmd, key, *args):
        return subprocess.run(
            [sys.executable, "-m", "hindsight.cli.main", "banks", "--url", auth_server.url, "--key", key, cmd, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    r = run("export", reader, bank, "-o", str(path))
    assert r.returncode == 0 and "exported" in r.stdout, r.stderr
    r = run("import", reader, bank + "_x", str(path))
    assert r.returncode != 0 and "403" in r.stderr  # a read key cannot write anywhere
    r = run("export", other, bank, "-o", str(tmp_path / "no.gz"))
    assert r.returncode != 0 and "403" in r.stderr
    r = run("import", other, bank + "_x", str(path))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["imported"]["memory"] == 4
    r = run("import", other, bank, str(path))
    assert r.returncode != 0 and "403" in r.stderr


def test_archive_header_and_times_held_to_the_api_rules(api, bank):
    """Bank settings in the header are checked as the API checks them (a chunk size of -5 made
    the next document import loop forever; a disposition that is a list broke the bank listing),
    and times PostgreSQL holds but Python cannot (BC, year 200000) are refused: one such memory
    broke every recall of its bank. A malformed header or end line is a 422, not a 500."""
    lines, memory = one_memory_archive(api, bank)

    def archive(**changes) -> bytes:
        return edited(lines, memory, **changes)

    config = lines[0]["bank"].get("config") or {}
    for body, words in [
        (archive(header={"bank": {**lines[0]["bank"], "config": {**config, "document_chunk_size": -5}}}), "chunk"),
        (archive(header={"bank": {**lines[0]["bank"], "disposition": [1]}}), "disposition"),
        (
            archive(header={"bank": {**lines[0]["bank"], "config": {**config, "client_settings": [1]}}}),
            "client_settings",
        ),
        (archive(header={"bank": {**lines[0]["bank"], "name": 5}}), "name"),
        (archive(header={"bank": "x"}), "bank"),
        (archive(header={"embedding": "x"}), "embedding"),
        (archive(end={"counts": ["many"]}), "counts"),
        (archive(end={"counts": {"memory": "many"}}), "counts"),
        (archive(first="null"), "no header"),
        (archive(first="[1]"), "no header"),
        (archive(row={"created_at": "0010-01-01T00:00:00+00:00 BC"}), "created_at"),
        (archive(row={"mentioned_at": "200000-01-01T00:00:00+00:00"}), "mentioned_at"),
        (archive(row={"occurred_start": "yesterday"}), "occurred_start"),
    ]:
        r = api.post(f"/v1/banks/{bank}_h/import", content=body)
        assert r.status_code == 422, (words, r.text)
        assert r.json()["message"].startswith("archive") and words in r.json()["message"], (words, r.json())
    assert api.get(f"/v1/banks/{bank}_h").status_code == 404
    assert api.get("/v1/banks").status_code == 200
    # The settings the API allows come across.
    ok = archive(header={"bank": {**lines[0]["bank"], "config": {**config, "document_chunk_size": 800}}})
    do_import(api, f"{bank}_h", ok)
    assert api.get(f"/v1/banks/{bank}_h").json()["document_chunk_size"] == 800


def test_metadata_stored_too_deep_before_the_check_does_not_break_the_bank(api, bank, pg_url):
    """A memory an older server imported with metadata nested past what can be answered (written
    here directly): recall and listing answer, its metadata a note saying so."""
    from test_entity_names import db

    from hindsight.engine.memory.records import TOO_DEEP

    api.post(f"/v1/banks/{bank}/memories", json={"content": "Caroline went hiking."}).raise_for_status()
    db(pg_url, "UPDATE memories SET metadata = $2::jsonb WHERE bank_id = $1", bank, '{"a": ' * 300 + "1" + "}" * 300)
    for r in (api.post(f"/v1/banks/{bank}/recall", json={"query": "hiking"}), api.get(f"/v1/banks/{bank}/memories")):
        assert r.status_code == 200, r.text
        body = r.json()
        (m,) = body.get("results") or body.get("memories")
        assert m["metadata"] == TOO_DEEP
