"""REST face against the real server and database."""

from __future__ import annotations

import uuid

import pytest


def retain(api, bank, **item):
    r = api.post(f"/v1/banks/{bank}/memories", json=item)
    assert r.status_code == 200, r.text
    return r.json()


def recall(api, bank, query, **kw):
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": query, **kw})
    assert r.status_code == 200, r.text
    return r.json()["results"]


def count(api, bank):
    return api.get(f"/v1/banks/{bank}/memories", params={"limit": 1}).json()["total"]


def test_health_ready_docs(api):
    h = api.get("/health").json()
    assert h["status"] == "ok" and h["database"] == "external" and h["embedding_model"]
    assert api.get("/ready").json() == {"ready": True}
    assert api.get("/docs").status_code == 200
    spec = api.get("/openapi.json").json()
    assert "/v1/banks/{bank_id}/recall" in spec["paths"]


def test_bank_lifecycle(api, bank):
    r = api.post("/v1/banks", json={"bank_id": bank, "name": "Alice", "mission": "help Alice"})
    assert r.status_code == 201 and r.json()["name"] == "Alice"
    again = api.post("/v1/banks", json={"bank_id": bank, "name": "Other"})
    assert again.status_code == 200 and again.json()["name"] == "Alice"
    assert bank in [b["bank_id"] for b in api.get("/v1/banks").json()["banks"]]
    upd = api.patch(f"/v1/banks/{bank}", json={"mission": "new mission"}).json()
    assert upd["mission"] == "new mission" and upd["name"] == "Alice"
    retain(api, bank, content="Alice likes tea.")
    got = api.get(f"/v1/banks/{bank}").json()
    assert got["memory_count"] == 1 and got["entity_count"] >= 1
    d = api.delete(f"/v1/banks/{bank}").json()
    assert d["memories_deleted"] == 1
    assert api.get(f"/v1/banks/{bank}").status_code == 404


def test_retain_creates_bank_and_recall_fields(api, bank):
    res = retain(
        api,
        bank,
        content="Caroline went to the LGBTQ support group yesterday. It was inspiring.",
        timestamp="2023-05-08T13:56:00Z",
        tags=["chat"],
        metadata={"turn": "D1:3"},
        context="conversation",
    )
    assert len(res["memory_ids"]) == 1 and res["bank_id"] == bank
    results = recall(api, bank, "When did Caroline go to the support group?")
    top = results[0]
    assert top["id"] == res["memory_ids"][0]
    assert top["metadata"] == {"turn": "D1:3"} and top["tags"] == ["chat"] and top["context"] == "conversation"
    assert "Caroline" in top["entities"] and top["type"] in ("world", "experience")
    assert top["occurred_start"].startswith("2023-05-07") and top["mentioned_at"].startswith("2023-05-08")
    assert top["score"] > 0 and "semantic" in top["arms"]


def test_recall_ranks_relevant_first_and_cuts_to_budget(api, bank):
    facts = [
        "Melanie painted a sunset over the lake last week.",
        "The quarterly budget review is scheduled for Thursday.",
        "John adopted a golden retriever puppy named Max.",
        "Python 3.12 removed the distutils module.",
    ] + [f"Filler note number {i} about unrelated logistics and shipping." for i in range(30)]
    api.post(f"/v1/banks/{bank}/memories", json={"items": [{"content": f} for f in facts]}).raise_for_status()
    assert recall(api, bank, "what is John's dog called?")[0]["text"].startswith("John adopted")
    assert recall(api, bank, "Melanie's painting")[0]["text"].startswith("Melanie painted")
    small = recall(api, bank, "logistics", max_tokens=40)
    assert 1 <= len(small) <= 3
    assert sum((len(m["text"]) + 3) // 4 for m in small) <= 40
    scores = [m["score"] for m in recall(api, bank, "logistics")]
    assert scores == sorted(scores, reverse=True)


def test_temporal_arm_finds_window(api, bank):
    api.post(
        f"/v1/banks/{bank}/memories",
        json={
            "items": [
                {"content": "We hiked the ridge trail together.", "timestamp": "2023-05-14T10:00:00Z"},
                {"content": "We went bowling downtown.", "timestamp": "2023-08-02T10:00:00Z"},
                {"content": "I started learning the violin.", "timestamp": "2023-09-20T10:00:00Z"},
            ]
        },
    ).raise_for_status()
    res = recall(api, bank, "What did we do last May?", query_timestamp="2023-10-01T00:00:00Z")
    assert res[0]["text"].startswith("We hiked") and "temporal" in res[0]["arms"]


def test_tag_matching_as_hindsight_defines_it(api, bank):
    work, home = "Work fact about the deployment pipeline.", "Personal fact about the garden pipeline."
    shared, untagged = "Shared fact about a pipeline at work and home.", "Untagged fact about a pipeline."
    api.post(
        f"/v1/banks/{bank}/memories",
        json={
            "items": [
                {"content": work, "tags": ["work"]},
                {"content": home, "tags": ["home"]},
                {"content": shared, "tags": ["home", "work"]},
                {"content": untagged},
            ]
        },
    ).raise_for_status()

    def texts(**kw):
        return {m["text"] for m in recall(api, bank, "pipeline", **kw)}

    assert texts() == {work, home, shared, untagged}
    assert texts(tags=["work"]) == {work, shared, untagged}  # any (the default) keeps untagged memories
    assert texts(tags=["work"], tags_match="any_strict") == {work, shared}
    assert texts(tags=["work", "home"], tags_match="all") == {shared, untagged}
    assert texts(tags=["work", "home"], tags_match="all_strict") == {shared}
    assert texts(tags=["work"], tags_match="exact") == {work}
    assert texts(tags_match="exact") == {untagged}  # exact with no tags: the untagged scope
    assert texts(tags=["nothing"]) == {untagged}
    assert texts(tags=["nothing"], tags_match="any_strict") == set()
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "pipeline", "tags_match": "some"})
    assert r.status_code == 422 and "tags_match" in r.json()["message"]


