"""Document search plans from the chunks, whatever other banks hold. Its access condition
("public": no tags and no allowed users) was written with cardinality(), which PostgreSQL cannot
estimate: it guessed 0.5% of documents passed and planned every search from the documents, a
probe of the chunks for each (200 ms for a bank of 2,000 chunks beside one of 100,000; 2.3 s for
the big bank's keyword arm; bench/README.md, "Documents: access the planner can count"). Checked
on a database of its own: the estimate, and who sees what."""

from __future__ import annotations

import json
from types import SimpleNamespace  # document search needs the pools and an embedder

import asyncpg
import pytest
from pgvector.asyncpg import register_vector

from hindsight.db.binder import Binder, Fragment
from hindsight.db.pool import Pools
from hindsight.db.sql import Q, fill
from hindsight.engine.knowledge.rag import EndUser, keyword_statement, search_chunks
from hindsight.engine.search.relevance import SearchOptions

from conftest import migrated_database
from support import generic_plan, index_names, plan_nodes

DIM = 384
DOCS, PER_DOC = 150, 20


async def _documents(
    conn: asyncpg.Connection, bank: str, docs: int, tags=(), users=(), name="doc", text="chunk", per_doc=PER_DOC
) -> None:
    """`docs` documents of `per_doc` chunks ("<text> <position>") with random vectors."""
    await conn.execute("INSERT INTO banks (id) VALUES ($1) ON CONFLICT DO NOTHING", bank)
    await conn.execute(
        "WITH d AS (INSERT INTO documents (id, bank_id, source_name, source_type, content_hash, size_bytes,"
        "                                  chunk_size, tags, allowed_users)"
        "           SELECT gen_random_uuid(), $1, $2 || g, 'text', 'h', 1, 500, $4, $5 FROM generate_series(1, $3) g"
        "           RETURNING id)"
        " INSERT INTO chunks (id, bank_id, document_id, position, text, embedding)"
        " SELECT gen_random_uuid(), $1, d.id, p, $7 || ' ' || p,"
        f"       (SELECT array_agg(random() - 0.5) FROM generate_series(1, {DIM}) WHERE p >= 0)::vector"
        " FROM d, generate_series(0, $6 - 1) p",
        bank,
        name,
        docs,
        list(tags),
        list(users),
        per_doc,
        text,
    )


@pytest.fixture(scope="module")
def docs_db(pg_url):
    """A big bank of 150 public documents (and one tagged "team-a" for "ann"), and a small one
    with a public, a tagged and a user's document; analysed, as autovacuum would."""

    async def fill(conn: asyncpg.Connection) -> None:
        await _documents(conn, "big", DOCS)
        await _documents(conn, "big", 1, tags=["team-a"], users=["ann"], name="elsewhere")
        await _documents(conn, "small", 1, name="public")
        await _documents(conn, "small", 1, tags=["team-a"], name="tagged")
        await _documents(conn, "small", 1, users=["ann"], name="anns")
        await conn.execute("ANALYZE documents")
        await conn.execute("ANALYZE chunks")

    return migrated_database(pg_url, "document_plan", fill)


async def test_the_planner_counts_the_documents_a_caller_may_see(docs_db):
    conn = await asyncpg.connect(docs_db)
    try:
        await register_vector(conn)
        qvec = await conn.fetchval("SELECT embedding FROM chunks WHERE bank_id = 'big' LIMIT 1")
        p = Binder("big", qvec, [], "", 10)
        counts = await conn.fetch(Q.chunk_word_frequencies, "big", ["chunk"])
        keyword = keyword_statement("big", [list(counts)], EndUser(), Fragment())
        assert keyword is not None
        for statement, values in ((fill(Q.chunk_semantic, filter=""), p.values), keyword):
            plan = json.loads(await conn.fetchval("EXPLAIN (ANALYZE, FORMAT JSON) " + statement, *values))[0]["Plan"]
            scans = [n for n in plan_nodes(plan) if n.get("Relation Name") == "documents"]
            # Documents read as a whole are estimated near what passes (all 150 here), not at a
            # handful: the estimate that made the planner start from them.
            for n in scans:
                if n["Node Type"] == "Seq Scan":
                    assert n["Plan Rows"] >= DOCS / 3, (statement, n["Plan Rows"])
            # Never a probe of the chunks for each document.
            loops = [n for n in plan_nodes(plan) if n.get("Relation Name") == "chunks"]
            assert all(n["Actual Loops"] <= 1 for n in loops), [(n["Node Type"], n["Actual Loops"]) for n in loops]
    finally:
        await conn.close()


