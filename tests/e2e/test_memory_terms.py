"""memory_terms (migration 015), the keyword arm's narrow copy of each memory: it stays equal to
`memories` through every way memories are written, and the arm ranks the same whichever of the
two tables it reads."""

from __future__ import annotations

import asyncio

import asyncpg
import httpx

from hindsight.engine.search.arms.keyword import TERM_COLUMNS

from conftest import fresh_database

COLUMNS = (
    "bank_id, id, kind, tags, superseded, invalidated_at, valid_from, valid_to, occurred_start, occurred_end,"
    " mentioned_at, created_at, tsv::text"
)


async def _copies(pg_url: str, banks: list[str]) -> list[list[tuple]]:
    conn = await asyncpg.connect(pg_url)
    try:
        out = []
        for table in ("memories", "memory_terms"):
            sql = f"SELECT {COLUMNS} FROM {table} WHERE bank_id = ANY($1::text[]) ORDER BY bank_id, id"
            out.append([tuple(r) for r in await conn.fetch(sql, banks)])
        return out
    finally:
        await conn.close()


async def _same(pg_url: str, *banks: str) -> int:
    kept, copied = await _copies(pg_url, list(banks))
    assert copied == kept
    return len(kept)


async def test_memory_terms_follow_every_write(pg_url, server, bank):
    other = bank + "_copy"
    async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:

        async def put(i):
            items = [
                {"content": f"Round {i}: the heron nested by pond {j}.", "document_id": f"d{j % 2}", "tags": [f"t{j}"]}
                for j in range(4)
            ] + [{"content": f"Loose note {i} about herons.", "timestamp": f"2024-03-0{i % 9 + 1}T10:00:00Z"}]
            r = await c.post(f"/v1/banks/{bank}/memories", json={"items": items})
            assert r.status_code == 200, r.text

        await asyncio.gather(*(put(i) for i in range(6)))  # documents replaced concurrently
        assert await _same(pg_url, bank) > 0
        listed = (await c.get(f"/v1/banks/{bank}/memories", params={"limit": 100})).json()["memories"]
        first, second, third = (m["id"] for m in listed[:3])

        # Edits of every column the copy keeps, and of one it doesn't.
        r = await c.patch(
            f"/v1/banks/{bank}/memories/{first}",
            json={
                "text": "The heron moved to the quarry lake.",
                "type": "experience",
                "tags": ["moved"],
                "occurred_start": "2024-05-01T00:00:00Z",
                "occurred_end": "2024-05-02T00:00:00Z",
                "valid_from": "2024-05-01T00:00:00Z",
                "context": "field notes",
            },
        )
        assert r.status_code == 200, r.text
        await _same(pg_url, bank)
        r = await c.post(f"/v1/banks/{bank}/memories/{second}/invalidate", json={"reason": "wrong pond"})
        assert r.status_code == 200, r.text
        r = await c.post(
            f"/v1/banks/{bank}/memories", json={"content": "The heron left the pond in June.", "supersedes": [third]}
        )
        assert r.status_code == 200, r.text
        await _same(pg_url, bank)
        assert (await c.delete(f"/v1/banks/{bank}/memories/{first}")).status_code == 200
        await _same(pg_url, bank)

        # The keyword arm sees the edit: the new word finds it, the replaced one no longer does.
        listed = (await c.get(f"/v1/banks/{bank}/memories", params={"limit": 100})).json()["memories"]
        target = next(m["id"] for m in listed if m["id"] not in (first, second, third))
        r = await c.patch(f"/v1/banks/{bank}/memories/{target}", json={"text": "A kingfisher by the weir."})
        assert r.status_code == 200, r.text
        r = await c.post(f"/v1/banks/{bank}/recall", json={"query": "kingfisher", "mode": "keyword"})
        assert [m["id"] for m in r.json()["results"]] == [target]
        r = await c.post(f"/v1/banks/{bank}/recall", json={"query": "quarry", "mode": "keyword"})
        assert r.json()["results"] == []  # the edited memory that said it was deleted
        conn = await asyncpg.connect(pg_url)
        try:
            assert (
                await conn.fetchval("SELECT count(*) FROM memory_terms WHERE bank_id = $1 AND tsv @@ 'quarry'", bank)
                == 0
            )
        finally:
            await conn.close()

        # An export imported into another bank, and both banks deleted.
        before = await _same(pg_url, bank)
        exported = await c.get(f"/v1/banks/{bank}/export")
        assert exported.status_code == 200
        r = await c.post(f"/v1/banks/{other}/import", content=exported.content)
        assert r.status_code == 200, r.text
        assert await _same(pg_url, bank, other) == 2 * before
        for b in (bank, other):
            assert (await c.delete(f"/v1/banks/{b}")).status_code == 200
        assert await _same(pg_url, bank, other) == 0


def test_keyword_arm_ranks_alike_from_either_table(api, bank):
    """A filter every memory passes (context = "general") sends the arm to `memories`; without it,
    to memory_terms: same hits, same scores, on a small bank (its own rows; a large bank's seeds
    are compared in tests/e2e/test_keyword_large_bank.py)."""
    items = [{"content": f"Note {i}: the heron waded in pond {i % 7} by the mill."} for i in range(40)]
    items += [{"content": "The mill wheel turned slowly."}, {"content": "Herons nest near the mill pond."}]
    assert api.post(f"/v1/banks/{bank}/memories", json={"items": items}).status_code == 200
    for query in ("heron mill pond", "wheel", "pond 3 nest"):
        body = {"query": query, "mode": "keyword", "top_k": 30, "max_tokens": 32_000}
        plain = api.post(f"/v1/banks/{bank}/recall", json=body).json()["results"]
        filtered = api.post(f"/v1/banks/{bank}/recall", json={**body, "filter": 'context = "general"'}).json()
        assert plain and [(m["id"], m["relevance"]) for m in plain] == [
            (m["id"], m["relevance"]) for m in filtered["results"]
        ]