def test_long_content_split_into_bounded_units(api, bank):
    para = " ".join(f"Sentence {i} talks about topic {i % 7} in some detail." for i in range(200))
    res = retain(api, bank, content=para + "\n\n" + para)
    assert len(res["memory_ids"]) > 5
    mems = api.get(f"/v1/banks/{bank}/memories", params={"limit": 1000}).json()["memories"]
    assert all(len(m["text"]) <= 1200 for m in mems)
    assert all(m["text"].rstrip().endswith(".") for m in mems)  # cut at sentence boundaries


def test_document_replace(api, bank):
    retain(api, bank, content="Version one of the handbook says lunch is at noon.", document_id="handbook")
    retain(api, bank, content="Unrelated note.")
    retain(api, bank, content="Version two of the handbook says lunch is at one.", document_id="handbook")
    docs = api.get(f"/v1/banks/{bank}/memories", params={"document_id": "handbook"}).json()
    assert docs["total"] == 1 and "Version two" in docs["memories"][0]["text"]
    assert count(api, bank) == 2


async def test_batch_of_1000(api, bank, pg_url):
    """A large batch is embedded in steps while earlier steps are stored: every memory must still
    get its own text's vector, across the step boundaries too."""
    import asyncpg
    import numpy as np

    from hindsight.embedding import load_embedder
    from hindsight.engine.retain import PIPELINE_UNITS

    items = [
        {"content": f"Batch item {i}: the user visited city number {i}.", "metadata": {"i": i}} for i in range(1000)
    ]
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": items})
    assert r.status_code == 200, r.text
    ids = r.json()["memory_ids"]
    assert len(ids) == 1000 and count(api, bank) == 1000
    picked = sorted({0, PIPELINE_UNITS - 1, PIPELINE_UNITS, 2 * PIPELINE_UNITS + 1, 500, 999})
    conn = await asyncpg.connect(pg_url)
    try:
        rows = {
            r["i"]: r
            for r in await conn.fetch(
                "SELECT (metadata->>'i')::int AS i, text, embedding::text AS e FROM memories"
                " WHERE bank_id = $1 AND (metadata->>'i')::int = ANY($2::int[])",
                bank,
                picked,
            )
        }
    finally:
        await conn.close()
    assert sorted(rows) == picked
    stored = np.array([[float(x) for x in rows[i]["e"].strip("[]").split(",")] for i in picked])
    want = load_embedder().embed([rows[i]["text"] for i in picked])
    assert ((stored * want).sum(1) > 0.9999).all()


def test_get_and_delete_memory(api, bank):
    mid = retain(api, bank, content="Temporary memory.")["memory_ids"][0]
    assert api.get(f"/v1/banks/{bank}/memories/{mid}").json()["text"] == "Temporary memory."
    assert api.delete(f"/v1/banks/{bank}/memories/{mid}").status_code == 200
    assert api.get(f"/v1/banks/{bank}/memories/{mid}").status_code == 404
    assert api.get(f"/v1/banks/{bank}/memories/not-a-uuid").status_code == 422


def test_bank_isolation(api, bank):
    other = bank + "_other"
    retain(api, bank, content="The secret launch code word is pineapple.")
    retain(api, other, content="Bob enjoys fishing on weekends.")
    res = recall(api, other, "secret launch code pineapple")
    assert all("pineapple" not in m["text"] for m in res)
    mid = recall(api, bank, "pineapple")[0]["id"]
    assert api.get(f"/v1/banks/{other}/memories/{mid}").status_code == 404


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
def test_retain_bad_input(api, bank, body, status, needle):
    retain(api, bank, content="Existing memory stays.")
    r = api.post(f"/v1/banks/{bank}/memories", json=body)
    assert r.status_code == status, r.text
    assert needle in r.json()["message"]
    assert count(api, bank) == 1


def test_malformed_json_and_bad_routes(api, bank):
    r = api.post(f"/v1/banks/{bank}/memories", content=b"{not json", headers={"content-type": "application/json"})
    assert r.status_code == 400 and "malformed JSON" in r.json()["message"]
    assert api.post("/v1/banks/bad id!/recall", json={"query": "x"}).status_code == 422
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "x"})
    assert r.status_code == 200 and r.json()["results"] == []  # not written yet: empty
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "x", "max_tokens": 10**9})
    assert r.status_code == 422 and "max_tokens" in r.json()["message"]
    retain(api, bank, content="now it exists")
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "x", "max_tokens": 10**9})
    assert r.status_code == 422 and "max_tokens" in r.json()["message"]
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": "x", "types": ["opinion"]})
    assert r.status_code == 422 and "types" in r.json()["message"]
    assert api.get("/v1/nothing").status_code == 404
    assert api.post("/v1/banks", json={"bank_id": "has space"}).status_code == 422
    assert api.get(f"/v1/banks/{uuid.uuid4().hex}").status_code == 404
