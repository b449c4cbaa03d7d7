"""The engine: one async method per operation, each taking the calling principal first.

MCP tools, REST routes and the CLI are thin adapters over these methods, so validation,
authorisation and limits are enforced once, whichever face a request came through.
"""

from __future__ import annotations

import asyncio
import logging
import time

import asyncpg

from hindsight.config import Settings
from hindsight.db import hugepages
from hindsight.db.embedded import EmbeddedPostgres
from hindsight.db.pool import DatabaseError, Pools, ensure_vector_extension, migrate, redact
from hindsight.db.selfcheck import self_check
from hindsight.db.sql import Q
from hindsight.db.watchdog import Watchdog
from hindsight.embedding import load_embedder
from hindsight.engine import banks, curation, embedding_model, keys, memories, portable, rag, retained
from hindsight.engine import documents as docs
from hindsight.engine import mental_models as mm
from hindsight.engine import operations as ops
from hindsight.engine.banks import check_bank_id
from hindsight.engine.cpu_slots import CpuSlots
from hindsight.engine.curation import actor_of
from hindsight.engine.errors import InvalidArgument, NotFound, unavailable
from hindsight.engine.keys import Principal
from hindsight.engine.mental_models import (
    MentalModel,
    MentalModelCreate,
    MentalModelDeleted,
    MentalModelList,
    MentalModelOperation,
    MentalModelQuery,
    MentalModelUpdate,
    MentalModelVersion,
)
from hindsight.engine.models import (
    ApiKey,
    ApiKeyCreate,
    ApiKeyList,
    Bank,
    BankCounts,
    BankCreate,
    BankCreated,
    BankDeleted,
    BankList,
    BankUpdate,
    Memory,
    Operation,
    OperationList,
    OperationQuery,
    RecallRequest,
    RecallResult,
    RetainItem,
    RetainResult,
)
from hindsight.engine.recall import recall as _recall
from hindsight.engine.reflect import ReflectRequest, ReflectResult, empty_bank_reflection
from hindsight.engine.reflect import reflect as _reflect
from hindsight.engine.retain import RetainAccepted, extraction_awaited, retain_later
from hindsight.engine.retain import retain as _retain
from hindsight.engine.runtime import CPU_SLOTS, BankGates, BankWrites, Runtime, lane_width
from hindsight.engine.scheduler import Scheduler
from hindsight.engine.sizes import BankSizes
from hindsight.engine.tenant import TenantExtension, load_extension
from hindsight.engine.usage import get_bank_usage
from hindsight.engine.worker import Worker
from hindsight.llm import LLM
from hindsight.metrics import OPERATIONS, POOL

log = logging.getLogger("hindsight")

# How long the readiness probe waits for the database: a hung database must not hang the probe.
PING_TIMEOUT = 2.0