async def test_each_caller_sees_the_public_documents_and_their_own(docs_db):
    # As the server's connections are opened: a walk of the index, if planned, continues until
    # it has found what the filters pass (db/pool.py).
    conn = await asyncpg.connect(docs_db, server_settings={"hnsw.iterative_scan": "relaxed_order"})
    try:
        await register_vector(conn)
        qvec = await conn.fetchval("SELECT embedding FROM chunks WHERE bank_id = 'small' LIMIT 1")

        counts = list(await conn.fetch(Q.chunk_word_frequencies, "small", ["chunk"]))

        async def seen(tags: list[str], user: str) -> set[str]:
            """The documents of the chunks a search of the small bank returns (of any bank), the
            same by either arm."""
            p = Binder("small", qvec, tags, user, 100)
            keyword = keyword_statement("small", [counts], EndUser(session_tags=tags, user_id=user or None), Fragment())
            assert keyword is not None
            keyword[1][3] = 100  # $4, the arm's limit: room for every chunk
            found = set()
            for statement, values in ((fill(Q.chunk_semantic, filter=""), p.values), keyword):
                ids = [r["id"] for r in await conn.fetch(statement, *values)]
                rows = await conn.fetch(
                    "SELECT DISTINCT d.source_name FROM chunks c JOIN documents d ON d.id = c.document_id"
                    " WHERE c.id = ANY($1::uuid[])",
                    ids,
                )
                assert len(ids) == PER_DOC * len(rows)  # every chunk of each document seen, none else
                found.add(frozenset(r[0] for r in rows))
            assert len(found) == 1, found
            return set(found.pop())

        assert await seen([], "") == {"public1"}
        assert await seen(["team-a"], "") == {"public1", "tagged1"}
        assert await seen([], "ann") == {"public1", "anns1"}
        assert await seen(["team-b"], "bob") == {"public1"}
        # ...and never another bank's documents ("elsewhere1" is tagged "team-a" for "ann").
        assert await seen(["team-a"], "ann") == {"public1", "tagged1", "anns1"}
    finally:
        await conn.close()


@pytest.fixture(scope="module")
def seeds_db(pg_url):
    """A bank whose rarest query word is only in a tagged document: 3,100 public chunks hold
    "alpha", 3,100 others "report", 40 both; 5 chunks of a document tagged "board" hold "beta"."""

    async def fill(conn: asyncpg.Connection) -> None:
        await _documents(conn, "seeds", 1, name="alphas", text="alpha note", per_doc=3_100)
        await _documents(conn, "seeds", 1, name="reports", text="report note", per_doc=3_100)
        await _documents(conn, "seeds", 1, name="both", text="alpha report", per_doc=40)
        await _documents(conn, "seeds", 1, tags=["board"], name="board", text="beta secret", per_doc=5)
        await conn.execute("ANALYZE documents")
        await conn.execute("ANALYZE chunks")

    return migrated_database(pg_url, "document_seeds", fill)


