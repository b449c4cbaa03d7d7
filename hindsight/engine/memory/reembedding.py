"""The embedding model behind the stored vectors, and re-embedding when the configured one changes.

Similarity between vectors of two models means nothing, so a server must never search vectors made
by another model. At start-up, before serving, the model just loaded is compared with the one
recorded in the database (migration 005). When they differ, every stored vector (memory units,
document chunks, mental models) is recomputed with the new model, and the column types follow a
new dimension. All of it is one transaction, so a crash or an error part-way leaves the database
as it was, with the old model recorded; the next start tries again. Processes starting together
wait on one lock, and only the first does the work.

When only the Chinese gloss changed (turned on or off, or a new version of it: engine/memory/
vectors.py), only the vectors of texts holding Chinese differ: those alone are recomputed, through
the vector index (a few rows), while the rest are read and left as they are.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

import asyncpg

from hindsight.db.sql import Q, fill
from hindsight.embedding import vector_literal
from hindsight.engine.cpu_slots import CpuSlots
from hindsight.engine.memory.vectors import gloss_changed_only, glosses, memory_vectors

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

log = logging.getLogger("hindsight")

LOCK_KEY = 0x48454D42  # "HEMB"
BATCH = 256


class Target(NamedTuple):
    """A table with an embedding column: its key columns, its statements (pages of rows with the
    text their vectors embed, as retain.py, documents.py and mental_models.py write it, and the
    update), its vector index, and how a page's texts become vectors (`vectors(embedder, texts)`:
    memory_vectors for memories, as every path that stores one makes it)."""

    table: str
    key: tuple[str, ...]
    first: str
    after: str
    update: str
    vector_index: str | None
    vectors: Callable[[Any, Sequence[str]], Any]


def _plain(embedder, texts: Sequence[str]):
    return embedder.embed(list(texts))


TARGETS = (
    Target(
        "memories",
        ("id",),
        Q.reembed_memories_first,
        Q.reembed_memories_after,
        Q.reembed_memories_update,
        "memories_embedding_hnsw",
        memory_vectors,
    ),
    Target(
        "chunks",
        ("id",),
        Q.reembed_chunks_first,
        Q.reembed_chunks_after,
        Q.reembed_chunks_update,
        "chunks_embedding_hnsw",
        _plain,
    ),
    Target(
        "mental_models",
        ("bank_id", "id"),
        Q.reembed_mental_models_first,
        Q.reembed_mental_models_after,
        Q.reembed_mental_models_update,
        None,
        _plain,
    ),
)


async def column(conn: asyncpg.Connection, table: str) -> asyncpg.Record:
    """The embedding column's dimension (pgvector keeps it as the type modifier) and whether it
    is NOT NULL, read from the catalogue so the migrations stay the one place that sets them."""
    return await conn.fetchrow(Q.embedding_column, table)


async def reconcile(rt: Runtime) -> int:
    """Make the stored vectors the loaded model's; returns how many vectors were recomputed."""
    embedder, cpu_slots = rt.embedder, rt.cpu_slots
    async with rt.pool.acquire() as conn:
        async with conn.transaction():
            await conn.execute(Q.embedding_lock, LOCK_KEY)
            recorded = await conn.fetchrow(Q.embedding_model_recorded)
            dim = (await column(conn, "memories"))["dim"]
            if recorded is None and dim == embedder.dim:
                # First start since migration 005: the vectors stored so far came from this model.
                await _record(conn, embedder)
                return 0
            if recorded is not None and (recorded["name"], recorded["dim"]) == (embedder.name, embedder.dim):
                return 0
            if (
                recorded is not None
                and recorded["dim"] == embedder.dim
                and gloss_changed_only(recorded["name"], embedder.name)
            ):
                return await _reembed_chinese(conn, embedder, cpu_slots, recorded["name"])
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
                total += await _reembed(conn, t, embedder, cpu_slots, only=None)
            await _record(conn, embedder)
    log.warning("EMBEDDING MODEL CHANGED: re-embedded %d vectors with %s", total, embedder.name)
    return total


async def _reembed_chinese(conn: asyncpg.Connection, embedder, cpu_slots: CpuSlots, was: str) -> int:
    log.warning(
        "CHINESE GLOSS CHANGED: stored vectors were made by %s; re-embedding the texts holding Chinese with %s",
        was,
        embedder.name,
    )
    total = 0
    for t in TARGETS:
        total += await _reembed(conn, t, embedder, cpu_slots, only=glosses)
    await _record(conn, embedder)
    return total


async def _record(conn: asyncpg.Connection, embedder) -> None:
    await conn.execute(Q.embedding_model_record, embedder.name, embedder.dim)


async def _reembed(conn: asyncpg.Connection, t: Target, embedder, cpu_slots: CpuSlots, only) -> int:
    """Recompute the vectors of `t`'s rows, or (`only`, a test of a row's text) of those it keeps."""
    # The index is rebuilt once at the end, from its own definition: updating every row through
    # it costs far more. Not for some rows only (a gloss change): most rows keep their vectors.
    rebuild = t.vector_index is not None and only is None
    index_sql = await conn.fetchval(Q.index_definition, t.vector_index) if rebuild else None
    if index_sql and t.vector_index:
        await conn.execute(fill(Q.index_drop, index=t.vector_index))
    col = await column(conn, t.table)
    if col["dim"] != embedder.dim:
        # The old vectors cannot be cast to the new dimension; the rows get new ones below.
        await conn.execute(fill(Q.embedding_allow_null, table=t.table))
        await conn.execute(fill(Q.embedding_retype, table=t.table, dim=str(int(embedder.dim))))
    total = await conn.fetchval(fill(Q.table_rows, table=t.table))
    done, started = 0, time.monotonic()
    rows = await conn.fetch(t.first, BATCH)
    read = 0
    while rows:
        changed = rows if only is None else [r for r in rows if only(r["x"])]
        if changed:
            vectors = await cpu_slots.run(t.vectors, embedder, [r["x"] for r in changed])
            await conn.execute(
                t.update, *([r[c] for r in changed] for c in t.key), [vector_literal(v) for v in vectors]
            )
        done += len(changed)
        read += len(rows)
        if read % (BATCH * 40) < BATCH:
            log.warning("re-embedding %s: %d/%d read (%.0f s)", t.table, read, total, time.monotonic() - started)
        rows = await conn.fetch(t.after, BATCH, *(rows[-1][c] for c in t.key))
    if col["not_null"]:
        await conn.execute(fill(Q.embedding_require, table=t.table))
    if index_sql:
        await conn.execute(index_sql)
    log.warning("re-embedded %d rows of %s", done, t.table)
    return done
