"""Forget means forget: a memory asked to be forgotten (with the facts an LLM drew from it, its
edit history, its words, its entities, a mental model's summary quoting it, its retained
document's text) is found nowhere afterwards: not in any column of any table of the database,
before and after the VACUUM that follows, not in the planner's statistics, and not through any face
(recall, listings, history, export, mental models, retained documents, operations). Then the same
for a person forgotten by name, a purge of what is no longer true, a retained document, a bank,
and a bank's retention; and the rights: read-only keys cannot forget, and no id or name of another
bank reaches it. The app runs in process on a database of its own, with the stub LLM."""

from __future__ import annotations

import asyncio
import gzip
import json

import asyncpg
import httpx
import pytest

from hindsight.engine.access.keys import Principal

from conftest import fresh_database, llm_env, mcp_local, running_app
from support import tool_error

WORD = "zorblaxian"  # made up: in no dictionary, no stub answer, no other memory
EDITED = "quivernack"  # made up: only in the text an edit replaced (the history's)


@pytest.fixture(scope="module")
def forgetting_db(pg_url):
    return fresh_database(pg_url, "forgetting")


@pytest.fixture(scope="module")
async def llm_app(forgetting_db, stub):
    env = llm_env(stub, forgetting_db, erasure_vacuum_delay=0.2, retention_interval=1)
    async with running_app(env) as application:
        yield application


@pytest.fixture
async def api(llm_app):
    transport = httpx.ASGITransport(app=llm_app)
    async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60) as c:
        yield c


async def _ok(r: httpx.Response, status: int = 200) -> dict:
    assert r.status_code == status, r.text
    return r.json()


async def _until(check, timeout: float = 30.0):
    for _ in range(int(timeout / 0.1)):
        if value := await check():
            return value
        await asyncio.sleep(0.1)
    raise AssertionError("condition not met in time")


async def _operation_done(api, bank: str, op_id: str) -> dict:
    async def done():
        op = (await api.get(f"/v1/banks/{bank}/operations/{op_id}")).json()
        return op if op["status"] in ("succeeded", "failed", "cancelled") else None

    return await _until(done)


async def _where_is(url: str, word: str, stats: bool = False) -> list[str]:
    """Every table of the database holding `word` (any case), each row read as text: text, JSON,
    arrays, tsvectors alike; with `stats`, the planner's statistics of every column too (they
    change with the VACUUM an erasure is followed by, or the next ANALYZE)."""
    conn = await asyncpg.connect(url)
    try:
        found = []
        tables = [
            r[0]
            for r in await conn.fetch(
                "SELECT quote_ident(tablename) FROM pg_tables WHERE schemaname = current_schema() ORDER BY 1"
            )
        ]
        for t in tables:
            n = await conn.fetchval(f"SELECT count(*) FROM {t} x WHERE strpos(lower(x::text), $1) > 0", word)
            if n:
                found.append(f"{t}: {n} rows")
        if not stats:
            return found
        columns = await conn.fetch(
            "SELECT tablename, attname FROM pg_stats WHERE schemaname = current_schema() AND strpos(lower("
            "coalesce(most_common_vals::text, '') || coalesce(histogram_bounds::text, '') || "
            "coalesce(most_common_elems::text, '')), $1) > 0",
            word,
        )
        return found + [f"pg_stats {r['tablename']}.{r['attname']}" for r in columns]
    finally:
        await conn.close()


async def _analyze(url: str) -> None:
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("ANALYZE")
    finally:
        await conn.close()


async def _vacuumed(app, runs_before: int) -> None:
    """The VACUUM the erasure asked for has run (db/vacuum.py, 0.2 s after it here)."""

    async def ran():
        return app.engine.rt.vacuum.runs > runs_before

    await _until(ran)