def test_migration_copies_the_memories_already_stored(pg_url):
    """A database at migration 014 with memories in it gets them all in memory_terms, and the
    triggers keep the copy from there."""
    asyncio.run(_upgrade(fresh_database(pg_url, "upgrade_015")))


async def _upgrade(url: str) -> None:
    from hindsight.db.pool import migrate

    assert (await migrate(url, until=14))[-1] == "014_chunk_lexemes.sql"
    conn = await asyncpg.connect(url)
    try:
        await conn.execute("INSERT INTO banks (id) VALUES ('old'), ('older')")
        await conn.execute(
            "INSERT INTO memories (id, bank_id, text, kind, embedding, source_id, tags, mentioned_at, superseded)"
            " SELECT gen_random_uuid(), CASE WHEN i % 3 = 0 THEN 'old' ELSE 'older' END, 'Heron number ' || i || ' 黄山',"
            " 'world', array_fill(0.1, ARRAY[384])::vector, 's' || i, ARRAY['t' || (i % 2)], now(), i % 5 = 0"
            " FROM generate_series(1, 50) i"
        )
        assert await migrate(url, until=15) == ["015_memory_terms.sql"]
        kept, copied = await _copies(url, ["old", "older"])
        assert len(kept) == 50 and copied == kept
        await conn.execute("DELETE FROM memories WHERE bank_id = 'old'")
        await conn.execute("UPDATE memories SET text = 'Egret', tags = '{}' WHERE bank_id = 'older' AND superseded")
        kept, copied = await _copies(url, ["old", "older"])
        assert len(kept) == 34 and copied == kept
        assert await conn.fetchval("SELECT count(*) FROM memory_terms WHERE tsv @@ 'egret'") == 7
        await conn.execute("TRUNCATE memories CASCADE")
        assert await conn.fetchval("SELECT count(*) FROM memory_terms") == 0
    finally:
        await conn.close()


async def test_term_columns_are_the_tables(pg_url):
    """keyword_rows sends a filter to memory_terms when it names only TERM_COLUMNS: they must be
    the table's columns, and each a column of memories of the same type."""
    conn = await asyncpg.connect(pg_url)
    try:
        cols = {
            t: {
                r[0]: r[1]
                for r in await conn.fetch(
                    "SELECT attname, format_type(atttypid, atttypmod) FROM pg_attribute"
                    " WHERE attrelid = $1::regclass AND attnum > 0 AND NOT attisdropped",
                    t,
                )
            }
            for t in ("memories", "memory_terms")
        }
    finally:
        await conn.close()
    assert set(cols["memory_terms"]) == TERM_COLUMNS
    assert all(cols["memories"][c] == kind for c, kind in cols["memory_terms"].items())


def test_llm_extraction_supersedes_raw_units_in_the_copy(llm_api, bank, pg_url):
    """Extraction marks the raw unit superseded (a row update of memories): the copy follows, and
    the keyword arm returns the facts, not the raw unit."""
    raw = "Melanie went to the Louvre in Paris yesterday. She loved the paintings."
    r = llm_api.post(
        f"/v1/banks/{bank}/memories",
        json={"content": raw, "timestamp": "2023-05-08T13:00:00Z"},
        params={"wait": True},
    )
    assert r.status_code == 200 and r.json()["extraction"] == "succeeded", r.text
    url = pg_url.replace("/postgres?", "/llm_main?", 1)  # the llm_server's database (conftest)
    kept, copied = asyncio.run(_copies(url, [bank]))
    assert copied == kept and [row[4] for row in kept].count(True) == 1  # the raw unit, superseded
    r = llm_api.post(f"/v1/banks/{bank}/recall", json={"query": "Louvre paintings", "mode": "keyword"})
    texts = [m["text"] for m in r.json()["results"]]
    assert len(texts) == 2 and raw not in texts, texts


async def test_a_stale_copy_never_brings_back_what_the_filters_leave_out(pg_url, server, bank):
    """The details statement checks every hit against the memory itself: were memory_terms ever to
    fall behind (it is kept in the memory's own transaction, so only a bug could do it), an
    invalidated memory would still stay out of recall."""
    async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:
        r = await c.post(f"/v1/banks/{bank}/memories", json={"content": "The otter den is under the willow."})
        mid = r.json()["memory_ids"][0]
        assert (await c.post(f"/v1/banks/{bank}/memories/{mid}/invalidate", json={})).status_code == 200
        conn = await asyncpg.connect(pg_url)
        try:
            await conn.execute(
                "UPDATE memory_terms SET invalidated_at = NULL WHERE bank_id = $1 AND id = $2", bank, mid
            )
            r = await c.post(f"/v1/banks/{bank}/recall", json={"query": "otter willow", "mode": "keyword"})
            assert r.status_code == 200 and r.json()["results"] == []
        finally:
            await conn.execute(
                "UPDATE memory_terms SET invalidated_at = now() WHERE bank_id = $1 AND id = $2", bank, mid
            )
            await conn.close()
