"""Read replicas with read-your-writes (db/replicas.py), on a real primary and its streaming
standby: two engines stand for two server processes sharing the database; a write through one
is seen by a read through the other at once, whether the standby has replayed it or not; a
standby that stops, is paused past the lag bound, or is promoted is skipped without failing a
read; and every read the facade sends to a replica runs there (none writes)."""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest

from hindsight.config import load_settings
from hindsight.engine.access.keys import OPEN
from hindsight.engine.audit.schemas import AuditQuery, AuditStatsQuery
from hindsight.engine.banks.usage import LLMRequestQuery, LLMStatsQuery
from hindsight.engine.directives.schemas import DirectiveCreate, DirectiveQuery
from hindsight.engine.facade import Engine
from hindsight.engine.knowledge.documents import DocumentListQuery
from hindsight.engine.knowledge.pages import KnowledgeSearch, PageCreate
from hindsight.engine.memory.graph import EntityGraphQuery, MemoryGraphQuery
from hindsight.engine.memory.records import EntityQuery, MemoryQuery
from hindsight.engine.memory.schemas import RetainItem
from hindsight.engine.memory.sources import SourceQuery
from hindsight.engine.memory.tags import TagQuery
from hindsight.engine.memory.timeseries import TimeseriesQuery
from hindsight.engine.reflection.mental_models import MentalModelQuery
from hindsight.engine.reflection.reflect import ReflectRequest
from hindsight.engine.search.schemas import RecallRequest
from hindsight.metrics import REGISTRY
from hindsight.testing import StreamingPair


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    p = StreamingPair(tmp_path_factory.mktemp("replicas")).start()
    yield p
    p.stop()


@pytest.fixture(scope="module")
async def engines(pair):
    """Two engines on the pair, as two server processes would be."""
    a = await _engine(pair)
    try:
        b = await _engine(pair)
    except BaseException:
        await a.close()
        raise
    yield a, b
    await a.close()
    await b.close()


def _counter(name: str, label: str, value: str) -> float:
    return REGISTRY.get_sample_value(f"hindsight_db_{name}_total", {label: value}) or 0.0


class Reads:
    """hindsight_db_reads and hindsight_db_read_fallbacks since it was made."""

    def __init__(self):
        self.start = self._now()

    def _now(self) -> dict:
        return {
            "replica": _counter("reads", "target", "replica-1"),
            "primary": _counter("reads", "target", "primary"),
            **{r: _counter("read_fallbacks", "reason", r) for r in ("behind", "lagging", "down", "promoted", "failed")},
        }

    def since(self) -> dict:
        now = self._now()
        return {k: now[k] - self.start[k] for k in now if now[k] != self.start[k]}


async def _engine(pair: StreamingPair, **env) -> Engine:
    settings = load_settings(
        {
            "HINDSIGHT_API_DATABASE_URL": pair.url("primary"),
            "HINDSIGHT_API_READ_DATABASE_URL": pair.url("standby"),
            **{f"HINDSIGHT_API_{k.upper()}": str(v) for k, v in env.items()},
        }
    )
    engine = Engine(settings)
    await engine.start(run_scheduler=False)
    return engine


def _item(bank: str, token: str) -> RetainItem:
    return RetainItem(content=f"Entry {token} of bank {bank}: the ferry left at dawn.", document_id=token)


async def _found(engine: Engine, bank: str, token: str) -> bool:
    result = await engine.recall(OPEN, bank, RecallRequest(query=f"Entry {token}", mode="keyword"))
    return any(token in m.text for m in result.results)


async def _replayed(pair: StreamingPair, engine: Engine) -> None:
    """Until the standby is back, has replayed all the primary has, and the sampler has seen it."""
    target = pair.psql("primary", "SELECT pg_current_wal_insert_lsn() - '0/0'::pg_lsn")
    replica = engine.rt.reads.replicas[0]
    deadline = time.monotonic() + 30
    while not (replica.usable(time.monotonic(), 1.0) is None and replica.replayed >= int(target) and replica.lag == 0):
        assert time.monotonic() < deadline, "the standby did not catch up"
        await asyncio.sleep(0.1)


async def test_a_write_through_one_process_is_read_through_another(pair, engines):
    a, b = engines
    quiet, busy = "rq_" + uuid.uuid4().hex[:8], "rb_" + uuid.uuid4().hex[:8]
    await a.retain(OPEN, quiet, [_item(quiet, "q1")])
    await _replayed(pair, b)
    pair.psql("standby", "SELECT pg_wal_replay_pause()")
    try:
        # The standby replays nothing more: the write through `a` is not on it, and `b`
        # reads that bank from the primary; the quiet bank's reads stay on the standby.
        await a.retain(OPEN, busy, [_item(busy, "b1")])
        reads = Reads()
        assert await _found(b, busy, "b1")
        assert reads.since() == {"primary": 1, "behind": 1}
        reads = Reads()
        assert await _found(b, quiet, "q1")
        assert reads.since() == {"replica": 1}
    finally:
        pair.psql("standby", "SELECT pg_wal_replay_resume()")
    await _replayed(pair, b)
    reads = Reads()
    assert await _found(b, busy, "b1")
    assert reads.since() == {"replica": 1}


