"""The embedding model behind the stored vectors, and re-embedding when the configured one changes.

Similarity between vectors of two models means nothing, so a server must never search vectors made
by another model. At start-up, before serving, the model just loaded is compared with the one
recorded in the database (migration 005). When they differ, every stored vector (memory units,
document chunks, mental models) is recomputed with the new model, and the column types follow a
new dimension. All of it is one transaction, so a crash or an error part-way leaves the database
as it was, with the old model recorded; the next start tries again. Processes starting together
wait on one lock, and only the first does the work.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import NamedTuple

import asyncpg

from ..embedding import vector_literal

log = logging.getLogger("hindsight")

LOCK_KEY = 0x48454D42  # "HEMB"
BATCH = 256


class Target(NamedTuple):
    """A table with an embedding column: its key columns and their types, the text its vectors
    embed (as written by retain.py, documents.py and mental_models.py), and its vector index."""

    table: str
    key: tuple[tuple[str, str], ...]
    text: str
    vector_index: str | None


TARGETS = (
    Target("memories", (("id", "uuid"),), "text", "memories_embedding_hnsw"),
    Target("chunks", (("id", "uuid"),), "headline || E'\\n' || text", "chunks_embedding_hnsw"),
    Target("mental_models", (("bank_id", "text"), ("id", "text")), "source_query", None),
)


async def column(conn: asyncpg.Connection, table: str) -> asyncpg.Record:
    """The embedding column's dimension (pgvector keeps it as the type modifier) and whether it
    is NOT NULL, read from the catalogue so the migrations stay the one place that sets them."""
    return await conn.fetchrow(
        "SELECT atttypmod AS dim, attnotnull AS not_null FROM pg_attribute"
        " WHERE attrelid = $1::regclass AND attname = 'embedding'",
        table,
    )


async def reconcile(pool, embedder, cpu_slots: asyncio.Semaphore) -> int:
    """Make the stored vectors the loaded model's; returns how many vectors were recomputed."""
    async with pool.acquire() as conn:
        async with conn.transaction():
            await conn.execute("SELECT pg_advisory_xact_lock($1)", LOCK_KEY)
            recorded = await conn.fetchrow("SELECT name, dim FROM embedding_model")
            dim = (await column(conn, "memories"))["dim"]
            if recorded is None and dim == embedder.dim:
                # First start since migration 005: the vectors stored so far came from this model.
                await _record(conn, embedder)
                return 0
            if recorded is not None and (recorded["name"], recorded["dim"]) == (embedder.name, embedder.dim):
                return 0
            was = f"{recorded['name']} ({recorded['dim']} dimensions)" if recorded else f"a {dim}-dimension model"
            log.warning(
                "EMBEDDING MODEL CHANGED: stored vectors were made by %s; re-embedding everything "
                "with %s (%d dimensions) before serving",
                was,
                embedder.name,
                embedder.dim,
            )
            total = 0
            for t in TARGETS:
                total += await _reembed(conn, t, embedder, cpu_slots)
            await _record(conn, embedder)
    log.warning("EMBEDDING MODEL CHANGED: re-embedded %d vectors with %s", total, embedder.name)
    return total


async def _record(conn: asyncpg.Connection, embedder) -> None:
    await conn.execute(
        "INSERT INTO embedding_model (name, dim) VALUES ($1, $2)"
        " ON CONFLICT (singleton) DO UPDATE SET name = $1, dim = $2, recorded_at = now()",
        embedder.name,
        embedder.dim,
    )


async def _reembed(conn: asyncpg.Connection, t: Target, embedder, cpu_slots: asyncio.Semaphore) -> int:
    # The index is rebuilt once at the end, from its own definition: updating every row through
    # it costs far more.
    index_sql = (
        await conn.fetchval("SELECT pg_get_indexdef(to_regclass($1))", t.vector_index) if t.vector_index else None
    )
    if index_sql:
        await conn.execute(f"DROP INDEX {t.vector_index}")
    col = await column(conn, t.table)
    if col["dim"] != embedder.dim:
        # The old vectors cannot be cast to the new dimension; the rows get new ones below.
        await conn.execute(f"ALTER TABLE {t.table} ALTER COLUMN embedding DROP NOT NULL")
        await conn.execute(f"ALTER TABLE {t.table} ALTER COLUMN embedding TYPE vector({embedder.dim}) USING NULL")
    total = await conn.fetchval(f"SELECT count(*) FROM {t.table}")
    done, started = 0, time.monotonic()
    cols = [c for c, _ in t.key]
    n = len(cols)
    update = (
        f"UPDATE {t.table} SET embedding = v.e::vector FROM unnest("
        + ", ".join(f"${i + 1}::{typ}[]" for i, (_, typ) in enumerate(t.key))
        + f", ${n + 1}::text[]) v({', '.join(cols)}, e) WHERE "
        + " AND ".join(f"{t.table}.{c} = v.{c}" for c in cols)
    )
    # Keyset pages rather than a cursor: an open cursor would forbid the ALTER TABLE at the end.
    select = f"SELECT {', '.join(cols)}, {t.text} AS x FROM {t.table}"
    after = f" WHERE ({', '.join(cols)}) > ({', '.join(f'${i + 1}' for i in range(n))})"
    order = f" ORDER BY {', '.join(cols)} LIMIT {BATCH}"
    last: list = []
    while rows := await conn.fetch(select + (after if last else "") + order, *last):
        last = [rows[-1][c] for c in cols]
        async with cpu_slots:
            vectors = await asyncio.to_thread(embedder.embed, [r["x"] for r in rows])
        await conn.execute(update, *([r[c] for r in rows] for c in cols), [vector_literal(v) for v in vectors])
        done += len(rows)
        if done % (BATCH * 40) < BATCH:
            log.warning("re-embedding %s: %d/%d (%.0f s)", t.table, done, total, time.monotonic() - started)
    if col["not_null"]:
        await conn.execute(f"ALTER TABLE {t.table} ALTER COLUMN embedding SET NOT NULL")
    if index_sql:
        await conn.execute(index_sql)
    log.warning("re-embedded %d rows of %s", done, t.table)
    return done
