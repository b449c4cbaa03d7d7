"""The REST face, in process: the app over httpx's ASGI transport, on the real database."""

from __future__ import annotations

import uuid

import pytest


async def retain(rest, bank, **item):
    r = await rest.post(f"/v1/banks/{bank}/memories", json=item)
    assert r.status_code == 200, r.text
    return r.json()


async def recall(rest, bank, query, **kw):
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": query, **kw})
    assert r.status_code == 200, r.text
    return r.json()["results"]


async def count(rest, bank):
    return (await rest.get(f"/v1/banks/{bank}/memories", params={"limit": 1})).json()["total"]


async def test_health_ready_docs(rest):
    h = (await rest.get("/health")).json()
    assert h["status"] == "ok" and h["database"] == "external" and h["embedding_model"]
    ready = {"ready": True, "status": "ready", "database": "external"}
    assert (await rest.get("/ready")).json() == ready == (await rest.get("/health/ready")).json()
    assert (await rest.get("/docs")).status_code == 200
    spec = (await rest.get("/openapi.json")).json()
    assert "/v1/banks/{bank_id}/recall" in spec["paths"]


async def test_bank_lifecycle(rest, bank):
    r = await rest.post("/v1/banks", json={"bank_id": bank, "name": "Alice", "mission": "help Alice"})
    assert r.status_code == 201 and r.json()["name"] == "Alice"
    again = await rest.post("/v1/banks", json={"bank_id": bank, "name": "Other"})
    assert again.status_code == 200 and again.json()["name"] == "Alice"
    assert bank in [b["bank_id"] for b in (await rest.get("/v1/banks")).json()["banks"]]
    upd = (await rest.patch(f"/v1/banks/{bank}", json={"mission": "new mission"})).json()
    assert upd["mission"] == "new mission" and upd["name"] == "Alice"
    await retain(rest, bank, content="Alice likes tea.")
    got = (await rest.get(f"/v1/banks/{bank}")).json()
    assert got["memory_count"] == 1 and got["entity_count"] >= 1
    d = (await rest.delete(f"/v1/banks/{bank}")).json()
    assert d["memories_deleted"] == 1
    assert (await rest.get(f"/v1/banks/{bank}")).status_code == 404


async def test_retain_creates_bank_and_recall_fields(rest, bank):
    res = await retain(
        rest,
        bank,
        content="Caroline went to the LGBTQ support group yesterday. It was inspiring.",
        timestamp="2023-05-08T13:56:00Z",
        tags=["chat"],
        metadata={"turn": "D1:3"},
        context="conversation",
    )
    assert len(res["memory_ids"]) == 1 and res["bank_id"] == bank
    results = await recall(rest, bank, "When did Caroline go to the support group?")
    top = results[0]
    assert top["id"] == res["memory_ids"][0]
    assert top["metadata"] == {"turn": "D1:3"} and top["tags"] == ["chat"] and top["context"] == "conversation"
    assert "Caroline" in top["entities"] and top["type"] in ("world", "experience")
    assert top["occurred_start"].startswith("2023-05-07") and top["mentioned_at"].startswith("2023-05-08")
    assert top["score"] > 0 and "semantic" in top["arms"]


