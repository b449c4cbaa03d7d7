"""The rest of Hindsight's `/v1/default` API in process (issue 52): profile PUT and background,
templates, clearing memories, observations and consolidation as our design means them, dry
runs, document PATCH and reprocess, chunks by id, operation retry and delete, files retain,
document transfer, and the LLM probe. Real clients and shapes are checked over HTTP in
tests/e2e/test_hindsight_client_surface.py, tests/e2e/test_hindsight_client_rest.py and
tests/e2e/test_hindsight_openapi.py."""

from __future__ import annotations

import asyncio
import io
import json
import zipfile

from hindsight.engine.access.keys import Principal

P = "/v1/default/banks"


async def _retain(rest, bank, content, **extra):
    r = await rest.post(f"{P}/{bank}/memories", json={"items": [{"content": content, **extra}]})
    assert r.status_code == 200, r.text


async def _done(rest, bank, op_id, timeout=30):
    for _ in range(int(timeout / 0.1)):
        op = (await rest.get(f"{P}/{bank}/operations/{op_id}")).json()
        if op["status"] in ("completed", "failed", "cancelled"):
            return op
        await asyncio.sleep(0.1)
    raise AssertionError(f"operation {op_id} did not finish: {op}")


async def test_profile_put_and_background(rest, bank):
    r = await rest.put(f"{P}/{bank}/profile", json={"disposition": {"skepticism": 5, "literalism": 1, "empathy": 4}})
    assert r.status_code == 200, r.text
    assert r.json()["disposition"] == {"skepticism": 5, "literalism": 1, "empathy": 4}
    assert (await rest.put(f"{P}/{bank}/profile", json={"disposition": {"skepticism": 9}})).status_code == 422
    r = await rest.post(f"{P}/{bank}/background", json={"content": "I help Ana plan trips."})
    assert r.status_code == 200 and r.json()["mission"] == "I help Ana plan trips.", r.text
    r = await rest.post(f"{P}/{bank}/background", json={"content": "Ana likes trains."})
    assert r.json()["mission"] == "I help Ana plan trips.\n\nAna likes trains."
    again = await rest.post(f"{P}/{bank}/background", json={"content": "Ana likes trains."})
    assert again.json()["mission"] == r.json()["mission"]  # already there: unchanged
    assert (await rest.get(f"{P}/{bank}/profile")).json()["disposition"]["skepticism"] == 5