class Engine:
    # Set by start(); a method that needs them is only called on a started engine (`started`).
    rt: Runtime  # what the concept modules run on (engine/runtime.py)
    worker: Worker
    tenant: TenantExtension

    def __init__(self, settings: Settings):
        self.settings = settings
        self.started = False
        self.embedded: EmbeddedPostgres | None = None
        self.watchdog: Watchdog | None = None
        self.scheduler: Scheduler | None = None
        self.database_label = ""
        self.database_url = ""
        self.started_at = time.time()

    # ---- life cycle -------------------------------------------------------------------
    async def start(self, run_scheduler: bool = True) -> None:
        s = self.settings
        if s.database_url:
            url = s.database_url
            self.database_label = f"external PostgreSQL at {redact(url)}"
        else:
            self.embedded = EmbeddedPostgres(s.data_dir, s.embedded_db_cache_mb)
            url = await asyncio.to_thread(self.embedded.start)
            self.database_label = f"embedded PostgreSQL in {self.embedded.pgdata}"
        log.warning("DATABASE: using %s", self.database_label)
        try:
            await ensure_vector_extension(url, update=self.embedded is not None)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise DatabaseError(f"cannot connect to the {self.database_label}: {exc}") from None
        await self_check(url, self.database_label, self.embedded.log_file if self.embedded else None)
        if self.embedded is not None:
            await hugepages.report(url)
        applied = await migrate(url)
        if applied:
            log.info("migrations applied: %s", ", ".join(applied))
        self.pools = pools = await Pools.open(url, s.db_pool_min, s.db_pool_max, s.db_backend_nice)
        pool = pools.shared
        self.database_url = url
        if self.embedded is not None:
            self.watchdog = Watchdog(self.embedded, self._database_restarted)
            self.watchdog.start()
        embedder = await asyncio.to_thread(
            load_embedder, s.embedding_model, s.embedding_model_dir, s.embedding_threads, s.embedding_quantize
        )
        embedder.share_queries(s.workers)
        log.info("embedding model %s (%d dimensions)", embedder.name, embedder.dim)
        llm = LLM(s, pool)
        self.worker = Worker(s)
        self.rt = Runtime(
            settings=s,
            pool=pool,
            planned=pools.planned,
            writes=BankWrites(pool),
            lanes=BankGates(lane_width(s)),
            bulk=BankGates(CPU_SLOTS),
            exports=BankGates(1),
            embedder=embedder,
            llm=llm,
            queue=self.worker,
            cpu_slots=CpuSlots(CPU_SLOTS),
            sizes=BankSizes(pool),
        )
        self.worker.attach(self.rt)
        await embedding_model.reconcile(self.rt)
        self.tenant = load_extension(s.tenant_extension, self.rt)
        await llm.warm()
        log.warning("LLM: %s", self.llm_label)
        self.started = True
        if run_scheduler:
            self.scheduler = Scheduler(self.rt, self.worker)
            self.scheduler.start()

    @property
    def llm_label(self) -> str:
        rt = getattr(self, "rt", None)  # also asked while start() runs
        if rt is None or not rt.llm.enabled:
            return "offline mode (no LLM configured): retain stores text units, reflect is extractive"
        return f"retain with {rt.llm.model_name('retain') or 'no LLM'}, reflect with {rt.llm.model_name('reflect') or 'no LLM'}"

    async def _database_restarted(self, url: str) -> None:
        """The embedded PostgreSQL is back: its old connections are dead (asyncpg would find
        out one failed request at a time), so have them all replaced."""
        if url != self.database_url:
            log.warning("embedded PostgreSQL now listens at %s (was %s)", redact(url), redact(self.database_url))
            self.pools.repoint(url)
            self.database_url = url
        await self.pools.expire_connections()

    async def close(self) -> None:
        if self.watchdog is not None:  # first: nothing may restart the database being stopped
            await self.watchdog.stop()
            self.watchdog = None
        if self.scheduler is not None:
            await self.scheduler.stop()
            self.scheduler = None
        if self.started:
            await self.pools.close()
            self.started = False
        if self.embedded is not None:
            await asyncio.to_thread(self.embedded.stop)
            self.embedded = None

    async def database_problem(self, timeout: float = PING_TIMEOUT) -> str | None:
        """Why requests cannot be served now, or None when the database answers a ping within
        `timeout` seconds (the readiness probe, /health/ready)."""
        if not self.started:
            return "the server is starting or stopping"
        if self.watchdog is not None and self.watchdog.restarting:
            return "the embedded PostgreSQL is restarting"
        try:
            for pool in self.pools:  # both: a recall needs a connection of each
                async with pool.acquire(timeout=timeout) as conn:
                    try:
                        await conn.fetchval(Q.database_ping, timeout=timeout)
                    except TimeoutError:
                        conn.terminate()  # its query is stuck in a hung database; release would wait
                        raise
        except TimeoutError:
            problem = f"the database did not answer within {timeout:g} s"
        except Exception as exc:
            error = unavailable(exc)
            problem = error.message if error is not None else f"the database ping failed ({type(exc).__name__}: {exc})"
        else:
            return None
        # Connections from before the outage may be dead without asyncpg knowing yet (a server
        # that went away without closing them); have them all replaced rather than fail one
        # request each once it is back.
        await self.pools.expire_connections()
        return problem

    async def observe(self) -> None:
        """Set the metrics that are a state of the database or the pool (metrics.py), read now.
        While the database cannot be reached the operations gauge is left empty and the rest is
        still served: the request counters (503s among them) matter most then."""
        if not self.started:
            return
        try:
            async with self.rt.pool.acquire() as conn:
                rows = await conn.fetch(Q.operations_pending_by_type)
        except Exception as exc:
            if unavailable(exc) is None:
                raise
            rows = []
        OPERATIONS.clear()
        for r in rows:
            OPERATIONS.labels(r["type"], r["status"]).set(r["n"])
        POOL.labels("open").set(sum(pool.get_size() for pool in self.pools))
        POOL.labels("idle").set(sum(pool.get_idle_size() for pool in self.pools))
        POOL.labels("max").set(sum(pool.get_max_size() for pool in self.pools))

    async def authenticate(self, authorization: str | None) -> Principal:
        return await self.tenant.principal(authorization)

    # ---- banks --------------------------------------------------------------------------
    async def create_bank(self, who: Principal, req: BankCreate) -> BankCreated:
        """Admins create any bank; a scoped key only the banks it may write, as its first retain
        there would (Hindsight's integrations call create_bank at start-up)."""
        who.require_bank(req.bank_id, write=True)
        bank, created = await banks.create_bank(self.rt, req)
        return BankCreated(bank=bank, created=created)

    async def list_banks(self, who: Principal) -> BankList:
        return BankList(banks=await banks.list_banks(self.rt, who.visible_banks()))

    async def get_bank(self, who: Principal, bank_id: str) -> Bank:
        self.require(who, bank_id)
        return await banks.get_bank(self.rt, bank_id)

    async def update_bank(self, who: Principal, bank_id: str, req: BankUpdate) -> Bank:
        self.require(who, bank_id, write=True)
        return await banks.update_bank(self.rt, bank_id, req)

    async def count_bank(self, who: Principal, bank_id: str) -> BankCounts:
        async with self._reading(who, bank_id):
            return await banks.count_bank(self.rt, bank_id)

    async def delete_bank(self, who: Principal, bank_id: str) -> BankDeleted:
        check_bank_id(bank_id)
        who.require_admin()
        n = await banks.delete_bank(self.rt, bank_id)
        return BankDeleted(deleted=True, bank_id=bank_id, memories_deleted=n)

    # ---- memories -------------------------------------------------------------------
    async def retain(self, who: Principal, bank_id: str, items: list[RetainItem], wait: bool = False) -> RetainResult:
        self.require(who, bank_id, write=True)
        result = await _retain(self.rt, bank_id, items, actor=actor_of(who.key_id, who.kind))
        return await extraction_awaited(self.rt, bank_id, result) if wait else result

    async def retain_later(self, who: Principal, bank_id: str, items: list[RetainItem]) -> RetainAccepted:
        """Accept now (items committed with their operation), store in the background."""
        self.require(who, bank_id, write=True)
        return await retain_later(self.rt, bank_id, items, actor=actor_of(who.key_id, who.kind))

    async def recall(self, who: Principal, bank_id: str, req: RecallRequest) -> RecallResult:
        self.require(who, bank_id)
        if req.max_tokens > self.settings.max_recall_tokens:
            raise InvalidArgument(
                f"max_tokens: {req.max_tokens} exceeds the limit of {self.settings.max_recall_tokens}", "max_tokens"
            )
        async with self.rt.lanes.hold(bank_id):
            return await _recall(self.rt, bank_id, req)

    async def list_memories(self, who: Principal, bank_id: str, query: memories.MemoryQuery) -> memories.MemoryList:
        async with self._reading(who, bank_id):
            return await memories.list_memories(self.rt, bank_id, query)

    async def get_retained_document(self, who: Principal, bank_id: str, document_id: str) -> retained.RetainedDocument:
        self.require(who, bank_id)
        return await retained.get_retained_document(self.rt, bank_id, document_id)

    async def list_retained_documents(
        self, who: Principal, bank_id: str, query: retained.RetainedQuery
    ) -> tuple[list[retained.RetainedDocument], int]:
        async with self._reading(who, bank_id):
            return await retained.list_retained_documents(self.rt, bank_id, query)

    async def list_document_units(
        self, who: Principal, bank_id: str, document_id: str, limit: int, offset: int
    ) -> tuple[list[Memory], int]:
        async with self._reading(who, bank_id):
            return await retained.list_document_units(self.rt, bank_id, document_id, limit, offset)

    async def delete_retained_document(self, who: Principal, bank_id: str, document_id: str) -> int:
        self.require(who, bank_id, write=True)
        return await retained.delete_retained_document(self.rt, bank_id, document_id)

    async def get_memory(self, who: Principal, bank_id: str, memory_id: str) -> Memory:
        self.require(who, bank_id)
        return await memories.get_memory(self.rt, bank_id, memory_id)

    async def memory_lineage(self, who: Principal, bank_id: str, memory_id: str) -> memories.Lineage:
        self.require(who, bank_id)
        return await memories.get_lineage(self.rt, bank_id, memory_id)

    async def list_entities(self, who: Principal, bank_id: str, query: memories.EntityQuery) -> memories.EntityList:
        async with self._reading(who, bank_id):
            return await memories.list_entities(self.rt, bank_id, query)

    async def get_memories(self, who: Principal, bank_id: str, memory_ids: list[str]) -> list[Memory]:
        """The bank's memories among `memory_ids`, in that order (those not found are left out)."""
        async with self._reading(who, bank_id):
            return await memories.get_memories(self.rt, bank_id, memory_ids)

    async def delete_memory(self, who: Principal, bank_id: str, memory_id: str) -> memories.MemoryDeleted:
        self.require(who, bank_id, write=True)
        await memories.delete_memory(self.rt, bank_id, memory_id, actor_of(who.key_id, who.kind))
        return memories.MemoryDeleted(deleted=True, memory_id=memory_id)

    async def update_memory(
        self, who: Principal, bank_id: str, memory_id: str, req: curation.MemoryUpdate
    ) -> curation.MemoryUpdated:
        """Edit, invalidate or restore one memory; the change is recorded in its history."""
        self.require(who, bank_id, write=True)
        return await curation.update_memory(self.rt, bank_id, memory_id, req, actor_of(who.key_id, who.kind))

    async def invalidate_memory(
        self, who: Principal, bank_id: str, memory_id: str, reason: str | None = None
    ) -> curation.MemoryUpdated:
        self.require(who, bank_id, write=True)
        req = curation.MemoryUpdate(state="invalidated", reason=reason)
        return await curation.update_memory(self.rt, bank_id, memory_id, req, actor_of(who.key_id, who.kind))

    async def memory_history(self, who: Principal, bank_id: str, memory_id: str) -> curation.MemoryHistory:
        self.require(who, bank_id)
        return await curation.memory_history(self.rt, bank_id, memory_id)

    async def reflect(self, who: Principal, bank_id: str, req: ReflectRequest) -> ReflectResult:
        self.require(who, bank_id)
        if not await self._bank_exists(bank_id):
            return empty_bank_reflection(bank_id, req)
        return await _reflect(self.rt, bank_id, req)

    # ---- mental models ------------------------------------------------------------------
    async def create_mental_model(self, who: Principal, bank_id: str, req: MentalModelCreate) -> MentalModelOperation:
        self.require(who, bank_id, write=True)
        return await mm.create_mental_model(self.rt, bank_id, req)

    async def list_mental_models(self, who: Principal, bank_id: str, req: MentalModelQuery) -> MentalModelList:
        self.require(who, bank_id)
        return await mm.list_mental_models(self.rt, bank_id, req)

    async def get_mental_model(self, who: Principal, bank_id: str, model_id: str) -> MentalModel:
        self.require(who, bank_id)
        return await mm.get_mental_model(self.rt, bank_id, model_id)

    async def mental_model_history(self, who: Principal, bank_id: str, model_id: str) -> list[MentalModelVersion]:
        self.require(who, bank_id)
        return await mm.get_mental_model_history(self.rt, bank_id, model_id)

    async def update_mental_model(
        self, who: Principal, bank_id: str, model_id: str, req: MentalModelUpdate
    ) -> MentalModel:
        self.require(who, bank_id, write=True)
        return await mm.update_mental_model(self.rt, bank_id, model_id, req)

    async def delete_mental_model(self, who: Principal, bank_id: str, model_id: str) -> MentalModelDeleted:
        self.require(who, bank_id, write=True)
        await mm.delete_mental_model(self.rt, bank_id, model_id)
        return MentalModelDeleted(deleted=True, mental_model_id=model_id)

    async def refresh_mental_model(self, who: Principal, bank_id: str, model_id: str) -> MentalModelOperation:
        self.require(who, bank_id, write=True)
        return await mm.refresh_mental_model(self.rt, bank_id, model_id)

    # ---- documents -------------------------------------------------------------------------
    async def import_documents(
        self, who: Principal, bank_id: str, req: docs.ImportRequest, wait: bool = False
    ) -> docs.ImportAccepted:
        self.require(who, bank_id, write=True)
        return await docs.import_documents(self.rt, bank_id, req, wait)

    async def list_documents(self, who: Principal, bank_id: str, req: docs.DocumentListQuery) -> docs.DocumentList:
        async with self._reading(who, bank_id):
            return await docs.list_documents(self.rt, bank_id, req)

    async def get_document(self, who: Principal, bank_id: str, document_id: str) -> docs.Document:
        self.require(who, bank_id)
        return await docs.get_document(self.rt, bank_id, document_id)

    async def delete_document(self, who: Principal, bank_id: str, document_id: str) -> docs.DocumentDeleted:
        self.require(who, bank_id, write=True)
        await docs.delete_document(self.rt, bank_id, document_id)
        return docs.DocumentDeleted(deleted=True, document_id=document_id, bank_id=bank_id)

    async def document_counts(self, who: Principal, bank_ids: list[str]) -> dict[str, int]:
        """How many documents each of the banks holds, among those `who` may see."""
        visible = who.visible_banks()
        return await docs.count_documents(self.rt, [b for b in bank_ids if visible is None or b in visible])

    async def find_document_bank(self, who: Principal, document_id: str) -> str | None:
        """The bank holding a document id, among the banks `who` may see (ids are UUIDs, unique
        across banks), for clients that name a document without its collection."""
        return await docs.find_document_bank(self.rt, document_id, who.visible_banks())

    async def rag_search(
        self, who: Principal, bank_id: str, req: rag.RagSearchRequest, caller: rag.Caller
    ) -> rag.RagSearchResult:
        async with self._reading(who, bank_id):
            return await rag.rag_search(self.rt, bank_id, req, caller)

    async def search_documents(
        self, who: Principal, bank_id: str, req: rag.DocumentSearchRequest, caller: rag.Caller
    ) -> rag.DocumentSearchResult:
        async with self._reading(who, bank_id):
            return await rag.search_documents(self.rt, bank_id, req, caller)

    async def verify_document_access(
        self, who: Principal, bank_id: str, segment_uid: str, caller: rag.Caller
    ) -> rag.AccessResult:
        self.require(who, bank_id)
        return await rag.verify_document_access(self.rt, bank_id, segment_uid, caller)

    # ---- export / import ------------------------------------------------------------------
    async def export_bank(self, who: Principal, bank_id: str):
        """Checks access before the first byte, so errors are proper responses, not a cut stream."""
        self.require(who, bank_id)
        if not await self._bank_exists(bank_id):
            raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
        return portable.export_bank(self.rt, bank_id)

    async def import_bank(
        self, who: Principal, bank_id: str, fileobj, on_conflict: portable.OnConflict = "rename"
    ) -> portable.ImportResult:
        self.require(who, bank_id, write=True)
        if on_conflict not in ("rename", "skip", "replace"):  # typed for callers, checked for the CLI's strings
            raise InvalidArgument("on_conflict: must be rename, skip or replace", "on_conflict")
        return await portable.import_bank(self.rt, bank_id, fileobj, on_conflict)

    # ---- operations and usage -------------------------------------------------------------
    async def get_operation(self, who: Principal, bank_id: str, operation_id: str) -> Operation:
        self.require(who, bank_id)
        return await ops.get_operation(self.rt, bank_id, operation_id)

    async def list_operations(self, who: Principal, bank_id: str, req: OperationQuery) -> OperationList:
        self.require(who, bank_id)
        return await ops.list_operations(self.rt, bank_id, req)

    async def cancel_operation(self, who: Principal, bank_id: str, operation_id: str) -> Operation:
        self.require(who, bank_id, write=True)
        return await ops.cancel_operation(self.rt, bank_id, operation_id)

    async def usage(self, who: Principal, bank_id: str) -> dict:
        async with self._reading(who, bank_id):
            return await get_bank_usage(self.rt, bank_id)

    def _reading(self, who: Principal, bank_id: str):
        """For a read of the bank as a whole: the caller may read it, and one of the bank's lanes
        is held while the read runs (runtime.BankGates), so a flood of them waits at this bank's
        gate, not ahead of other banks' requests."""
        self.require(who, bank_id)
        return self.rt.lanes.hold(bank_id)

    def require(self, who: Principal, bank_id: str, write: bool = False) -> None:
        """A valid bank id the caller may read (or write). A bank that was never written reads as
        empty: an agent's first call in a new conversation is recall, on a bank its first retain
        will create. Things looked up by id in it (a model, a document, an operation) are simply
        not found."""
        check_bank_id(bank_id)
        who.require_bank(bank_id, write=write)

    async def _bank_exists(self, bank_id: str) -> bool:
        async with self.rt.pool.acquire() as conn:
            return bool(await conn.fetchval(Q.bank_exists, bank_id))

    # ---- keys -------------------------------------------------------------------------
    async def create_key(self, who: Principal, req: ApiKeyCreate) -> ApiKey:
        who.require_admin()
        return await keys.create_key(self.rt, req)

    async def list_keys(self, who: Principal) -> ApiKeyList:
        who.require_admin()
        return ApiKeyList(keys=await keys.list_keys(self.rt))

    async def revoke_key(self, who: Principal, key_id: str) -> ApiKey:
        who.require_admin()
        return await keys.revoke_key(self.rt, key_id)