async def _faces_say(api, bank: str, word: str) -> list[str]:
    """Every face a client reads the bank through, searched for `word`."""
    said = []
    checks = {
        "recall": ("POST", f"/v1/banks/{bank}/recall", {"query": f"{word} violin", "include_superseded": True}),
        "listing": ("GET", f"/v1/banks/{bank}/memories?limit=1000", None),
        "listing q": ("GET", f"/v1/banks/{bank}/memories?q={word}", None),
        "entities": ("GET", f"/v1/banks/{bank}/entities?limit=1000", None),
        "models": ("GET", f"/v1/banks/{bank}/mental-models", None),
        "operations": ("GET", f"/v1/banks/{bank}/operations?limit=500", None),
        "retained documents": ("GET", f"/v1/default/banks/{bank}/documents", None),
        "compat listing": ("GET", f"/v1/default/banks/{bank}/memories/list?limit=1000", None),
        "compat recall": ("POST", f"/v1/default/banks/{bank}/memories/recall", {"query": f"{word} violin"}),
    }
    for face, (method, path, body) in checks.items():
        r = await api.request(method, path, json=body)
        assert r.status_code == 200, (face, r.text)
        answer = r.json()
        if "recall" in face:  # what it found, not the query it echoes
            answer = answer["results"]
        if word in json.dumps(answer).lower():
            said.append(face)
    for m in (await api.get(f"/v1/banks/{bank}/mental-models")).json()["mental_models"]:
        r = await api.get(f"/v1/banks/{bank}/mental-models/{m['mental_model_id']}/history")
        if word in r.text.lower():
            said.append(f"model history {m['mental_model_id']}")
    r = await api.get(f"/v1/banks/{bank}/export")
    assert r.status_code == 200
    if word in gzip.decompress(r.content).decode().lower():
        said.append("export")
    return said


async def test_a_forgotten_memory_is_found_nowhere(llm_app, api, bank, forgetting_db):
    # a conversation retained under one document_id; the LLM (stub) extracts a fact a sentence
    items = [
        {
            "content": "Ulrike Zorblaxian keeps a green violin in Tromso.",
            "document_id": "conv-1",
            "tags": ["music"],
        },
        {"content": "Bob Hartley likes jazz on Fridays.", "document_id": "conv-1", "tags": ["music"]},
    ]
    retained = await _ok(await api.post(f"/v1/banks/{bank}/memories", json={"items": items}, params={"wait": True}))
    texts = {f: (await api.get(f"/v1/banks/{bank}/memories/{f}")).json()["text"] for f in retained["memory_ids"]}
    fact = next(f for f, text in texts.items() if WORD in text.lower())
    raw = (await _ok(await api.get(f"/v1/banks/{bank}/memories/{fact}/lineage")))["sources"][0]["id"]
    # edited once: its history now holds a text with a word of its own
    await _ok(
        await api.patch(
            f"/v1/banks/{bank}/memories/{fact}",
            json={"text": f"Ulrike Zorblaxian keeps a {EDITED.title()} violin in Tromso.", "reason": "typo"},
        )
    )
    await _ok(
        await api.patch(
            f"/v1/banks/{bank}/memories/{fact}",
            json={"text": "Ulrike Zorblaxian keeps a green violin in Tromso, in its case."},
        )
    )
    # a mental model drawn from it (the stub quotes the memories it cites)
    made = await _ok(
        await api.post(
            f"/v1/banks/{bank}/mental-models",
            json={"name": "Instruments", "source_query": "Which violin does Ulrike keep in Tromso?"},
        ),
        202,
    )
    model = made["mental_model_id"]
    assert (await _operation_done(api, bank, made["operation_id"]))["status"] == "succeeded"
    content = (await api.get(f"/v1/banks/{bank}/mental-models/{model}")).json()["content"]
    assert WORD in content.lower()
    await _analyze(forgetting_db)
    before = await _where_is(forgetting_db, WORD, stats=True)
    assert any(p.startswith("memories") for p in before) and any(p.startswith("bank_lexemes") for p in before)
    assert any(p.startswith("entities") for p in before) and any(p.startswith("pg_stats") for p in before)
    assert any(p.startswith("memory_versions") for p in await _where_is(forgetting_db, EDITED))

    # forgotten through the raw unit: the facts drawn from it go with it
    runs = llm_app.engine.rt.vacuum.runs
    gone = await _ok(await api.delete(f"/v1/banks/{bank}/memories/{raw}"))
    assert gone["deleted"] is True and gone["memory_id"] == raw
    assert set(gone["memory_ids"]) >= {raw, fact}
    assert gone["entities_removed"] >= 1  # Ulrike Zorblaxian was named nowhere else
    assert gone["retained_documents"] == ["conv-1"]
    assert gone["mental_models_stale"] == [model] and gone["mental_models_withdrawn"] == [model]
    assert gone["vacuum_within_seconds"] == 0.2

    # gone from every table at once (dead rows are not visible to SQL), and from the faces
    assert await _where_is(forgetting_db, WORD) == []
    assert await _where_is(forgetting_db, EDITED) == []
    assert await _faces_say(api, bank, WORD) == []
    assert (await api.get(f"/v1/banks/{bank}/memories/{fact}/history")).status_code == 404
    # what else was in the bank stays: the other item, its fact, and the document's text without the forgotten part
    assert any("jazz" in m["text"] for m in (await api.get(f"/v1/banks/{bank}/memories")).json()["memories"])
    doc = (await api.get(f"/v1/default/banks/{bank}/documents/conv-1")).json()
    assert "jazz" in doc["original_text"] and WORD not in doc["original_text"].lower()
    # the model: its quoting content withdrawn now, stale until a refresh that no longer sees the memory
    m = (await api.get(f"/v1/banks/{bank}/mental-models/{model}")).json()
    assert m["stale"] is True or m["content"] is None or WORD not in (m["content"] or "").lower()

    async def refreshed():
        m = (await api.get(f"/v1/banks/{bank}/mental-models/{model}")).json()
        return m if not m["stale"] and m["content"] else None

    m = await refreshed() or await _until(refreshed)
    assert WORD not in m["content"].lower() and fact not in m["based_on"].get("memories", [])

    # after the VACUUM that followed: not in the planner's statistics either
    await _vacuumed(llm_app, runs)
    assert await _where_is(forgetting_db, WORD, stats=True) == []
    assert await _where_is(forgetting_db, EDITED, stats=True) == []
    assert await _faces_say(api, bank, WORD) == []


