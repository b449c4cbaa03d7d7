"""Migration 021 on a database with rows: the link tables learn their bank from the rows they
link, rows of no bank (which nothing writes any more) go, keys and foreign keys gain the bank,
an OAuth grant no longer refers to its bank's row yet leaves with the bank, the tables of
migrations 017 and 018 keep their keys, an entity still goes with its last link, and the file run
again changes nothing."""

from __future__ import annotations

import asyncio
import uuid

import asyncpg

from hindsight.db.pool import MIGRATIONS_DIR, ensure_vector_extension, migrate

from conftest import fresh_database

BEFORE = 20  # the last migration before 021

ZERO = "[" + ",".join(["0.1"] * 384) + "]"


async def _fill(conn) -> dict:
    ids = {k: uuid.uuid4() for k in ("a1", "a2", "b1", "op_a", "op_none", "upload", "doc", "chunk", "grant")}
    await conn.execute("INSERT INTO banks (id) VALUES ('a'), ('b')")
    for key, bank in (("a1", "a"), ("a2", "a"), ("b1", "b")):
        await conn.execute(
            "INSERT INTO memories (id, bank_id, text, kind, embedding, source_id) VALUES ($1, $2, $3, 'world', $4::vector, $3)",
            ids[key],
            bank,
            f"memory {key}",
            ZERO,
        )
    entity = await conn.fetchval("INSERT INTO entities (bank_id, name, canonical) VALUES ('a', 'X', 'x') RETURNING id")
    await conn.execute(
        "INSERT INTO memory_entities (entity_id, memory_id) VALUES ($1, $2), ($1, $3)", entity, ids["a1"], ids["a2"]
    )
    await conn.execute("INSERT INTO fact_sources (fact_id, raw_id) VALUES ($1, $2)", ids["a2"], ids["a1"])
    await conn.execute(
        "INSERT INTO memory_versions (bank_id, memory_id, version, action, actor) VALUES ('a', $1, 1, 'edited', 't')",
        ids["a1"],
    )
    await conn.execute("INSERT INTO operations (id, bank_id, type) VALUES ($1, 'a', 'document_import')", ids["op_a"])
    await conn.execute("INSERT INTO operations (id, type) VALUES ($1, 'reembed')", ids["op_none"])
    await conn.execute(
        "INSERT INTO document_uploads (id, operation_id, name, data) VALUES ($1, $2, 'f.txt', 'x')",
        ids["upload"],
        ids["op_a"],
    )
    await conn.execute(
        "INSERT INTO llm_usage (bank_id, operation, model) VALUES ('a', 'reflect', 'm'), (NULL, 'probe', 'm')"
    )
    await conn.execute(
        "INSERT INTO documents (id, bank_id, source_name, source_type, content_hash, size_bytes, chunk_size)"
        " VALUES ($1, 'b', 'n', 'text', 'h', 1, 100)",
        ids["doc"],
    )
    await conn.execute(
        "INSERT INTO chunks (id, bank_id, document_id, position, text, embedding) VALUES ($1, 'b', $2, 0, 't', $3::vector)",
        ids["chunk"],
        ids["doc"],
        ZERO,
    )
    await conn.execute("INSERT INTO oauth_clients (client_id, metadata, kind) VALUES ('c', '{}', 'registered')")
    await conn.execute(
        "INSERT INTO oauth_grants (id, bank_id, client_id, access, admin_fingerprint) VALUES ($1, 'b', 'c', 'read', 'f')",
        ids["grant"],
    )
    # Tables of migrations 017 and 018, made with their bank in every key: kept as they are.
    await conn.execute(
        "INSERT INTO mental_models (bank_id, id, name, source_query) VALUES ('b', 'm', 'M', 'q');"
        "INSERT INTO knowledge_nodes (bank_id, id, kind, name, mental_model_id) VALUES ('b', 'p', 'page', 'P', 'm');"
        "INSERT INTO directives (bank_id, id, name, content) VALUES ('b', gen_random_uuid(), 'd', 'c');"
        "INSERT INTO audit_logs (bank_id, id, started_at, duration_ms, transport, action, status, outcome, request_id)"
        " VALUES ('', gen_random_uuid(), now(), 1, 'http', 'list_banks', 200, 'ok', 'r')"
    )
    return ids


