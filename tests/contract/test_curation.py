"""Memory that stays true, without an LLM: edit, invalidate, restore and supersede one memory, its
history, and recall of what is true now or was true then, on REST (ours and /v1/default) and MCP,
in process on the real database."""

from __future__ import annotations

from hindsight.engine.access.keys import Principal

from conftest import mcp_local
from support import tool_error


async def retain(rest, bank, **item) -> str:
    r = await rest.post(f"/v1/banks/{bank}/memories", json=item)
    assert r.status_code == 200, r.text
    return r.json()["memory_ids"][0]


async def recall(rest, bank, query, **kw) -> list[dict]:
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": query, **kw})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def texts(results: list[dict]) -> list[str]:
    return [m["text"] for m in results]


async def test_moving_city_twice_recall_now_as_of_and_the_chain(rest, bank):
    lisbon = await retain(rest, bank, content="Alice lives in Lisbon.", timestamp="2021-03-01T10:00:00Z")
    porto = await retain(
        rest, bank, content="Alice moved to Porto.", timestamp="2023-06-01T10:00:00Z", supersedes=[lisbon]
    )
    await retain(rest, bank, content="Alice moved to Madrid.", timestamp="2025-01-15T10:00:00Z", supersedes=[porto])
    now = texts(await recall(rest, bank, "Where does Alice live?"))
    assert now == ["Alice moved to Madrid."]
    then = texts(await recall(rest, bank, "Where does Alice live?", as_of="2022-01-01T00:00:00Z"))
    assert then == ["Alice lives in Lisbon."]
    mid = texts(await recall(rest, bank, "Where does Alice live?", as_of="2024-01-01T00:00:00Z"))
    assert mid == ["Alice moved to Porto."]
    before_all = await recall(rest, bank, "Where does Alice live?", as_of="2020-01-01T00:00:00Z")
    assert before_all == []
    chain = {m["text"]: m for m in await recall(rest, bank, "Where does Alice live?", include_superseded=True)}
    assert len(chain) == 3
    assert chain["Alice lives in Lisbon."]["superseded_by"] == porto
    assert chain["Alice lives in Lisbon."]["valid_to"].startswith("2023-06-01")
    assert chain["Alice moved to Porto."]["valid_to"].startswith("2025-01-15")
    assert chain["Alice moved to Madrid."]["valid_to"] is None
    assert chain["Alice moved to Madrid."]["valid_from"].startswith("2025-01-15")

    history = (await rest.get(f"/v1/banks/{bank}/memories/{lisbon}/history")).json()
    assert [v["action"] for v in history["versions"]] == ["created", "superseded"]
    assert history["versions"][1]["changes"]["superseded_by"] == [None, porto]
    assert history["versions"][1]["actor"] == "open"
    assert (await rest.get(f"/v1/banks/{bank}/memories/{porto}/history")).json()["supersedes"] == [lisbon]

    # restoring a superseded memory undoes the supersession
    r = await rest.patch(f"/v1/banks/{bank}/memories/{lisbon}", json={"state": "valid", "reason": "mistake"})
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["superseded_by"] is None and r.json()["memory"]["valid_to"] is None
    assert "Alice lives in Lisbon." in texts(await recall(rest, bank, "Where does Alice live?"))