async def test_forgetting_a_fact_keeps_its_source_unless_asked(api, bank, forgetting_db):
    items = [{"content": "Mira Stellwood owns a quokkafin sailboat. She sails it in June."}]
    retained = await _ok(await api.post(f"/v1/banks/{bank}/memories", json={"items": items}, params={"wait": True}))
    fact = retained["memory_ids"][0]
    raw = (await api.get(f"/v1/banks/{bank}/memories/{fact}/lineage")).json()["sources"][0]["id"]
    # a dry run says what would go, and changes nothing
    dry = await _ok(await api.delete(f"/v1/banks/{bank}/memories/{fact}", params={"dry_run": True}))
    assert dry["dry_run"] is True and dry["deleted"] is False and dry["memory_ids"] == [fact]
    assert dry["sources_kept"] == [raw] and [c["why"] for c in dry["would_forget"]] == ["memory"]
    assert (await api.get(f"/v1/banks/{bank}/memories/{fact}")).status_code == 200
    # forgotten alone, the fact's raw unit keeps its text, says so, and is back in recall
    gone = await _ok(await api.delete(f"/v1/banks/{bank}/memories/{fact}"))
    assert gone["sources_kept"] == [raw]
    others = gone["memory_ids"]
    assert fact in others and raw not in others
    # with include_sources, the raw text goes too, with every fact drawn from it
    gone = await _ok(await api.delete(f"/v1/banks/{bank}/memories/{raw}", params={"include_sources": True}))
    assert raw in gone["memory_ids"] and gone["sources_kept"] == []
    assert await _where_is(forgetting_db, "quokkafin") == []