async def test_templates_round_trip(rest, bank):
    other = bank + "_copy"
    await rest.put(f"{P}/{bank}/profile", json={"disposition": {"skepticism": 2, "literalism": 3, "empathy": 4}})
    await rest.patch(f"{P}/{bank}/config", json={"updates": {"reflect_mission": "Plan trips.", "retain_mission": "x"}})
    made = await rest.post(f"{P}/{bank}/mental-models", json={"id": "trips", "name": "Trips", "source_query": "Where?"})
    assert made.status_code == 200, made.text
    manifest = (await rest.get(f"{P}/{bank}/export")).json()
    assert manifest["version"] == "1" and manifest["bank"]["reflect_mission"] == "Plan trips.", manifest
    assert manifest["bank"]["disposition_skepticism"] == 2 and manifest["bank"]["retain_mission"] == "x"
    assert [m["id"] for m in manifest["mental_models"]] == ["trips"] and manifest["directives"] == []
    rule = {"name": "Tone", "content": "Answer briefly.", "priority": 2, "is_active": True, "tags": ["trips"]}
    assert (await rest.post(f"{P}/{bank}/directives", json=rule)).status_code in (200, 201)
    manifest = (await rest.get(f"{P}/{bank}/export")).json()
    assert manifest["directives"] == [rule], manifest["directives"]
    dry = (await rest.post(f"{P}/{other}/import", json=manifest, params={"dry_run": True})).json()
    assert dry["dry_run"] and dry["mental_models_created"] == ["trips"] and dry["config_applied"]
    assert dry["directives_created"] == ["Tone"]
    assert (await rest.get(f"/v1/banks/{other}")).status_code == 404  # the dry run made no bank
    done = (await rest.post(f"{P}/{other}/import", json=manifest)).json()
    assert done["mental_models_created"] == ["trips"] and len(done["operation_ids"]) == 1, done
    copy = (await rest.get(f"{P}/{other}/export")).json()
    assert copy == manifest
    again = (await rest.post(f"{P}/{other}/import", json=manifest)).json()
    assert again["mental_models_created"] == again["mental_models_updated"] == []  # as asked already
    assert again["directives_created"] == again["directives_updated"] == []
    manifest["mental_models"][0]["source_query"] = "Where next?"
    manifest["directives"][0]["content"] = "Answer in one line."
    changed = (await rest.post(f"{P}/{other}/import", json=manifest)).json()
    assert changed["mental_models_updated"] == ["trips"] and changed["directives_updated"] == ["Tone"]
    (copied,) = (await rest.get(f"{P}/{other}/directives", params={"active_only": False})).json()["items"]
    assert copied["content"] == "Answer in one line." and copied["priority"] == 2
    # our extension: a model with its content starts ready, no refresh queued
    with_content = {
        "version": "1",
        "mental_models": [{"id": "kept", "name": "K", "source_query": "q", "content": "Done."}],
    }
    kept = (await rest.post(f"{P}/{other}/import", json=with_content)).json()
    assert kept["operation_ids"] == []
    assert (await rest.get(f"{P}/{other}/mental-models/kept")).json()["content"] == "Done."
    for bad, field in (
        ({"version": "2"}, "version"),
        ({"version": "1", "directives": [{"name": "d", "content": "c"}, {"name": "d", "content": "e"}]}, "directives"),
        ({"version": "1", "directives": [{"name": "d", "content": ""}]}, "directives"),
        ({"version": "1", "mental_models": [{"id": "A B", "name": "x", "source_query": "q"}]}, "mental_models"),
        ({"version": "1", "bank": {"disposition_empathy": 7}}, "settings"),
    ):
        r = await rest.post(f"{P}/{other}/import", json=bad)
        assert r.status_code == 422 and r.json()["field"].startswith(field), (bad, r.text)
    schema = (await rest.get("/v1/bank-template-schema")).json()
    assert "version" in schema["required"] and "mental_models" in schema["properties"]


async def test_clear_memories_and_observations(rest, bank):
    await _retain(rest, bank, "Ana lives in Porto.", document_id="d1")
    await _retain(rest, bank, "I booked a train.")
    listed = (await rest.get(f"{P}/{bank}/memories/list")).json()
    memory_id = listed["items"][0]["id"]
    assert (await rest.delete(f"{P}/{bank}/memories/{memory_id}/observations")).json() == {"deleted_count": 0}
    r = await rest.delete(f"{P}/{bank}/memories/00000000-0000-4000-8000-000000000000/observations")
    assert r.status_code == 404
    assert (await rest.get(f"{P}/{bank}/observations/scopes")).json()["scopes"] == []
    assert (await rest.delete(f"{P}/{bank}/observations")).json()["deleted_count"] == 0
    assert (await rest.delete(f"{P}/{bank}/memories", params={"type": "observation"})).json()["deleted_count"] == 0
    r = await rest.delete(f"{P}/{bank}/memories", params={"type": "experience"})
    assert r.json()["deleted_count"] == 1, r.text
    r = await rest.delete(f"{P}/{bank}/memories")
    assert r.json() == {"success": True, "message": "1 memories deleted", "deleted_count": 1, "detail": None} or (
        r.json()["deleted_count"] == 1
    )
    assert (await rest.get(f"{P}/{bank}/documents")).json()["total"] == 0
    assert (await rest.get(f"{P}/{bank}/profile")).status_code == 200
    assert (await rest.delete(f"{P}/{bank}/memories", params={"type": "opinion"})).status_code == 422


async def test_consolidation_refreshes_stale_models(rest, bank):
    await _retain(rest, bank, "Ana lives in Porto.")
    made = (await rest.post(f"{P}/{bank}/mental-models", json={"name": "Home", "source_query": "Where?"})).json()
    await _done(rest, bank, made["operation_id"])
    await _retain(rest, bank, "Ana moved to Lisbon.")
    first = (await rest.post(f"{P}/{bank}/consolidate", json={"observation_scopes": [["a"]]})).json()
    assert first["deduplicated"] in (False, True)
    op = await _done(rest, bank, first["operation_id"])
    assert op["status"] == "completed" and op["result_metadata"]["mental_models"] == [made["mental_model_id"]], op
    assert (await rest.post(f"{P}/{bank}/consolidate")).status_code == 200
    assert (await rest.post(f"{P}/{bank}/consolidation/recover")).json() == {"retried_count": 0}
    assert (await rest.post(f"{P}/{bank}_never/consolidate")).status_code == 404