async def test_recall_ranks_relevant_first_and_cuts_to_budget(rest, bank):
    facts = [
        "Melanie painted a sunset over the lake last week.",
        "The quarterly budget review is scheduled for Thursday.",
        "John adopted a golden retriever puppy named Max.",
        "Python 3.12 removed the distutils module.",
    ] + [f"Filler note number {i} about unrelated logistics and shipping." for i in range(30)]
    (await rest.post(f"/v1/banks/{bank}/memories", json={"items": [{"content": f} for f in facts]})).raise_for_status()
    assert (await recall(rest, bank, "what is John's dog called?"))[0]["text"].startswith("John adopted")
    assert (await recall(rest, bank, "Melanie's painting"))[0]["text"].startswith("Melanie painted")
    small = await recall(rest, bank, "logistics", max_tokens=40)
    assert 1 <= len(small) <= 3
    assert sum((len(m["text"]) + 3) // 4 for m in small) <= 40
    scores = [m["score"] for m in (await recall(rest, bank, "logistics"))]
    assert scores == sorted(scores, reverse=True)


async def test_temporal_arm_finds_window(rest, bank):
    (
        await rest.post(
            f"/v1/banks/{bank}/memories",
            json={
                "items": [
                    {"content": "We hiked the ridge trail together.", "timestamp": "2023-05-14T10:00:00Z"},
                    {"content": "We went bowling downtown.", "timestamp": "2023-08-02T10:00:00Z"},
                    {"content": "I started learning the violin.", "timestamp": "2023-09-20T10:00:00Z"},
                ]
            },
        )
    ).raise_for_status()
    res = await recall(rest, bank, "What did we do last May?", query_timestamp="2023-10-01T00:00:00Z")
    assert res[0]["text"].startswith("We hiked") and "temporal" in res[0]["arms"]


async def test_tag_matching_as_hindsight_defines_it(rest, bank):
    work, home = "Work fact about the deployment pipeline.", "Personal fact about the garden pipeline."
    shared, untagged = "Shared fact about a pipeline at work and home.", "Untagged fact about a pipeline."
    (
        await rest.post(
            f"/v1/banks/{bank}/memories",
            json={
                "items": [
                    {"content": work, "tags": ["work"]},
                    {"content": home, "tags": ["home"]},
                    {"content": shared, "tags": ["home", "work"]},
                    {"content": untagged},
                ]
            },
        )
    ).raise_for_status()

    async def texts(**kw):
        return {m["text"] for m in (await recall(rest, bank, "pipeline", **kw))}

    assert (await texts()) == {work, home, shared, untagged}
    assert (await texts(tags=["work"])) == {work, shared, untagged}  # any (the default) keeps untagged memories
    assert (await texts(tags=["work"], tags_match="any_strict")) == {work, shared}
    assert (await texts(tags=["work", "home"], tags_match="all")) == {shared, untagged}
    assert (await texts(tags=["work", "home"], tags_match="all_strict")) == {shared}
    assert (await texts(tags=["work"], tags_match="exact")) == {work}
    assert (await texts(tags_match="exact")) == {untagged}  # exact with no tags: the untagged scope
    assert (await texts(tags=["nothing"])) == {untagged}
    assert (await texts(tags=["nothing"], tags_match="any_strict")) == set()
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": "pipeline", "tags_match": "some"})
    assert r.status_code == 422 and "tags_match" in r.json()["message"]


async def test_long_content_split_into_bounded_units(rest, bank):
    para = " ".join(f"Sentence {i} talks about topic {i % 7} in some detail." for i in range(200))
    res = await retain(rest, bank, content=para + "\n\n" + para)
    assert len(res["memory_ids"]) > 5
    mems = (await rest.get(f"/v1/banks/{bank}/memories", params={"limit": 1000})).json()["memories"]
    assert all(len(m["text"]) <= 1200 for m in mems)
    assert all(m["text"].rstrip().endswith(".") for m in mems)  # cut at sentence boundaries


async def test_document_replace(rest, bank):
    await retain(rest, bank, content="Version one of the handbook says lunch is at noon.", document_id="handbook")
    await retain(rest, bank, content="Unrelated note.")
    await retain(rest, bank, content="Version two of the handbook says lunch is at one.", document_id="handbook")
    docs = (await rest.get(f"/v1/banks/{bank}/memories", params={"document_id": "handbook"})).json()
    assert docs["total"] == 1 and "Version two" in docs["memories"][0]["text"]
    assert (await count(rest, bank)) == 2


async def test_batch_of_1000(rest, app, bank):
    """A large batch is embedded in steps before it is stored: every memory must still
    get its own text's vector, across the step boundaries too."""
    import numpy as np

    from hindsight.engine.memory.retain import STEP_UNITS

    items = [
        {"content": f"Batch item {i}: the user visited city number {i}.", "metadata": {"i": i}} for i in range(1000)
    ]
    r = await rest.post(f"/v1/banks/{bank}/memories", json={"items": items})
    assert r.status_code == 200, r.text
    ids = r.json()["memory_ids"]
    assert len(ids) == 1000 and (await count(rest, bank)) == 1000
    picked = sorted({0, STEP_UNITS - 1, STEP_UNITS, 2 * STEP_UNITS + 1, 500, 999})
    async with app.engine.rt.pool.acquire() as conn:
        rows = {
            r["i"]: r
            for r in await conn.fetch(
                "SELECT (metadata->>'i')::int AS i, text, embedding::text AS e FROM memories"
                " WHERE bank_id = $1 AND (metadata->>'i')::int = ANY($2::int[])",
                bank,
                picked,
            )
        }
    assert sorted(rows) == picked
    stored = np.array([[float(x) for x in rows[i]["e"].strip("[]").split(",")] for i in picked])
    want = app.engine.rt.embedder.embed([rows[i]["text"] for i in picked])
    assert ((stored * want).sum(1) > 0.9999).all()


async def test_get_and_delete_memory(rest, bank):
    mid = (await retain(rest, bank, content="Temporary memory."))["memory_ids"][0]
    assert (await rest.get(f"/v1/banks/{bank}/memories/{mid}")).json()["text"] == "Temporary memory."
    assert (await rest.delete(f"/v1/banks/{bank}/memories/{mid}")).status_code == 200
    assert (await rest.get(f"/v1/banks/{bank}/memories/{mid}")).status_code == 404
    assert (await rest.get(f"/v1/banks/{bank}/memories/not-a-uuid")).status_code == 422


async def test_bank_isolation(rest, bank):
    other = bank + "_other"
    await retain(rest, bank, content="The secret launch code word is pineapple.")
    await retain(rest, other, content="Bob enjoys fishing on weekends.")
    res = await recall(rest, other, "secret launch code pineapple")
    assert all("pineapple" not in m["text"] for m in res)
    mid = (await recall(rest, bank, "pineapple"))[0]["id"]
    assert (await rest.get(f"/v1/banks/{other}/memories/{mid}")).status_code == 404


@pytest.mark.parametrize(
    "body,status,needle",
    [
        ({}, 422, "content"),
        ({"content": 5}, 422, "content"),
        ({"content": "   "}, 422, "blank"),
        ({"content": "x", "tags": [1]}, 422, "tags"),
        ({"content": "x", "timestamp": "not a time"}, 422, "timestamp"),
        ({"content": "x", "bogus": 1}, 422, "bogus"),
        ({"items": []}, 422, "items"),
        ({"items": [{"content": "ok"}, {"nope": 1}]}, 422, "items.1"),
        ({"items": "x"}, 422, "items"),
        ({"content": "x" * 100_001}, 422, "100000"),
        ({"items": [{"content": "x"}] * 5001}, 422, "5000"),
        ([1, 2], 422, "object"),
    ],
)
async def test_retain_bad_input(rest, bank, body, status, needle):
    await retain(rest, bank, content="Existing memory stays.")
    r = await rest.post(f"/v1/banks/{bank}/memories", json=body)
    assert r.status_code == status, r.text
    assert needle in r.json()["message"]
    assert (await count(rest, bank)) == 1


async def test_malformed_json_and_bad_routes(rest, bank):
    r = await rest.post(
        f"/v1/banks/{bank}/memories", content=b"{not json", headers={"content-type": "application/json"}
    )
    assert r.status_code == 400 and "malformed JSON" in r.json()["message"]
    assert (await rest.post("/v1/banks/bad id!/recall", json={"query": "x"})).status_code == 422
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": "x"})
    assert r.status_code == 200 and r.json()["results"] == []  # not written yet: empty
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": "x", "max_tokens": 10**9})
    assert r.status_code == 422 and "max_tokens" in r.json()["message"]
    await retain(rest, bank, content="now it exists")
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": "x", "max_tokens": 10**9})
    assert r.status_code == 422 and "max_tokens" in r.json()["message"]
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": "x", "types": ["opinion"]})
    assert r.status_code == 422 and "types" in r.json()["message"]
    assert (await rest.get("/v1/nothing")).status_code == 404
    assert (await rest.post("/v1/banks", json={"bank_id": "has space"})).status_code == 422
    assert (await rest.get(f"/v1/banks/{uuid.uuid4().hex}")).status_code == 404