async def test_forget_everything_about_a_person(api, bank, forgetting_db):
    items = [
        {"content": "Penelope Grimsditch runs the bakery on Elm Street."},
        {"content": "On Monday Penelope Grimsditch visited her sister."},
        {"content": "the parcel for penelope grimsditch came late."},  # named, in lower case: no link
        {"content": "Oscar Whitfield repairs clocks."},
    ]
    await _ok(await api.post(f"/v1/banks/{bank}/memories", json={"items": items}, params={"wait": True}))
    dry = await _ok(
        await api.post(f"/v1/banks/{bank}/entities/forget", json={"name": "Penelope Grimsditch", "dry_run": True})
    )
    assert dry["dry_run"] and dry["memories"] == len(dry["would_forget"]) >= 3
    texts = " ".join(c["text"] for c in dry["would_forget"]).lower()
    assert "bakery" in texts and "sister" in texts and "parcel" in texts and "clocks" not in texts
    assert {c["why"] for c in dry["would_forget"]} >= {"linked", "named"}
    assert "grimsditch" in (await api.get(f"/v1/banks/{bank}/entities?q=grimsditch")).text.lower()

    gone = await _ok(await api.post(f"/v1/banks/{bank}/entities/forget", json={"name": "penelope grimsditch"}))
    assert gone["memories"] >= dry["memories"] and gone["entities_removed"] >= 1
    assert await _where_is(forgetting_db, "grimsditch") == []
    left = (await api.get(f"/v1/banks/{bank}/memories")).json()["memories"]
    assert left and all("clocks" in m["text"] for m in left)
    # again: nothing left to forget, and that is not an error
    again = await _ok(await api.post(f"/v1/banks/{bank}/entities/forget", json={"name": "Penelope Grimsditch"}))
    assert again["memories"] == 0


async def test_purge_what_is_no_longer_true(api, bank, forgetting_db):
    first = await _ok(await api.post(f"/v1/banks/{bank}/memories", json={"content": "Ivo Brant lives in Gdansk."}))
    old = first["memory_ids"][0]
    newer = await _ok(
        await api.post(
            f"/v1/banks/{bank}/memories",
            json={"content": "Ivo Brant moved to Krakow.", "supersedes": [old], "timestamp": "2030-01-01T00:00:00Z"},
        )
    )
    wrong = (
        await _ok(await api.post(f"/v1/banks/{bank}/memories", json={"content": "Ivo Brant hates snorvelberries."}))
    )["memory_ids"][0]
    await _ok(await api.post(f"/v1/banks/{bank}/memories/{wrong}/invalidate", json={"reason": "a guess"}))
    dry = await _ok(await api.post(f"/v1/banks/{bank}/memories/purge", json={"dry_run": True, "superseded": False}))
    assert [c["id"] for c in dry["would_forget"]] == [wrong] and dry["would_forget"][0]["why"] == "invalidated"
    gone = await _ok(await api.post(f"/v1/banks/{bank}/memories/purge", json={"superseded": False}))
    assert wrong in gone["memory_ids"]
    assert await _where_is(forgetting_db, "snorvelberr") == []
    assert (await api.get(f"/v1/banks/{bank}/memories/{wrong}/history")).status_code == 404
    # nothing to purge: invalidated=false and superseded=false is refused
    r = await api.post(f"/v1/banks/{bank}/memories/purge", json={"invalidated": False, "superseded": False})
    assert r.status_code == 422 and "nothing to purge" in r.json()["message"]
    assert newer["memory_ids"]


async def test_forget_a_retained_document_and_a_bank(api, bank, forgetting_db):
    items = [
        {"content": "Tamsin Fairweather spoke about the glimmerwick lantern.", "document_id": "call-7"},
        {"content": "Tamsin Fairweather will call back on Tuesday.", "document_id": "call-7"},
    ]
    await _ok(await api.post(f"/v1/banks/{bank}/memories", json={"items": items}, params={"wait": True}))
    dry = await _ok(
        await api.post(f"/v1/banks/{bank}/memories/forget-document", json={"document_id": "call-7", "dry_run": True})
    )
    assert dry["memories"] >= 2 and dry["retained_documents"] == ["call-7"]
    gone = await _ok(await api.post(f"/v1/banks/{bank}/memories/forget-document", json={"document_id": "call-7"}))
    assert gone["memories"] == dry["memories"] and gone["retained_documents"] == ["call-7"]
    assert (await api.get(f"/v1/default/banks/{bank}/documents/call-7")).status_code == 404
    assert await _where_is(forgetting_db, "glimmerwick") == []
    r = await api.post(f"/v1/banks/{bank}/memories/forget-document", json={"document_id": "call-7"})
    assert r.status_code == 404
    # a whole bank: every row of it goes (its audit records stay: they hold no content)
    await _ok(await api.post(f"/v1/banks/{bank}/memories", json={"content": "Wendell Oakshott brews mirthwort tea."}))
    await _ok(await api.delete(f"/v1/banks/{bank}"))
    assert await _where_is(forgetting_db, "mirthwort") == []
    assert await _where_is(forgetting_db, "oakshott") == []


