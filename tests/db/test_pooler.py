"""Through PgBouncer in transaction pooling mode (HINDSIGHT_API_DB_POOL_MODE=transaction), with
two server connections for the engine's ten, so that one client's transactions meet different
server connections: no statement may count on one prepared before, nor on a session setting;
migrations and their session advisory lock go over the direct URL. A server not told it is
behind such a pooler stops at start with what to set."""

from __future__ import annotations

import asyncio
import io
import uuid

import asyncpg
import pytest

from hindsight.config import load_settings
from hindsight.db.pool import DatabaseError
from hindsight.engine.access.keys import OPEN
from hindsight.engine.facade import Engine
from hindsight.engine.memory.curation import MemoryUpdate
from hindsight.engine.memory.records import MemoryQuery
from hindsight.engine.memory.schemas import RetainItem
from hindsight.engine.reflection.reflect import ReflectRequest
from hindsight.engine.search.schemas import RecallRequest
from hindsight.testing import PgBouncer, StreamingPair


@pytest.fixture(scope="module")
def pooled(tmp_path_factory):
    pair = StreamingPair(tmp_path_factory.mktemp("pooled"), standby=False).start()
    bouncer = PgBouncer(pair, pool_size=2)
    try:
        bouncer.start()
    except FileNotFoundError as exc:
        pair.stop()
        pytest.skip(f"{exc}; scripts/test.sh installs Debian's when run as root")
    yield pair, bouncer
    bouncer.stop()
    pair.stop()


def _settings(pair: StreamingPair, bouncer: PgBouncer, **env):
    return load_settings(
        {
            "HINDSIGHT_API_DATABASE_URL": bouncer.url(),
            "HINDSIGHT_API_MIGRATION_DATABASE_URL": pair.url("primary"),
            **{f"HINDSIGHT_API_{k.upper()}": str(v) for k, v in env.items()},
        }
    )


async def test_a_server_not_told_of_the_pooler_says_what_to_set(pooled):
    engine = Engine(_settings(*pooled))
    try:
        with pytest.raises(DatabaseError, match="HINDSIGHT_API_DB_POOL_MODE=transaction"):
            await engine.start(run_scheduler=False)
    finally:
        await engine.close()


async def test_the_engine_works_through_a_transaction_pooler(pooled):
    pair, bouncer = pooled
    engine = Engine(_settings(pair, bouncer, db_pool_mode="transaction", db_pool_max=10))
    await engine.start(run_scheduler=False)
    try:
        # The session settings are the database's defaults, so every pooled session has them.
        conn = await asyncpg.connect(bouncer.url(), statement_cache_size=0)
        try:
            for _ in range(4):
                assert await conn.fetchval("SELECT current_setting('hnsw.iterative_scan')") == "relaxed_order"
        finally:
            await conn.close()

        async def bank_work(i: int) -> None:
            bank = f"pool_{i}_{uuid.uuid4().hex[:6]}"
            items = [
                RetainItem(content=f"Note {n} of {bank}: the orchard flooded in May 2023.", document_id=f"d{n}")
                for n in range(5)
            ]
            result = await engine.retain(OPEN, bank, items)
            assert result.units == 5
            for mode in ("hybrid", "keyword", "vector"):
                found = await engine.recall(OPEN, bank, RecallRequest(query="orchard flooded in May 2023", mode=mode))
                assert {m.text for m in found.results} == {it.content for it in items}, mode
            listed = await engine.list_memories(OPEN, bank, MemoryQuery())
            assert listed.total == 5
            edited = await engine.update_memory(OPEN, bank, result.memory_ids[0], MemoryUpdate(text="Edited note."))
            assert edited.changed
            assert (await engine.reflect(OPEN, bank, ReflectRequest(query="orchard"))).mode == "extractive"
            archive = b"".join([chunk async for chunk in await engine.export_bank(OPEN, bank)])
            imported = await engine.import_bank(OPEN, bank + "_copy", io.BytesIO(archive))
            assert imported.imported["memory"] == 5
            later = await engine.retain_later(OPEN, bank, [RetainItem(content=f"Later note of {bank}.")])
            op = await engine.worker.wait(bank, later.operation_id, 60)
            assert op.status == "succeeded", op

        await asyncio.gather(*(bank_work(i) for i in range(8)))
    finally:
        await engine.close()