async def test_a_rare_word_the_caller_cannot_see_leaves_the_others_found(seeds_db):
    """The keyword arm's seeds are the rarest words by the bank's counts, private documents
    included: "beta" (5 chunks, all in the board's document) is the only seed of "alpha report
    beta". A caller who cannot see them, or whose filter leaves none of them, still gets the
    chunks holding the other words, those holding both first (the words left out are seeded as
    the first seeds are, not read as any 3,000 chunks holding either); those who see the board's
    document get its chunks first."""
    conn = await asyncpg.connect(seeds_db)
    try:
        words = ["alpha", "report", "beta"]
        counts = {r["w"]: r for r in await conn.fetch(Q.chunk_word_frequencies, "seeds", words)}
        assert [counts[w]["n"] for w in words] == [3_140, 3_140, 5]

        async def found(words: list[str], end_user: EndUser, where: str = "") -> list[str]:
            filt = Fragment()
            filt.sql = where
            statement = keyword_statement("seeds", [[counts[w] for w in words]], end_user, filt)
            assert statement is not None
            ids = [r["id"] for r in await conn.fetch(statement[0], *statement[1])]
            rows = await conn.fetch(
                "SELECT c.id, d.source_name FROM chunks c JOIN documents d ON d.id = c.document_id"
                " WHERE c.id = ANY($1::uuid[])",
                ids,
            )
            names = {r["id"]: r["source_name"] for r in rows}
            return [names[i] for i in ids]

        assert await found(words, EndUser()) == ["both1"] * 30
        board = await found(words, EndUser(session_tags=["board"]))
        assert board == ["board1"] * 5 + ["both1"] * 25
        # A filter that leaves out the seed's chunks narrows to the rest; it does not empty the arm.
        narrowed = await found(words, EndUser(session_tags=["board"]), " AND c.position >= 10")
        assert narrowed == ["both1"] * 30
        assert set(await found(["alpha"], EndUser())) <= {"alphas1", "both1"}
    finally:
        await conn.close()


async def test_a_chunk_walk_is_planned_for_its_caller_beside_many_banks(docs_db):
    """The semantic arm of document search names the caller's access (their tags and id): with a few
    hundred banks a shared connection would keep, from the sixth call, a generic plan that reads
    the bank's chunks by its key and sorts them. Each phrase's walk is planned for its values
    (engine/search/arms/running.py, fetch_walks)."""
    pools = await Pools.open(docs_db, 1, 2)  # one connection a pool
    admin = await asyncpg.connect(docs_db)
    try:
        await admin.execute("ALTER TABLE chunks ALTER COLUMN bank_id SET (n_distinct = 1000)")
        await admin.execute("ANALYZE chunks")
        async with pools.shared.acquire() as conn:
            vectors = [r[0] for r in await conn.fetch("SELECT embedding FROM chunks WHERE bank_id = 'big' LIMIT 6")]
            p = Binder("big", vectors[0], [], "", 10)
            sql = fill(Q.chunk_semantic, filter="")
            generic = await generic_plan(conn, sql, *p.values)
        assert "chunks_embedding_hnsw" not in index_names(generic)

        class Embedder:  # each search's phrase embedded as the next chunk's vector
            def __init__(self) -> None:
                self.next = iter(vectors)

            async def query(self, text: str):
                return next(self.next)

        rt = SimpleNamespace(pool=pools.shared, planned=pools.planned, fixed=pools.fixed, embedder=Embedder())
        for _ in range(len(vectors) // 2):  # two phrases a search
            hits = await search_chunks(rt, "big", ["chunk", "note"], EndUser(), SearchOptions(mode="vector"), 5)
            assert len(hits) == 5 and hits[0].arms == ["semantic"]
        async with pools.shared.acquire() as conn:
            plans = await conn.fetch(
                "SELECT generic_plans, custom_plans FROM pg_prepared_statements"
                " WHERE statement LIKE '%ORDER BY c.embedding <=> $2 LIMIT $5%' AND statement NOT LIKE '%pg_prepared%' AND statement NOT LIKE 'EXPLAIN%'"
            )
        assert [(r["generic_plans"], r["custom_plans"]) for r in plans] == [(0, len(vectors))]
    finally:
        await admin.execute("ALTER TABLE chunks ALTER COLUMN bank_id RESET (n_distinct)")
        await admin.execute("ANALYZE chunks")
        await admin.close()
        await pools.close()