async def test_compat_faces_forget(api, bank, forgetting_db):
    r = await _ok(
        await api.post(
            f"/v1/default/banks/{bank}/memories",
            json={"items": [{"content": "Gideon Marsh collects brasswhistle kites.", "document_id": "d1"}]},
        )
    )
    assert r["success"]
    listed = (await api.get(f"/v1/default/banks/{bank}/memories/list")).json()["items"]
    one = listed[0]["id"]
    assert (await _ok(await api.delete(f"/v1/default/banks/{bank}/memories/{one}")))["deleted_count"] >= 1
    await _ok(await api.post(f"/v1/default/banks/{bank}/memories", json={"items": [{"content": "Gideon likes tea."}]}))
    cleared = await _ok(await api.delete(f"/v1/default/banks/{bank}/memories"))
    assert cleared["success"] and cleared["deleted_count"] >= 1
    assert (await api.get(f"/v1/banks/{bank}/memories")).json()["total"] == 0
    assert await _where_is(forgetting_db, "brasswhistle") == []
    assert (await _ok(await api.delete(f"/v1/default/banks/{bank}/memories", params={"type": "observation"})))[
        "deleted_count"
    ] == 0


async def test_retention_forgets_what_is_too_old(llm_app, api, bank, forgetting_db):
    items = [
        {"content": "Old note about the frubbleton ledger.", "tags": ["chat"]},
        {"content": "Old note kept for the archive.", "tags": ["archive"]},
        {"content": "Old untagged note."},
        {"content": "A new note about the frubbleton ledger.", "tags": ["chat"]},
    ]
    await _ok(await api.post(f"/v1/banks/{bank}/memories", json={"items": items}, params={"wait": True}))
    conn = await asyncpg.connect(forgetting_db)
    try:  # three of them (their raw units and facts) were stored 40 days ago
        await conn.execute(
            "UPDATE memories SET created_at = now() - interval '40 days' WHERE bank_id = $1 AND text LIKE 'Old%'", bank
        )
    finally:
        await conn.close()

    async def texts() -> set[str]:
        return {m["text"] for m in (await api.get(f"/v1/banks/{bank}/memories")).json()["memories"]}

    assert len(await texts()) == 4
    # kept 60 days, and 30 for what is tagged chat: the old chat note is due (the sweep runs every second here)
    settings = await _ok(
        await api.patch(f"/v1/banks/{bank}", json={"retention_days": 60, "retention_by_tag": {"chat": 30}})
    )
    assert settings["retention_days"] == 60 and settings["retention_by_tag"] == {"chat": 30}

    async def swept():
        left = await texts()
        return left if "Old note about the frubbleton ledger." not in left else None

    assert await _until(swept) == {
        "Old note kept for the archive.",
        "Old untagged note.",
        "A new note about the frubbleton ledger.",
    }

    # the sweep is on the record, as the scheduler's
    async def recorded():
        logs = (await api.get(f"/v1/banks/{bank}/audit-logs", params={"transport": "system"})).json()
        return logs if logs["items"] else None

    entry = (await _until(recorded))["items"][0]
    assert entry["action"] == "retention" and entry["principal"] == "scheduler" and entry["transport"] == "system"
    assert entry["detail"]["memories_forgotten"] >= 1
    # a shorter bank-wide retention takes the rest that are old, whatever their tags
    await _ok(await api.patch(f"/v1/banks/{bank}", json={"retention_days": 10, "retention_by_tag": {}}))

    async def swept_again():
        left = await texts()
        return left if len(left) == 1 else None

    assert await _until(swept_again) == {"A new note about the frubbleton ledger."}
    # 0 turns it off; out-of-range values are refused
    off = await _ok(await api.patch(f"/v1/banks/{bank}", json={"retention_days": 0}))
    assert off["retention_days"] is None
    for bad in ({"retention_days": -1}, {"retention_by_tag": {"chat": 0}}, {"retention_by_tag": ["chat"]}):
        r = await api.patch(f"/v1/banks/{bank}", json=bad)
        assert r.status_code == 422, (bad, r.text)