async def test_a_replica_behind_past_the_bound_is_skipped(pair, engines):
    engine = engines[0]
    engine.rt.reads.max_lag = 1.0  # HINDSIGHT_API_READ_MAX_LAG=1
    try:
        bank = "rl_" + uuid.uuid4().hex[:8]
        await engine.retain(OPEN, bank, [_item(bank, "l1")])
        await _replayed(pair, engine)
        pair.psql("standby", "SELECT pg_wal_replay_pause()")
        try:
            other = "ro_" + uuid.uuid4().hex[:8]
            await engine.retain(OPEN, other, [_item(other, "o1")])  # the primary moves on
            await asyncio.sleep(2.5)
            reads = Reads()
            assert await _found(engine, bank, "l1")  # this bank is on the standby, which lags too far
            assert reads.since() == {"primary": 1, "lagging": 1}
            assert REGISTRY.get_sample_value("hindsight_db_replica_lag_seconds", {"replica": "replica-1"}) > 1
        finally:
            pair.psql("standby", "SELECT pg_wal_replay_resume()")
    finally:
        engine.rt.reads.max_lag = engine.settings.read_max_lag


async def test_a_replica_that_stops_is_skipped_and_taken_back(pair, engines):
    engine = engines[0]
    bank = "rs_" + uuid.uuid4().hex[:8]
    await engine.retain(OPEN, bank, [_item(bank, "s1")])
    await _replayed(pair, engine)
    assert await _found(engine, bank, "s1")  # pools open on the standby
    pair.pg_ctl("standby", "stop")
    try:
        reads = Reads()
        for _ in range(3):
            assert await _found(engine, bank, "s1")
        seen = reads.since()
        assert seen["primary"] == 3 and seen.get("failed", 0) + seen.get("down", 0) == 3, seen
    finally:
        pair.pg_ctl("standby", "start")
    await _replayed(pair, engine)
    reads = Reads()
    assert await _found(engine, bank, "s1")
    assert reads.since() == {"replica": 1}


async def test_every_replica_read_runs_there(pair, engines):
    """The reads the facade sends to a replica, each once: none may write (a standby refuses
    it), so none falls back."""
    engine = engines[1]
    bank = "rr_" + uuid.uuid4().hex[:8]
    result = await engine.retain(OPEN, bank, [_item(bank, "r1"), _item(bank, "r2")])
    memory_id = result.memory_ids[0]
    directive = await engine.create_directive(OPEN, bank, DirectiveCreate(name="tone", content="Answer briefly."))
    page = await engine.create_knowledge_page(OPEN, bank, PageCreate(name="Ferries", content="The ferry left at dawn."))
    await _replayed(pair, engine)
    reads = Reads()
    assert await _found(engine, bank, "r1")
    assert (await engine.list_memories(OPEN, bank, MemoryQuery())).total == 3  # the two, and the page retained
    assert (await engine.get_memory(OPEN, bank, memory_id)).id == memory_id
    await engine.memory_history(OPEN, bank, memory_id)
    await engine.memory_lineage(OPEN, bank, memory_id)
    await engine.list_entities(OPEN, bank, EntityQuery())
    await engine.get_memories(OPEN, bank, [memory_id])
    await engine.count_bank(OPEN, bank)
    await engine.usage(OPEN, bank)
    await engine.list_sources(OPEN, bank, SourceQuery())
    await engine.list_documents(OPEN, bank, DocumentListQuery())
    await engine.list_mental_models(OPEN, bank, MentalModelQuery())
    reflection = await engine.reflect(OPEN, bank, ReflectRequest(query="ferry"))
    assert reflection.mode == "extractive" and "ferry" in reflection.answer
    chunks = [chunk async for chunk in await engine.export_bank(OPEN, bank)]
    assert chunks
    # Directives, webhooks, the knowledge base, graphs, tags, timeseries, the LLM request log and
    # the bank's audit log.
    assert (await engine.list_directives(OPEN, bank, DirectiveQuery())).total == 1
    assert (await engine.get_directive(OPEN, bank, directive.directive_id)).name == "tone"
    await engine.list_webhooks(OPEN, bank)
    assert (await engine.knowledge_tree(OPEN, bank)).nodes
    assert (await engine.get_knowledge_page(OPEN, bank, page.page_id)).content == "The ferry left at dawn."
    await engine.search_knowledge(OPEN, bank, KnowledgeSearch(query="ferry"))
    await engine.export_knowledge(OPEN, bank)
    await engine.entity_graph(OPEN, bank, EntityGraphQuery())
    assert (await engine.memory_graph(OPEN, bank, MemoryGraphQuery())).nodes
    await engine.list_tags(OPEN, bank, TagQuery())
    await engine.memories_timeseries(OPEN, bank, TimeseriesQuery())
    await engine.list_llm_requests(OPEN, bank, LLMRequestQuery())
    await engine.llm_request_stats(OPEN, bank, LLMStatsQuery())
    await engine.list_audit_logs(OPEN, bank, AuditQuery())
    await engine.audit_stats(OPEN, bank, AuditStatsQuery())
    [chunk async for chunk in await engine.export_audit_logs(OPEN, bank, AuditQuery())]
    seen = reads.since()
    assert seen == {"replica": 30}, seen


async def test_a_promoted_replica_is_no_longer_read_as_one(pair, engines):
    """A standby promoted (a failover) is skipped as a replica; reads go to the primary URL. Last:
    the pair has no standby after it."""
    engine = engines[0]
    bank = "rp_" + uuid.uuid4().hex[:8]
    await engine.retain(OPEN, bank, [_item(bank, "p1")])
    await _replayed(pair, engine)
    pair.pg_ctl("standby", "promote")
    deadline = time.monotonic() + 30
    while engine.rt.reads.replicas[0].standby:
        assert time.monotonic() < deadline
        await asyncio.sleep(0.1)
    reads = Reads()
    assert await _found(engine, bank, "p1")
    assert reads.since() == {"primary": 1, "promoted": 1}