async def test_documents_patch_reprocess_and_chunks(rest, bank):
    await _retain(rest, bank, "Ana lives in Porto. She works at a bakery.", document_id="notes/1", tags=["a"])
    r = await rest.patch(f"{P}/{bank}/documents/notes/1", json={"tags": ["b", "c"]})
    assert r.status_code == 200 and r.json() == {"success": True}, r.text
    doc = (await rest.get(f"{P}/{bank}/documents/notes/1")).json()
    assert doc["tags"] == ["b", "c"]
    listed = (await rest.get(f"{P}/{bank}/memories/list")).json()["items"]
    assert all(m["tags"] == ["b", "c"] for m in listed)
    assert (await rest.patch(f"{P}/{bank}/documents/nope", json={"tags": ["x"]})).status_code == 404
    assert (await rest.patch(f"{P}/{bank}/documents/notes/1", json={})).status_code == 422
    chunks = (await rest.get(f"{P}/{bank}/documents/notes/1/chunks")).json()["items"]
    one = (await rest.get(f"/v1/default/chunks/{chunks[0]['chunk_id']}")).json()
    assert one == chunks[0]
    assert (await rest.get("/v1/default/chunks/00000000-0000-4000-8000-000000000000")).status_code == 404
    assert (await rest.get("/v1/default/chunks/not-an-id")).status_code == 422
    again = (await rest.post(f"{P}/{bank}/documents/notes/1/reprocess")).json()
    assert again["success"] and again["items_count"] == 1
    op = await _done(rest, bank, again["operation_id"])
    assert op["status"] == "completed", op
    redone = (await rest.get(f"{P}/{bank}/documents/notes/1")).json()
    assert redone["original_text"] == doc["original_text"] and redone["tags"] == ["b", "c"]
    assert (await rest.post(f"{P}/{bank}/documents/nope/reprocess")).status_code == 404


async def test_operation_retry_and_delete(rest, bank):
    await _retain(rest, bank, "Ana lives in Porto.")
    op = (await rest.post(f"{P}/{bank}/memories", json={"items": [{"content": "x"}], "async": True})).json()
    done = await _done(rest, bank, op["operation_id"])
    assert done["status"] == "completed"
    r = await rest.post(f"{P}/{bank}/operations/{op['operation_id']}/retry")
    assert r.status_code == 409 and "only a failed one" in r.json()["message"]
    r = await rest.delete(f"{P}/{bank}/operations/{op['operation_id']}/delete")
    assert r.status_code == 200 and r.json()["success"] is True, r.text
    assert (await rest.get(f"{P}/{bank}/operations/{op['operation_id']}")).status_code == 404
    assert (await rest.delete(f"{P}/{bank}/operations/{op['operation_id']}/delete")).status_code == 404


async def test_files_retain(rest, bank):
    files = [("files", ("notes.md", b"# Trip\n\nAna takes the night train to Vigo.", "text/markdown"))]
    request = json.dumps({"files_metadata": [{"tags": ["trip"], "context": "travel"}]})
    r = await rest.post(f"{P}/{bank}/files/retain", files=files, data={"request": request})
    assert r.status_code == 200, r.text
    (op_id,) = r.json()["operation_ids"]
    op = await _done(rest, bank, op_id)
    assert op["status"] == "completed", op
    doc = (await rest.get(f"{P}/{bank}/documents/notes.md")).json()
    assert "night train to Vigo" in doc["original_text"] and doc["tags"] == ["trip"]
    bad = await rest.post(f"{P}/{bank}/files/retain", files=files, data={"request": "{nope"})
    assert bad.status_code == 422 and bad.json()["field"] == "request"
    two = json.dumps({"files_metadata": [{}, {}]})
    assert (await rest.post(f"{P}/{bank}/files/retain", files=files, data={"request": two})).status_code == 422