async def test_a_retracted_wrong_guess_edit_and_history(rest, bank):
    guess = await retain(rest, bank, content="Bob is allergic to peanuts.", tags=["health"])
    other = await retain(rest, bank, content="Bob likes hiking in the Alps.")
    r = await rest.post(f"/v1/banks/{bank}/memories/{guess}/invalidate", json={"reason": "a guess, never said"})
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["invalidated_at"] and r.json()["changed"] == ["state"]
    assert guess not in [m["id"] for m in await recall(rest, bank, "Is Bob allergic to peanuts?")]
    assert guess not in [m["id"] for m in await recall(rest, bank, "peanuts", include_superseded=True)]
    # still stored, and listed, for audit
    assert (await rest.get(f"/v1/banks/{bank}/memories/{guess}")).json()["invalidation_reason"] == "a guess, never said"
    # invalidating again changes nothing and records nothing
    again = await rest.post(f"/v1/banks/{bank}/memories/{guess}/invalidate")
    assert again.status_code == 200 and again.json()["version"] is None
    # revert
    r = await rest.patch(f"/v1/banks/{bank}/memories/{guess}", json={"state": "valid"})
    assert r.json()["memory"]["invalidated_at"] is None
    assert guess in [m["id"] for m in await recall(rest, bank, "Is Bob allergic to peanuts?")]
    # edit: text re-embedded and re-indexed, entities re-linked, tags replaced
    r = await rest.patch(
        f"/v1/banks/{bank}/memories/{guess}",
        json={"text": "Bob is allergic to shellfish.", "tags": ["health", "food"], "reason": "he said shellfish"},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["changed"] == ["tags", "text"] and body["memory"]["text"] == "Bob is allergic to shellfish."
    assert body["memory"]["entities"] == ["Bob"]
    found = await recall(rest, bank, "shellfish", mode="keyword")
    assert [m["id"] for m in found] == [guess]
    assert await recall(rest, bank, "peanuts", mode="keyword") == []
    assert other not in [m["id"] for m in found]
    history = (await rest.get(f"/v1/banks/{bank}/memories/{guess}/history")).json()
    assert [v["action"] for v in history["versions"]] == ["created", "invalidated", "restored", "edited"]
    assert [v["text"] for v in history["versions"]] == [
        "Bob is allergic to peanuts.",
        "Bob is allergic to peanuts.",
        "Bob is allergic to peanuts.",
        "Bob is allergic to shellfish.",
    ]
    assert history["versions"][1]["reason"] == "a guess, never said"
    assert history["versions"][3]["changes"]["text"] == ["Bob is allergic to peanuts.", "Bob is allergic to shellfish."]
    # entities: given names replace the linked ones
    r = await rest.patch(f"/v1/banks/{bank}/memories/{guess}", json={"entities": ["Robert Smith"]})
    assert r.json()["memory"]["entities"] == ["Robert Smith"]
    ents = {e["name"] for e in (await rest.get(f"/v1/banks/{bank}/entities")).json()["entities"]}
    assert "Robert Smith" in ents


async def test_bad_edits_are_refused_and_change_nothing(rest, bank):
    mid = await retain(rest, bank, content="Carol works at Acme.", timestamp="2024-01-01T00:00:00Z")
    before = (await rest.get(f"/v1/banks/{bank}/memories/{mid}")).json()
    bad = [
        ({}, "nothing to change"),
        ({"reason": "only a reason"}, "nothing to change"),
        ({"text": ""}, "text"),
        ({"text": "   "}, "text"),
        ({"text": "a\u0000b"}, "text"),
        ({"tags": "notalist"}, "tags"),
        ({"state": "deleted"}, "state"),
        ({"type": "observation"}, "type"),
        ({"valid_to": "2000-01-01T00:00:00Z"}, "valid_to"),
        ({"occurred_start": "2024-05-02T00:00:00Z", "occurred_end": "2024-05-01T00:00:00Z"}, "occurred_end"),
        ({"valid_from": "0001-01-01T00:00:00+14:00"}, "valid_from"),
        ({"entities": [""]}, "entities"),
        ({"text": "x" * 10_001}, "text"),
        ({"reason": "r" * 1_001, "state": "invalidated"}, "reason"),
        ({"superseded_by": "x"}, "superseded_by"),
    ]
    for body, field in bad:
        r = await rest.patch(f"/v1/banks/{bank}/memories/{mid}", json=body)
        assert r.status_code == 422, (body, r.status_code, r.text)
        assert field in r.text, (body, r.text)
    for wrong in ("not-a-uuid", "00000000-0000-4000-8000-000000000000"):
        r = await rest.patch(f"/v1/banks/{bank}/memories/{wrong}", json={"text": "x"})
        assert r.status_code in (404, 422) and r.json()["error"] in ("not_found", "invalid_argument")
        assert (await rest.get(f"/v1/banks/{bank}/memories/{wrong}/history")).status_code in (404, 422)
    # a retain naming a memory that is not the bank's is refused whole
    r = await rest.post(
        f"/v1/banks/{bank}/memories",
        json={"content": "Carol joined Globex.", "supersedes": ["00000000-0000-4000-8000-000000000000"]},
    )
    assert r.status_code == 422 and "supersedes" in r.text
    r = await rest.post(f"/v1/banks/{bank}/memories", json={"content": "Carol joined Globex.", "supersedes": mid})
    assert r.status_code == 422 and "supersedes" in r.text
    r = await rest.post(f"/v1/banks/{bank}/memories", json={"content": "Carol joined Globex.", "supersedes": ["x"]})
    assert r.status_code == 422 and "supersedes" in r.text
    assert (await rest.get(f"/v1/banks/{bank}/memories")).json()["total"] == 1
    assert (await rest.get(f"/v1/banks/{bank}/memories/{mid}")).json() == before


async def test_hindsight_shaped_update_and_history(rest, bank):
    mid = await retain(rest, bank, content="Dana prefers tea.")
    base = f"/v1/default/banks/{bank}/memories/{mid}"
    r = await rest.patch(
        base, json={"text": "Dana prefers coffee.", "fact_type": "world", "reason": "changed her mind"}
    )
    assert r.status_code == 200, r.text
    assert r.json()["text"] == "Dana prefers coffee." and r.json()["state"] == "valid"
    r = await rest.patch(base, json={"state": "invalidated", "reason": "test"})
    assert r.json()["state"] == "invalidated" and r.json()["reason"] == "test"
    r = await rest.patch(base, json={"state": "valid", "entities": ["Dana"], "resolve_entities": False})
    assert r.json()["state"] == "valid" and r.json()["entities"] == ["Dana"]
    history = (await rest.get(base + "/history")).json()["history"]
    assert [v["action"] for v in history] == ["created", "edited", "invalidated", "restored"]
    assert (await rest.get(base)).json()["history"] == history
    assert (await rest.patch(base, json={"state": "gone"})).status_code == 422


async def test_mcp_update_and_invalidate_and_read_only_keys(app, rest, bank):
    mid = await retain(rest, bank, content="Erin drives a red car.")
    async with mcp_local(app, bank=bank) as client:
        names = {t.name for t in (await client.list_tools()).tools}
        assert {"update_memory", "invalidate_memory"} <= names
        r = await client.call_tool(
            "update_memory", {"memory_id": mid, "text": "Erin drives a blue car.", "reason": "fix"}
        )
        assert r.structured_content["memory"]["text"] == "Erin drives a blue car."
        r = await client.call_tool("invalidate_memory", {"memory_id": mid, "reason": "sold it"})
        assert r.structured_content["memory"]["invalidation_reason"] == "sold it"
        for args in ({"memory_id": mid}, {"memory_id": mid, "state": "nope"}, {"text": "no id"}):
            e = tool_error(await client.call_tool("update_memory", args))
            assert e["error"] == "invalid_argument"
        e = tool_error(
            await client.call_tool("invalidate_memory", {"memory_id": "00000000-0000-4000-8000-000000000000"})
        )
        assert e["error"] == "not_found" and "does not exist" in e["message"]
    reader = Principal("bank", key_id="reader", banks=frozenset({bank}), read_only=True)
    async with mcp_local(app, bank=bank, who=reader) as client:
        for tool, args in (
            ("update_memory", {"memory_id": mid, "state": "valid"}),
            ("invalidate_memory", {"memory_id": mid}),
        ):
            e = tool_error(await client.call_tool(tool, args))
            assert "may only read" in e["message"]
    history = (await rest.get(f"/v1/banks/{bank}/memories/{mid}/history")).json()
    assert [v["action"] for v in history["versions"]] == ["created", "edited", "invalidated"]


async def test_a_model_drawing_from_a_changed_memory_goes_stale(app, rest, bank):
    """The sweep's rule, read from the database: a model whose based_on names a memory changed
    after its watermark is queued for a refresh."""
    from hindsight.engine.reflection.mental_models import sweep_stale_models

    mid = await retain(rest, bank, content="Frank lives in Oslo.")
    async with app.engine.rt.pool.acquire() as conn:
        await conn.execute(
            "INSERT INTO mental_models (bank_id, id, name, source_query, content, based_on, watermark, status)"
            " VALUES ($1, 'home', 'Home', 'Where does Frank live?', 'Oslo', $2::jsonb, now(), 'ready')",
            bank,
            f'{{"memories": ["{mid}"]}}',
        )
    await sweep_stale_models(app.engine.rt)
    async with app.engine.rt.pool.acquire() as conn:
        queued = await conn.fetchval(
            "SELECT count(*) FROM operations WHERE bank_id = $1 AND payload->>'mental_model_id' = 'home'", bank
        )
    assert queued == 0
    await rest.post(f"/v1/banks/{bank}/memories/{mid}/invalidate", json={"reason": "moved"})
    await sweep_stale_models(app.engine.rt)
    async with app.engine.rt.pool.acquire() as conn:
        reasons = await conn.fetch(
            "SELECT payload->>'reason' AS r FROM operations WHERE bank_id = $1 AND payload->>'mental_model_id' = 'home'",
            bank,
        )
    assert [r["r"] for r in reasons] == ["memories changed"]


async def _export(rest, bank: str) -> list[dict]:
    import gzip
    import json

    r = await rest.get(f"/v1/banks/{bank}/export")
    assert r.status_code == 200, r.text
    return [json.loads(line) for line in gzip.decompress(r.content).decode().splitlines()]


async def _import(rest, bank: str, lines: list[dict]) -> dict:
    import gzip
    import json

    data = gzip.compress("".join(json.dumps(line) + "\n" for line in lines).encode())
    r = await rest.post(f"/v1/banks/{bank}/import", content=data, headers={"Content-Type": "application/gzip"})
    assert r.status_code == 200, r.text
    return r.json()


async def test_export_import_keeps_the_chain_and_the_history_within_the_bank(rest, bank):
    old = await retain(rest, bank, content="Gina works at Initech.", timestamp="2020-01-01T00:00:00Z")
    new = await retain(rest, bank, content="Gina joined Hooli.", timestamp="2022-01-01T00:00:00Z", supersedes=[old])
    await rest.patch(f"/v1/banks/{bank}/memories/{new}", json={"text": "Gina joined Hooli as a designer."})
    wrong = await retain(rest, bank, content="Gina has three cats.")
    await rest.post(f"/v1/banks/{bank}/memories/{wrong}/invalidate", json={"reason": "two"})
    lines = await _export(rest, bank)
    assert lines[0]["version"] == 3 and lines[-1]["counts"]["memory_version"] == 3
    copy = bank + "_copy"  # same server: every id is renumbered
    assert (await _import(rest, copy, lines))["imported"]["memory_version"] == 3
    now = await recall(rest, copy, "Where does Gina work?")
    assert texts(now) == ["Gina joined Hooli as a designer."]
    chain = {m["text"]: m for m in await recall(rest, copy, "Where does Gina work?", include_superseded=True)}
    assert chain["Gina works at Initech."]["superseded_by"] == now[0]["id"] != new
    history = (await rest.get(f"/v1/banks/{copy}/memories/{now[0]['id']}/history")).json()
    assert [v["action"] for v in history["versions"]] == ["created", "edited"]
    assert await recall(rest, copy, "How many cats does Gina have?") == [] or all(
        "cats" not in m["text"] for m in await recall(rest, copy, "How many cats does Gina have?")
    )

    # a file whose memory names another bank's memory as its successor: linked to nothing
    victim = await retain(rest, bank + "_victim", content="Hal lives in Oslo.")
    row = next(line["row"] for line in lines if line["kind"] == "memory" and line["row"]["id"] == old)
    forged = [
        lines[0],
        {"kind": "memory", "row": {**row, "id": "00000000-0000-4000-8000-0000000000aa", "superseded_by": victim}},
        {"kind": "end", "counts": {"memory": 1}},
    ]
    target = bank + "_forged"
    await _import(rest, target, forged)
    got = (await rest.get(f"/v1/banks/{target}/memories/00000000-0000-4000-8000-0000000000aa")).json()
    assert got["superseded_by"] is None
    assert (await rest.get(f"/v1/banks/{bank}_victim/memories/{victim}/history")).json()["supersedes"] == []


async def test_what_a_retracted_or_deleted_successor_replaced_stands_again(rest, bank):
    old = await retain(rest, bank, content="Ike lives in Bern.", timestamp="2020-01-01T00:00:00Z")
    wrong = await retain(rest, bank, content="Ike moved to Basel.", timestamp="2022-01-01T00:00:00Z", supersedes=[old])
    assert texts(await recall(rest, bank, "Where does Ike live?")) == ["Ike moved to Basel."]
    await rest.post(f"/v1/banks/{bank}/memories/{wrong}/invalidate", json={"reason": "misheard"})
    assert texts(await recall(rest, bank, "Where does Ike live?")) == ["Ike lives in Bern."]
    history = (await rest.get(f"/v1/banks/{bank}/memories/{old}/history")).json()["versions"]
    assert [v["action"] for v in history] == ["created", "superseded", "restored"]
    assert history[-1]["reason"] == f"its successor {wrong} was invalidated"
    again = await retain(rest, bank, content="Ike moved to Chur.", timestamp="2023-01-01T00:00:00Z", supersedes=[old])
    assert (await rest.delete(f"/v1/banks/{bank}/memories/{again}")).status_code == 200
    assert texts(await recall(rest, bank, "Where does Ike live?")) == ["Ike lives in Bern."]


async def test_a_plan_superseded_today_ends_today(rest, bank):
    """A memory about a future event is true from when it was said: a newer memory ends it now,
    not on the day of the event (and as_of before the event finds it)."""
    plan = await retain(rest, bank, content="Jo flies to Tokyo on 2030-03-01.", timestamp="2026-01-10T00:00:00Z")
    m = (await rest.get(f"/v1/banks/{bank}/memories/{plan}")).json()
    assert m["valid_from"].startswith("2026-01-10")
    found = texts(await recall(rest, bank, "Tokyo flight", as_of="2027-01-01T00:00:00Z"))
    assert "Jo flies to Tokyo on 2030-03-01." in found
    await retain(
        rest, bank, content="Jo cancelled the Tokyo flight.", timestamp="2026-02-01T00:00:00Z", supersedes=[plan]
    )
    now = texts(await recall(rest, bank, "Tokyo flight"))
    assert now == ["Jo cancelled the Tokyo flight."]
    assert (await rest.get(f"/v1/banks/{bank}/memories/{plan}")).json()["valid_to"].startswith("2026-02-01")


async def test_restore_with_an_end_entities_by_canonical_name_and_nulls(app, rest, bank):
    old = await retain(rest, bank, content="Kai works at Umbrella.", timestamp="2020-01-01T00:00:00Z")
    await retain(rest, bank, content="Kai joined Hooli.", timestamp="2022-01-01T00:00:00Z", supersedes=[old])
    r = await rest.patch(
        f"/v1/banks/{bank}/memories/{old}", json={"state": "valid", "valid_to": "2021-06-01T00:00:00Z"}
    )
    body = r.json()
    assert body["memory"]["superseded_by"] is None and body["memory"]["valid_to"].startswith("2021-06-01")
    history = (await rest.get(f"/v1/banks/{bank}/memories/{old}/history")).json()["versions"]
    assert history[-1]["changes"]["valid_to"][1].startswith("2021-06-01")

    mid = await retain(rest, bank, content="Lea paints.")
    for _ in range(2):
        r = await rest.patch(
            f"/v1/banks/{bank}/memories/{mid}", json={"entities": ["Lea Smith", "lea smith", "LEA SMITH "]}
        )
        assert r.status_code == 200
    assert r.json()["version"] is None  # the same entities again: nothing changed
    async with app.engine.rt.pool.acquire() as conn:
        counts = await conn.fetch(
            "SELECT name, mention_count FROM entities WHERE bank_id = $1 AND canonical = 'lea smith'", bank
        )
    assert [c["mention_count"] for c in counts] == [1]
    r = await rest.patch(f"/v1/banks/{bank}/memories/{mid}", json={"text": "Lea paints landscapes in oil."})
    assert "Lea Smith" in r.json()["memory"]["entities"]  # given by hand, kept through the edit
    for field in ("text", "context", "type", "tags", "entities", "state"):
        r = await rest.patch(f"/v1/banks/{bank}/memories/{mid}", json={field: None})
        assert r.status_code == 422 and field in r.text, (field, r.text)


async def test_import_refuses_history_it_could_not_read_back(rest, bank):
    mid = await retain(rest, bank, content="Mo bakes bread.")
    await rest.patch(f"/v1/banks/{bank}/memories/{mid}", json={"text": "Mo bakes rye bread."})
    lines = await _export(rest, bank)
    row = next(line["row"] for line in lines if line["kind"] == "memory_version")
    import gzip
    import json

    for bad in (
        {"version": 2147483647},
        {"version": 0},
        {"version": "2"},
        {"changes": ["x"]},
        {"changes": {"text": "abc"}},
        {"changes": {"text": [None, None, None]}},
        {"actor": ""},
        {"actor": "x" * 201},
        {"reason": "r" * 1001},
    ):
        forged = [
            line if line["kind"] != "memory_version" else {"kind": "memory_version", "row": {**row, **bad}}
            for line in lines
        ]
        data = gzip.compress("".join(json.dumps(line) + "\n" for line in forged).encode())
        r = await rest.post(f"/v1/banks/{bank}_x/import", content=data, headers={"Content-Type": "application/gzip"})
        assert r.status_code == 422 and "memory_version" in r.text, (bad, r.status_code, r.text)
    assert (await rest.get(f"/v1/banks/{bank}_x/memories")).json()["total"] == 0
