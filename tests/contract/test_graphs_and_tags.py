"""Entities in detail, the entity graph (entities co-mentioned in memories), the memory graph,
tags with their counts and the memories time series, in process: our REST, Hindsight's
/v1/default shapes, and the list_tags tool."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from conftest import mcp_local

ITEMS = [
    {"content": "Alice Moreau founded Lumen Labs with Bruno Silva in Porto.", "tags": ["team", "user:alice"]},
    {"content": "Alice Moreau hired Chen Wei as the first engineer.", "tags": ["team"]},
    {"content": "Bruno Silva argued with Alice Moreau about pricing.", "tags": ["user:bruno"]},
    {"content": "Dara Quinn sells bicycles.", "tags": []},
]


async def _furnish(rest, bank: str) -> list[str]:
    r = await rest.post(f"/v1/banks/{bank}/memories", json={"items": ITEMS})
    assert r.status_code == 200, r.text
    return r.json()["memory_ids"]


async def test_entity_graph_links_entities_named_together(rest, bank):
    await _furnish(rest, bank)
    g = (await rest.get(f"/v1/banks/{bank}/entities/graph")).json()
    names = {n["id"]: n["name"] for n in g["nodes"]}
    assert {"Alice Moreau", "Bruno Silva", "Chen Wei", "Dara Quinn"} <= set(names.values())
    pairs = {frozenset((names[e["source"]], names[e["target"]])): e["count"] for e in g["edges"]}
    assert pairs[frozenset(("Alice Moreau", "Bruno Silva"))] == 2
    assert pairs[frozenset(("Alice Moreau", "Chen Wei"))] == 1
    assert not any("Dara Quinn" in p for p in pairs)  # named alone: a node without edges
    strong = (await rest.get(f"/v1/banks/{bank}/entities/graph", params={"min_count": 2})).json()
    assert len(strong["edges"]) == 1 and strong["edges"][0]["count"] == 2

    ref = (await rest.get(f"/v1/default/banks/{bank}/entities/graph")).json()
    assert ref["total_edges"] == len(ref["edges"]) == len(g["edges"]) and ref["limit"] == 1000
    labels = {n["data"]["label"] for n in ref["nodes"]}
    assert "Alice Moreau" in labels and "Dara Quinn" not in labels  # the reference draws linked entities only
    assert {e["data"]["linkType"] for e in ref["edges"]} == {"cooccurrence"}
    for bad in ({"limit": -1}, {"min_count": 0}, {"nodes": 0}):
        r = await rest.get(f"/v1/banks/{bank}/entities/graph", params=bad)
        assert r.status_code == 422, (bad, r.text)


async def test_one_entity_with_its_memories(rest, bank):
    await _furnish(rest, bank)
    listed = (await rest.get(f"/v1/banks/{bank}/entities", params={"q": "alice"})).json()["entities"]
    alice = listed[0]
    got = (await rest.get(f"/v1/banks/{bank}/entities/{alice['id']}")).json()
    assert got["name"] == "Alice Moreau" and got["mention_count"] == 3 and len(got["memories"]) == 3
    assert got["first_seen"] and got["last_seen"] >= got["first_seen"]
    ref = (await rest.get(f"/v1/default/banks/{bank}/entities/{alice['id']}")).json()
    assert ref["canonical_name"] == "Alice Moreau" and len(ref["observations"]) == 3
    again = await rest.post(f"/v1/default/banks/{bank}/entities/{alice['id']}/regenerate")
    assert again.status_code == 200 and again.json()["id"] == ref["id"]
    page = (await rest.get(f"/v1/default/banks/{bank}/entities", params={"limit": 2})).json()
    assert page["total"] >= 4 and len(page["items"]) == 2 and page["items"][0]["canonical_name"] == "Alice Moreau"
    assert page["items"][0]["first_seen"] and page["items"][0]["mention_count"] == 3
    assert (await rest.get(f"/v1/default/banks/{bank}/entities", params={"limit": 0})).json()["items"] == []
    for path in (f"/v1/banks/{bank}/entities/x1", f"/v1/default/banks/{bank}/entities/12345678901234567890"):
        r = await rest.get(path)
        assert r.status_code == 422 and "entity_id" in r.json()["message"], r.text
    r = await rest.get(f"/v1/banks/{bank}/entities/999999999")
    assert r.status_code == 404
    # another bank's entity, through this bank's URL: not found
    other = bank + "_other"
    await rest.post(f"/v1/banks/{other}/memories", json={"content": "Erin Hale sails."})
    theirs = (await rest.get(f"/v1/banks/{other}/entities")).json()["entities"][0]["id"]
    assert (await rest.get(f"/v1/banks/{bank}/entities/{theirs}")).status_code == 404
    assert (await rest.post(f"/v1/default/banks/{bank}/entities/{theirs}/regenerate")).status_code == 404


async def test_memory_graph(rest, bank):
    ids = await _furnish(rest, bank)
    g = (await rest.get(f"/v1/banks/{bank}/graph")).json()
    assert g["total"] == 4 and {m["id"] for m in g["nodes"]} == set(ids)
    alice_links = [e for e in g["edges"] if e["entity"] == "Alice Moreau"]
    assert len(alice_links) == 3 and {e["kind"] for e in g["edges"]} == {"entity"}
    ref = (await rest.get(f"/v1/default/banks/{bank}/graph", params={"limit": 2})).json()
    assert ref["total_units"] == 4 and len(ref["nodes"]) == 2 == len(ref["table_rows"]) and ref["limit"] == 2
    assert ref["table_rows"][0]["fact_type"] in ("world", "experience")
    tagged = (await rest.get(f"/v1/default/banks/{bank}/graph", params={"tags": "team"})).json()
    assert tagged["total_units"] == 2
    assert (await rest.get(f"/v1/default/banks/{bank}/graph", params={"type": "observation"})).json()["nodes"] == []


async def test_tags_with_counts_and_wildcards(app, rest, bank):
    await _furnish(rest, bank)
    await rest.post(
        f"/v1/banks/{bank}/mental-models", json={"name": "Team", "source_query": "Who is on it?", "tags": ["team"]}
    )
    tags = (await rest.get(f"/v1/banks/{bank}/tags")).json()
    assert tags["tags"][0] == {"tag": "team", "count": 2} and tags["total"] == 3
    ref = (await rest.get(f"/v1/default/banks/{bank}/tags", params={"q": "USER:*"})).json()
    assert {t["tag"] for t in ref["items"]} == {"user:alice", "user:bruno"} and ref["total"] == 2
    assert (await rest.get(f"/v1/default/banks/{bank}/tags", params={"q": "*bru*"})).json()["total"] == 1
    assert (await rest.get(f"/v1/default/banks/{bank}/tags", params={"q": "user_%"})).json()["total"] == 0
    models = (await rest.get(f"/v1/default/banks/{bank}/tags", params={"source": "mental_models"})).json()
    assert models["items"] == [{"tag": "team", "count": 1}]
    assert (await rest.get(f"/v1/default/banks/{bank}/tags", params={"source": "documents"})).status_code == 422
    async with mcp_local(app, bank=bank) as client:
        found = (await client.call_tool("list_tags", {"q": "user:*", "limit": 1})).structured_content
        assert found["total"] == 2 and len(found["tags"]) == 1


async def test_memories_time_series(rest, bank):
    await _furnish(rest, bank)
    old = (datetime.now(UTC) - timedelta(days=3)).isoformat()
    await rest.post(f"/v1/banks/{bank}/memories", json={"content": "I visited Porto.", "timestamp": old})
    t = (await rest.get(f"/v1/banks/{bank}/stats/memories-timeseries")).json()
    assert t["period"] == "7d" and t["trunc"] == "day" and len(t["buckets"]) == 7
    assert sum(b["world"] + b["experience"] for b in t["buckets"]) == 5
    assert t["buckets"][-1]["world"] + t["buckets"][-1]["experience"] == 5  # all stored today
    said = await rest.get(f"/v1/banks/{bank}/stats/memories-timeseries", params={"time_field": "mentioned_at"})
    assert said.json()["buckets"][-4]["experience"] == 1  # said three days ago
    hour = (await rest.get(f"/v1/default/banks/{bank}/stats/memories-timeseries", params={"period": "1h"})).json()
    assert hour["trunc"] == "minute" and len(hour["buckets"]) == 60 and hour["buckets"][0]["observation"] == 0
    lenient = (
        await rest.get(
            f"/v1/default/banks/{bank}/stats/memories-timeseries", params={"period": "5y", "time_field": "x"}
        )
    ).json()
    assert lenient["period"] == "7d" and lenient["time_field"] == "created_at"
    r = await rest.get(f"/v1/banks/{bank}/stats/memories-timeseries", params={"period": "5y"})
    assert r.status_code == 422 and "period" in r.json()["message"]
    empty = (await rest.get("/v1/default/banks/never_written_bank/stats/memories-timeseries")).json()
    assert len(empty["buckets"]) == 7 and not any(b["world"] for b in empty["buckets"])