async def test_document_transfer_round_trip(rest, bank):
    other = bank + "_to"
    await _retain(rest, bank, "Ana lives in Porto. She works at a bakery.", document_id="d1", tags=["t"])
    await _retain(rest, bank, "Bruno plays chess.", metadata={"source": "chat", "n": 3})
    assert (await rest.get(f"{P}/{bank}/document-transfer")).status_code == 410
    sub = await rest.post(f"{P}/{bank}/document-transfer/export")
    assert sub.status_code == 202, sub.text
    op = await _done(rest, bank, sub.json()["operation_id"])
    meta = op["result_metadata"]
    assert op["status"] == "completed" and meta["download_url"].startswith("/v1/default/files/download/banks/")
    got = await rest.get(meta["download_url"])
    assert got.status_code == 200 and got.headers["content-type"] == "application/zip"
    archive = zipfile.ZipFile(io.BytesIO(got.content))
    manifest = json.loads(archive.read("manifest.json"))
    assert manifest["document_count"] == 2 and manifest["source_bank_id"] == bank
    docs = [json.loads(archive.read(n)) for n in sorted(archive.namelist()) if n.startswith("documents/")]
    d1 = next(d for d in docs if d["id"] == "d1")
    assert d1["tags"] == ["t"] and d1["chunks"][0]["chunk_text"].startswith("Ana lives in Porto.")
    loose = next(d for d in docs if d["id"].startswith("item:"))
    assert loose["facts"][0]["metadata"] == {"source": "chat", "n": "3"}
    up = {"file": ("transfer.zip", got.content, "application/zip")}
    sub = await rest.post(f"{P}/{other}/document-transfer", files=up)
    assert sub.status_code == 202, sub.text
    op = await _done(rest, other, sub.json()["operation_id"])
    assert op["status"] == "completed", op
    assert op["result_metadata"]["documents_imported"] == 2 and op["result_metadata"]["facts_imported"] == 2
    recalled = (await rest.post(f"{P}/{other}/memories/recall", json={"query": "Who plays chess?"})).json()
    assert recalled["results"][0]["text"] == "Bruno plays chess."
    assert (await rest.get(f"{P}/{other}/documents/d1")).json()["tags"] == ["t"]
    # twice: skipped (the default); replace: the same again; new-id: a copy under a new id
    twice = await _done(
        rest, other, (await rest.post(f"{P}/{other}/document-transfer", files=up)).json()["operation_id"]
    )
    assert twice["result_metadata"]["documents_skipped"] == 2 and twice["result_metadata"]["documents_imported"] == 0
    sub = await rest.post(f"{P}/{other}/document-transfer", files=up, params={"on_conflict": "new-id"})
    renamed = await _done(rest, other, sub.json()["operation_id"])
    assert len(renamed["result_metadata"]["remapped_document_ids"]) == 2
    assert (await rest.get(f"{P}/{other}/documents")).json()["total"] == 4
    bad = await rest.post(f"{P}/{other}/document-transfer", files={"file": ("x.zip", b"not a zip", "application/zip")})
    assert bad.status_code == 422 and bad.json()["field"] == "file"
    assert (
        await rest.post(f"{P}/{other}/document-transfer", files=up, params={"on_conflict": "merge"})
    ).status_code == 422
    assert (await rest.get("/v1/default/files/download/banks/nope")).status_code == 404
    assert (await rest.get("/v1/default/files/download/elsewhere/x")).status_code == 404


async def test_llm_probe_offline(rest, bank):
    r = await rest.post(f"{P}/{bank}/health/llm")
    assert r.status_code == 200, r.text
    assert [(o["operation"], o["status"], o["ok"]) for o in r.json()["operations"]] == [
        ("retain", "not_configured", False),
        ("consolidation", "not_configured", False),
        ("reflect", "not_configured", False),
    ]
    dry = await rest.post(f"{P}/{bank}/memories/dry-run-extract", json={"content": "Ana lives in Porto."})
    assert dry.status_code == 409 and "no LLM" in dry.json()["message"]


