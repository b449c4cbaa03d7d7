"""The parts of a running server process, started and stopped in order: the database (embedded
or external: extension, self-check, migrations, pools, the read replicas, the watchdog of an
embedded one), the embedder, the LLM, the operation worker, the tenant extension and the
scheduler. The Engine (engine/facade.py) serves operations on what this starts; readiness and the
metrics that are a state of the database are read here.

The process's role (HINDSIGHT_API_ROLE) decides what runs: an `api` process claims no queued
work and runs no scheduler (its worker only waits for operations others run); a `worker`
process runs both (the server shell serves it only the health and metrics routes); `all` is
both in one process.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import time

import asyncpg

from hindsight.config import Settings
from hindsight.db import hugepages
from hindsight.db.embedded import EmbeddedPostgres
from hindsight.db.pool import DatabaseError, Pools, ensure_vector_extension, migrate, pooled_defaults, redact
from hindsight.db.replicas import Reads, Target
from hindsight.db.selfcheck import self_check
from hindsight.db.sql import Q
from hindsight.db.vacuum import Vacuum
from hindsight.db.watchdog import Watchdog
from hindsight.embedding import load_embedder
from hindsight.engine.access.tenant import TenantExtension, load_extension
from hindsight.engine.audit.trail import AuditTrail
from hindsight.engine.banks.gates import CPU_SLOTS, BankWrites, Gates
from hindsight.engine.banks.sizes import BankSizes
from hindsight.engine.cpu_slots import CpuSlots
from hindsight.engine.errors import unavailable
from hindsight.engine.memory import reembedding
from hindsight.engine.memory.vectors import gloss_chinese
from hindsight.engine.runtime import Runtime
from hindsight.engine.worker.runner import Worker
from hindsight.engine.worker.scheduler import Scheduler
from hindsight.llm import LLM
from hindsight.metrics import OPERATIONS, POOL

log = logging.getLogger("hindsight")

# How long the readiness probe waits for the database: a hung database must not hang the probe.
PING_TIMEOUT = 2.0


class Lifecycle:
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
        self.reads: Reads | None = None
        self.database_label = ""
        self.database_url = ""
        self.started_at = time.time()
        # Made when the database is up; a request that comes before (or after close) is recorded
        # nowhere: none reaches a bank then.
        self.audit = AuditTrail(None, False, settings.audit_flush_seconds)

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
        # Migrations, the checks and the session advisory lock of migrate() need a connection of
        # their own from start to end: a direct one when the pools go through a transaction pooler.
        direct = s.migration_database_url or url
        try:
            await ensure_vector_extension(direct, update=self.embedded is not None)
        except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
            raise DatabaseError(f"cannot connect to the {self.database_label}: {exc}") from None
        await self_check(direct, self.database_label, self.embedded.log_file if self.embedded else None)
        if self.embedded is not None:
            await hugepages.report(url)
        applied = await migrate(direct)
        if applied:
            log.info("migrations applied: %s", ", ".join(applied))
        pooled = s.db_pool_mode == "transaction"
        if pooled and await pooled_defaults(direct, url):
            log.warning("DATABASE: session settings made defaults of the database, for connections through the pooler")
        try:
            self.pools = pools = await Pools.open(url, s.db_pool_min, s.db_pool_max, s.db_backend_nice, pooled=pooled)
        except asyncpg.ProtocolViolationError as exc:
            if pooled or "startup parameter" not in str(exc):
                raise
            # PgBouncer's answer to the session settings a connection is opened with.
            raise DatabaseError(
                f"{redact(url)} refused the session settings sent at connect ({exc}): a transaction "
                "pooler such as PgBouncer? Set HINDSIGHT_API_DB_POOL_MODE=transaction, and "
                "HINDSIGHT_API_MIGRATION_DATABASE_URL to a direct connection (docs/scaling.md)"
            ) from None
        pool = pools.shared
        self.database_url = url
        self.reads = await Reads.open(pools, s.read_database_urls, s.db_pool_max, s.read_max_lag, s.db_backend_nice)
        if self.reads.enabled:
            log.warning(
                "DATABASE: reads of banks from %d replica(s) once they have replayed the bank's last write",
                len(self.reads.replicas),
            )
        if self.embedded is not None:
            self.watchdog = Watchdog(self.embedded, self._database_restarted)
            self.watchdog.start()
        embedder = await asyncio.to_thread(
            load_embedder, s.embedding_model, s.embedding_model_dir, s.embedding_threads, s.embedding_quantize
        )
        embedder.share_queries(s.workers)
        if s.embedding_chinese_gloss and not embedder.reads_cjk:
            gloss_chinese(embedder)
        log.info("embedding model %s (%d dimensions)", embedder.name, embedder.dim)
        llm = LLM(s, pool)
        self.worker = Worker(s, claims=s.role != "api")
        self.rt = Runtime(
            settings=s,
            pool=pool,
            planned=pools.planned,
            fixed=pools.fixed,
            writes=BankWrites(pool),
            gates=Gates(s),
            embedder=embedder,
            llm=llm,
            queue=self.worker,
            cpu_slots=CpuSlots(CPU_SLOTS),
            sizes=BankSizes(pool),
            reads=self.reads,
            vacuum=Vacuum(pool, s.erasure_vacuum_delay, s.erasure_vacuum, s.erasure_vacuum_full),
        )
        self.audit = AuditTrail(pool, s.audit_enabled, s.audit_flush_seconds)
        self.audit.start()
        self.worker.attach(self.rt)
        await reembedding.reconcile(self.rt)
        self.tenant = load_extension(s.tenant_extension, self.rt)
        await llm.warm()
        log.warning("LLM: %s", self.llm_label)
        self.started = True
        if run_scheduler and s.role != "api":
            self.scheduler = Scheduler(self.rt, self.worker, self.audit)
            self.scheduler.start()

    @property
    def llm_label(self) -> str:
        rt = getattr(self, "rt", None)  # also asked while start() runs
        if rt is None or not rt.llm.enabled:
            return "offline mode (no LLM configured): retain stores text units, reflect is extractive"
        return f"retain with {rt.llm.model_name('retain') or 'no LLM'}, reflect with {rt.llm.model_name('reflect') or 'no LLM'}"

    def on(self, target: Target) -> Runtime:
        """The runtime with the pools of a read target (db/replicas.py) in place of the primary's;
        the write queue, the LLM's usage records and the bank sizes stay on the primary."""
        if target.replica is None:
            return self.rt
        pools = target.pools
        return dataclasses.replace(self.rt, pool=pools.shared, planned=pools.planned, fixed=pools.fixed)

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
        if self.reads is not None:
            await self.reads.close()
            self.reads = None
        if self.started:
            await self.audit.close()  # what the last requests left is written before the pools close
            await self.rt.vacuum.close()
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
            for pool in self.pools:  # each: a recall may need a connection of each
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
        pools = [pool for pools in [self.pools, *(self.reads.observe() if self.reads else [])] for pool in pools]
        POOL.labels("open").set(sum(pool.get_size() for pool in pools))
        POOL.labels("idle").set(sum(pool.get_idle_size() for pool in pools))
        POOL.labels("max").set(sum(pool.get_max_size() for pool in pools))