async def test_read_only_keys_and_other_banks_cannot_forget(llm_app, api, bank, forgetting_db):
    mine, theirs = bank + "_a", bank + "_b"
    for b in (mine, theirs):
        await _ok(
            await api.post(
                f"/v1/banks/{b}/memories",
                json={"content": "Hedda Vollmer paints with sprockwillow ink.", "document_id": f"doc-{b}"},
                params={"wait": True},
            )
        )
    their_memory = (await api.get(f"/v1/banks/{theirs}/memories")).json()["memories"][0]["id"]

    async def snapshot():
        conn = await asyncpg.connect(forgetting_db)
        try:
            return [
                tuple(r)
                for r in await conn.fetch(
                    "SELECT bank_id, count(*) FROM memories WHERE bank_id = ANY($1::text[]) GROUP BY 1 ORDER BY 1",
                    [mine, theirs],
                )
            ] + [
                tuple(r)
                for r in await conn.fetch(
                    "SELECT bank_id, count(*) FROM entities WHERE bank_id = ANY($1::text[]) GROUP BY 1 ORDER BY 1",
                    [mine, theirs],
                )
            ]
        finally:
            await conn.close()

    before = await snapshot()
    # another bank's memory id through this bank's URL: not found, on every face
    r = await api.delete(f"/v1/banks/{mine}/memories/{their_memory}", params={"include_sources": True})
    assert r.status_code == 404
    r = await api.delete(f"/v1/banks/{mine}/memories/{their_memory}", params={"dry_run": True})
    assert r.status_code == 404
    r = await api.delete(f"/v1/default/banks/{mine}/memories/{their_memory}")
    assert r.status_code == 404
    r = await api.post(f"/v1/banks/{mine}/memories/forget-document", json={"document_id": f"doc-{theirs}"})
    assert r.status_code == 404
    reader = Principal("bank", key_id="ro", banks=frozenset({mine, theirs}), read_only=True)
    scoped = Principal("bank", key_id="k", banks=frozenset({mine}))
    async with mcp_local(llm_app, bank=mine, who=scoped) as client:
        missing = tool_error(await client.call_tool("forget_memory", {"memory_id": their_memory}))
        assert missing["error"] == "not_found" and "does not exist" in missing["message"]
        tool_error(await client.call_tool("forget_retained_document", {"document_id": f"doc-{theirs}"}))
    async with mcp_local(llm_app, multi=True, who=scoped, header_bank=mine) as client:
        for tool, args in (
            ("forget_memory", {"memory_id": their_memory}),
            ("forget_entity", {"name": "Hedda Vollmer"}),
            ("purge_memories", {}),
            ("forget_retained_document", {"document_id": f"doc-{theirs}"}),
        ):
            refused = tool_error(await client.call_tool(tool, {**args, "bank_id": theirs}))
            assert refused["error"] == "forbidden", (tool, refused)
    # a read-only key forgets nothing, not even in a dry run, whatever the face
    async with mcp_local(llm_app, bank=theirs, who=reader) as client:
        for tool, args in (
            ("forget_memory", {"memory_id": their_memory}),
            ("forget_memory", {"memory_id": their_memory, "dry_run": True}),
            ("forget_entity", {"name": "Hedda Vollmer", "dry_run": True}),
            ("purge_memories", {}),
            ("forget_retained_document", {"document_id": f"doc-{theirs}"}),
        ):
            refused = tool_error(await client.call_tool(tool, args))
            assert refused["error"] == "forbidden" and "only read" in refused["message"], (tool, refused)
    assert await snapshot() == before
    # forgetting the name in one bank leaves the other bank's memories of it
    theirs_before = (await api.get(f"/v1/banks/{theirs}/memories")).json()["total"]
    gone = await _ok(await api.post(f"/v1/banks/{mine}/entities/forget", json={"name": "Hedda Vollmer"}))
    assert gone["memories"] >= 1 and (await api.get(f"/v1/banks/{mine}/memories")).json()["total"] == 0
    assert (await api.get(f"/v1/banks/{theirs}/memories")).json()["total"] == theirs_before