async def test_refresh_dry_run_and_clear(rest, bank):
    await _retain(rest, bank, "Ana lives in Porto.")
    made = (await rest.post(f"{P}/{bank}/mental-models", json={"name": "Home", "source_query": "Where?"})).json()
    await _done(rest, bank, made["operation_id"])
    model = made["mental_model_id"]
    before = (await rest.get(f"{P}/{bank}/mental-models/{model}")).json()
    dry = (await rest.post(f"{P}/{bank}/mental-models/{model}/dry-run-refresh")).json()
    assert dry["current_content"] == before["content"] and dry["effective_mode"] == "full"
    assert dry["would_persist"] is (dry["candidate_content"] != before["content"]) and dry["scope"]["tags_match"]
    assert (await rest.get(f"{P}/{bank}/mental-models/{model}")).json() == before  # nothing written
    cleared = (await rest.post(f"{P}/{bank}/mental-models/{model}/clear")).json()
    assert cleared["content"] == "" and cleared["id"] == model
    history = (await rest.get(f"{P}/{bank}/mental-models/{model}/history")).json()
    assert history[0]["content"] == before["content"]  # kept in its history
    assert (await rest.post(f"{P}/{bank}/mental-models/nope/clear")).status_code == 404


async def test_readers_and_other_banks_change_nothing(app, rest, bank):
    """Every new route that writes, refused to a read-only key of the bank and to a key of another
    bank; reads refused to the other bank's key."""
    from hindsight.web.scope import PRINCIPAL

    await _retain(rest, bank, "Ana lives in Porto.", document_id="d1")
    op = (await rest.post(f"{P}/{bank}/memories", json={"items": [{"content": "x"}], "async": True})).json()
    await _done(rest, bank, op["operation_id"])
    memory_id = (await rest.get(f"{P}/{bank}/memories/list")).json()["items"][0]["id"]
    chunk_id = (await rest.get(f"{P}/{bank}/documents/d1/chunks")).json()["items"][0]["chunk_id"]
    files = {"files": ("a.txt", b"text", "text/plain")}
    writes = [
        ("PUT", "/profile", {"json": {"disposition": {"skepticism": 1, "literalism": 1, "empathy": 1}}}),
        ("POST", "/background", {"json": {"content": "x"}}),
        ("POST", "/import", {"json": {"version": "1", "bank": {"reflect_mission": "x"}}}),
        ("DELETE", "/memories", {}),
        ("DELETE", f"/memories/{memory_id}/observations", {}),
        ("DELETE", "/observations", {}),
        ("POST", "/consolidate", {}),
        ("POST", "/consolidation/recover", {}),
        ("PATCH", "/documents/d1", {"json": {"tags": ["x"]}}),
        ("POST", "/documents/d1/reprocess", {}),
        ("POST", "/mental-models/m/clear", {}),
        ("POST", f"/operations/{op['operation_id']}/retry", {}),
        ("DELETE", f"/operations/{op['operation_id']}/delete", {}),
        ("POST", "/files/retain", {"files": files}),
        ("POST", "/document-transfer/export", {}),
        ("POST", "/document-transfer", {"files": {"file": ("t.zip", b"PK", "application/zip")}}),
    ]
    reads = [
        ("GET", "/export", {}),
        ("GET", "/observations/scopes", {}),
        ("POST", "/health/llm", {}),
        ("POST", "/memories/dry-run-extract", {"json": {"content": "x"}}),
        ("POST", "/mental-models/m/dry-run-refresh", {}),
    ]
    reader = Principal("bank", key_id="reader", banks=frozenset({bank}), read_only=True)
    stranger = Principal("bank", key_id="stranger", banks=frozenset({bank + "_other"}))
    import httpx

    async def as_(who, method, path, kw):
        transport = httpx.ASGITransport(app=_with_principal(app, who, PRINCIPAL))
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
            return await c.request(method, f"{P}/{bank}{path}", **kw)

    for method, path, kw in writes:
        for who in (reader, stranger):
            r = await as_(who, method, path, kw)
            assert r.status_code == 403, (who.key_id, method, path, r.status_code, r.text)
    for method, path, kw in reads:
        r = await as_(stranger, method, path, kw)
        assert r.status_code == 403, (method, path, r.text)
    transport = httpx.ASGITransport(app=_with_principal(app, stranger, PRINCIPAL))
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1") as c:
        assert (await c.get(f"/v1/default/chunks/{chunk_id}")).status_code == 404  # not among its banks
    assert (await rest.get(f"{P}/{bank}/documents/d1")).json()["tags"] == []  # nothing changed


def _with_principal(app, who, key):
    """The app as a request authenticated as `who` reaches it (server/auth_first.py puts the
    principal in the scope before the body is read)."""

    async def wrapped(scope, receive, send):
        if scope["type"] == "http":
            scope = {**scope, key: who}
        await app(scope, receive, send)

    return wrapped
