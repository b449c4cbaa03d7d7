"""A memory keeps the names of its entities (migration 012) and they always say what its links
say: written by retain as the entities table has them, recomputed after an edit of its entities,
read through the links for rows written before (NULL), and never taken from an imported file."""

from __future__ import annotations

import asyncio
import gzip
import json

import asyncpg
from test_portable import do_import, export

LINKED = """SELECT m.id::text, m.entity_names,
                  ARRAY(SELECT e.name FROM memory_entities me JOIN entities e ON e.id = me.entity_id
                        WHERE me.memory_id = m.id ORDER BY e.name COLLATE "C") AS linked
           FROM memories m WHERE m.bank_id = $1"""


def db(pg_url, sql, *args):
    async def go():
        conn = await asyncpg.connect(pg_url)
        try:
            return await conn.fetch(sql, *args)
        finally:
            await conn.close()

    return asyncio.run(go())


def kept_and_linked(pg_url, bank) -> dict[str, tuple]:
    return {r["id"]: (r["entity_names"], list(r["linked"])) for r in db(pg_url, LINKED, bank)}


def entities_seen(api, bank) -> dict[str, list[str]]:
    """Each memory's entities as listing, lookup and recall report them (all three must agree)."""
    listed = {m["id"]: m["entities"] for m in api.get(f"/v1/banks/{bank}/memories").json()["memories"]}
    for mid, names in listed.items():
        assert api.get(f"/v1/banks/{bank}/memories/{mid}").json()["entities"] == names
    recalled = api.post(f"/v1/banks/{bank}/recall", json={"query": "Zoë Ålund Bob melanie"}).json()["results"]
    for m in recalled:
        assert m["entities"] == listed[m["id"]]
    return listed


def test_names_kept_at_retain_are_those_of_the_links(api, bank, pg_url):
    # lower-case texts: the names are the given ones only
    items = [
        {"content": "she paints with her friend.", "entities": [{"text": t} for t in ("Zoë", "bob", "Melanie")]},
        {"content": "nothing named here at all."},
    ]
    api.post(f"/v1/banks/{bank}/memories", json={"items": items}).raise_for_status()
    # the same entities spelled otherwise, in a later retain: the stored (first) names are kept
    again = {"content": "they met at the café.", "entities": [{"text": t} for t in ("BOB", "Ålund", "melanie")]}
    api.post(f"/v1/banks/{bank}/memories", json=again).raise_for_status()
    rows = kept_and_linked(pg_url, bank)
    assert len(rows) == 3
    for kept, linked in rows.values():
        assert kept == linked  # not NULL: retain wrote them
    seen = entities_seen(api, bank)
    assert {mid: linked for mid, (_, linked) in rows.items()} == seen
    assert sorted(map(tuple, seen.values())) == [(), ("Melanie", "Zoë", "bob"), ("Melanie", "bob", "Ålund")]


def test_rows_without_kept_names_read_them_through_their_links(api, bank, pg_url):
    api.post(
        f"/v1/banks/{bank}/memories",
        json={"content": "Arjun and Lena went to Lisbon.", "entities": [{"text": "Arjun"}]},
    ).raise_for_status()
    before = entities_seen(api, bank)
    db(pg_url, "UPDATE memories SET entity_names = NULL WHERE bank_id = $1", bank)  # as before migration 012
    assert entities_seen(api, bank) == before
    assert "Arjun" in next(iter(before.values()))


def test_an_edit_of_the_entities_keeps_the_new_names(api, bank, pg_url):
    api.post(f"/v1/banks/{bank}/memories", json={"content": "Bob fixed the bike."}).raise_for_status()
    [mid] = entities_seen(api, bank)
    r = api.patch(f"/v1/banks/{bank}/memories/{mid}", json={"entities": ["Robert Smith", "Bike Shop"], "reason": "x"})
    assert r.status_code == 200, r.text
    assert r.json()["memory"]["entities"] == ["Bike Shop", "Robert Smith"]
    assert entities_seen(api, bank)[mid] == ["Bike Shop", "Robert Smith"]
    [(kept, linked)] = kept_and_linked(pg_url, bank).values()
    assert kept == linked == ["Bike Shop", "Robert Smith"]


def test_exports_leave_the_names_out_and_imports_never_take_them(api, bank, pg_url):
    api.post(f"/v1/banks/{bank}/memories", json={"content": "Caroline joined the support group."}).raise_for_status()
    lines = [json.loads(x) for x in gzip.decompress(export(api, bank)).decode().splitlines()]
    memories = [rec for rec in lines if rec["kind"] == "memory"]
    assert memories and all("entity_names" not in rec["row"] for rec in memories)
    for rec in memories:  # a file claiming names its links do not have
        rec["row"]["entity_names"] = ["Forged", "Admin"]
    target = bank + "_imported"
    do_import(api, target, gzip.compress(("\n".join(json.dumps(x) for x in lines) + "\n").encode()))
    assert list(entities_seen(api, target).values()) == [["Caroline"]]
    for kept, linked in kept_and_linked(pg_url, target).values():
        assert kept is None and linked == ["Caroline"]


def test_an_import_linking_memories_already_here_leaves_no_stale_names(api, bank, pg_url):
    """A file may link a memory this bank already holds to an entity (its own export with a link
    added, or an old export imported after an edit): the memory's names then follow its links."""
    api.post(f"/v1/banks/{bank}/memories", json={"content": "Caroline joined the support group."}).raise_for_status()
    lines = [json.loads(x) for x in gzip.decompress(export(api, bank)).decode().splitlines()]
    [mid] = [rec["row"]["id"] for rec in lines if rec["kind"] == "memory"]
    forged = {"id": 999_999, "name": "Forged Admin", "canonical": "forged admin", "kind": "person", "mention_count": 1}
    lines.insert(1, {"kind": "entity", "row": forged})
    lines.insert(-1, {"kind": "memory_entity", "row": {"entity_id": 999_999, "memory_id": mid}})
    lines[-1]["counts"]["entity"] += 1
    lines[-1]["counts"]["memory_entity"] = lines[-1]["counts"].get("memory_entity", 0) + 1
    do_import(api, bank, gzip.compress(("\n".join(json.dumps(x) for x in lines) + "\n").encode()))
    [(kept, linked)] = kept_and_linked(pg_url, bank).values()
    assert kept is None and "Forged Admin" in linked
    assert "Forged Admin" in entities_seen(api, bank)[mid]  # shown where recall's entity arm finds it

    old = export(api, bank)
    r = api.patch(f"/v1/banks/{bank}/memories/{mid}", json={"entities": ["Robert Smith"], "reason": "x"})
    assert r.status_code == 200, r.text
    do_import(api, bank, old)  # the old links come back with the old file
    [(kept, linked)] = kept_and_linked(pg_url, bank).values()
    assert kept is None and entities_seen(api, bank)[mid] == linked