async def test_finished_retains_keep_no_text(api, bank, forgetting_db):
    r = await _ok(
        await api.post(
            f"/v1/default/banks/{bank}/memories",
            json={"items": [{"content": "Lars Tegner keeps plomquist seeds."}], "async": True},
        )
    )
    op = r["operation_id"]
    assert (await _operation_done(api, bank, op))["status"] == "succeeded"
    payload = (await api.get(f"/v1/banks/{bank}/operations/{op}")).json()["payload"]
    assert payload["item_count"] == 1 and "items" not in payload
    compat = (await api.get(f"/v1/default/banks/{bank}/operations/{op}")).json()
    assert "plomquist" not in json.dumps(compat)
    assert [p for p in await _where_is(forgetting_db, "plomquist") if p.startswith("operations")] == []


@pytest.fixture(scope="module")
def full_db(pg_url):
    return fresh_database(pg_url, "forgetting_full")


async def _in_data_files(url: str, needle: bytes) -> list[str]:
    """Every page of every table, TOAST table and index of the schema, and of the statistics'
    table, read raw (pageinspect), that holds `needle`: what SQL cannot see, a dead row's bytes
    included."""
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("CREATE EXTENSION IF NOT EXISTS pageinspect")
        relations = await conn.fetch(
            "SELECT c.oid::regclass::text AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace "
            "WHERE c.relkind IN ('r', 'i', 't', 'm') AND pg_relation_size(c.oid) > 0 AND (n.nspname IN "
            "(current_schema(), 'pg_toast') OR c.oid = 'pg_catalog.pg_statistic'::regclass) ORDER BY 1"
        )
        found = []
        for r in relations:
            n = await conn.fetchval(
                "SELECT count(*) FROM generate_series(0, (pg_relation_size($1::regclass) / 8192)::int - 1) b "
                "WHERE position($2::bytea IN get_raw_page($1::text, b)) > 0",
                r["name"],
                needle,
            )
            if n:
                found.append(f"{r['name']}: {n} pages")
        return found
    finally:
        await conn.close()


async def test_vacuum_full_leaves_no_bytes_in_the_data_files(full_db):
    """Plain VACUUM leaves a removed row's bytes in its page's free space until written over (what
    docs/privacy.md says); with HINDSIGHT_API_ERASURE_VACUUM_FULL the tables are rewritten and no
    page of any table, index or the statistics holds them."""
    env = {
        "HINDSIGHT_API_DATABASE_URL": full_db,
        "HINDSIGHT_API_ERASURE_VACUUM_DELAY": "0.1",
        "HINDSIGHT_API_ERASURE_VACUUM_FULL": "true",
    }
    async with running_app(env) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://127.0.0.1", timeout=60) as api:
            bank = "t_full"
            r = await api.post(
                f"/v1/banks/{bank}/memories",
                json={"items": [{"content": "Keep: Rosalind Yarrowby sings.", "document_id": "kept"}]},
            )
            await _ok(r)
            r = await api.post(
                f"/v1/banks/{bank}/memories",
                json={"content": "Rosalind Yarrowby hides the wexlingford key.", "document_id": "d", "tags": ["t"]},
            )
            secret = (await _ok(r))["memory_ids"][0]
            await _analyze(full_db)
            assert await _in_data_files(full_db, b"wexlingford")
            runs = app.engine.rt.vacuum.runs
            await _ok(await api.delete(f"/v1/banks/{bank}/memories/{secret}"))
            await _vacuumed(app, runs)
            assert await _in_data_files(full_db, b"wexlingford") == []
            assert await _where_is(full_db, "wexlingford", stats=True) == []
            # what was not forgotten is all there
            assert "Keep: Rosalind Yarrowby sings." in (await api.get(f"/v1/banks/{bank}/memories")).text