async def _keys(conn) -> list[str]:
    return sorted(
        f"{r['conrelid']}: {r['def']}"
        for r in await conn.fetch(
            "SELECT conrelid::regclass::text AS conrelid, pg_get_constraintdef(oid) AS def FROM pg_constraint "
            "WHERE connamespace = current_schema()::regnamespace AND contype IN ('p', 'u', 'f')"
        )
    )


def test_021_upgrades_a_database_with_rows(pg_url):
    url = fresh_database(pg_url, "keys_021")

    async def run() -> None:
        await ensure_vector_extension(url)
        await migrate(url, until=BEFORE)
        conn = await asyncpg.connect(url)
        try:
            ids = await _fill(conn)
            await migrate(url)
            links = await conn.fetch("SELECT bank_id, memory_id FROM memory_entities")
            assert {(r["bank_id"], r["memory_id"]) for r in links} == {("a", ids["a1"]), ("a", ids["a2"])}
            assert await conn.fetchval("SELECT bank_id FROM fact_sources") == "a"
            assert await conn.fetchval("SELECT bank_id FROM document_uploads") == "a"
            assert await conn.fetchval("SELECT count(*) FROM operations") == 1  # the one of no bank is gone
            assert await conn.fetchval("SELECT count(*) FROM llm_usage") == 1
            keys = await _keys(conn)
            assert "memories: PRIMARY KEY (id, bank_id)" in keys
            assert (
                "memory_entities: FOREIGN KEY (memory_id, bank_id) REFERENCES memories(id, bank_id) ON DELETE CASCADE"
                in keys
            )
            assert (
                "chunks: FOREIGN KEY (document_id, bank_id) REFERENCES documents(id, bank_id) ON DELETE CASCADE" in keys
            )
            assert not any(k.startswith("oauth_grants: FOREIGN KEY (bank_id)") for k in keys)
            assert "knowledge_nodes: PRIMARY KEY (bank_id, id)" in keys
            assert (
                "knowledge_nodes: FOREIGN KEY (bank_id, mental_model_id) REFERENCES mental_models(bank_id, id)"
                " ON DELETE CASCADE" in keys
            )
            assert await conn.fetchval("SELECT count(*) FROM directives") == 1
            assert await conn.fetchval("SELECT count(*) FROM audit_logs") == 1

            # Deleting a memory still takes its links and versions with it, by the new keys.
            await conn.execute("DELETE FROM memories WHERE bank_id = 'a' AND id = $1", ids["a1"])
            assert await conn.fetchval("SELECT count(*) FROM memory_entities") == 1
            assert await conn.fetchval("SELECT count(*) FROM fact_sources") == 0
            assert await conn.fetchval("SELECT count(*) FROM memory_versions") == 0
            # The entity goes with its last link, found within its bank (017's trigger, as 021 has it).
            assert await conn.fetchval("SELECT count(*) FROM entities") == 1
            await conn.execute("DELETE FROM memories WHERE bank_id = 'a' AND id = $1", ids["a2"])
            assert await conn.fetchval("SELECT count(*) FROM entities") == 0
            # A page goes with its mental model, by the key of migration 018.
            await conn.execute("DELETE FROM mental_models WHERE bank_id = 'b' AND id = 'm'")
            assert await conn.fetchval("SELECT count(*) FROM knowledge_nodes") == 0

            # Run again, the file changes nothing.
            sql = next(MIGRATIONS_DIR.glob("021_*.sql")).read_text()
            async with conn.transaction():
                await conn.execute(sql)
            assert await _keys(conn) == keys
        finally:
            await conn.close()

    asyncio.run(run())
