"""Connection pool, schema migrations and the checks that make start-up errors readable."""

from __future__ import annotations

import logging
import re
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import asyncpg
from pgvector.asyncpg import register_vector

from hindsight.db.priority import lower_priority
from hindsight.db.sql import Q

log = logging.getLogger("hindsight.db")

_PKG = Path(__file__).resolve().parent.parent
# Installed wheels carry the SQL inside the package; a source checkout has it at the repo root.
MIGRATIONS_DIR = next((p for p in (_PKG / "migrations", _PKG.parent / "migrations") if p.is_dir()), _PKG / "migrations")
# Any constant works; all hindsight processes on one database share it.
MIGRATION_LOCK_KEY = 0x48494E44  # "HIND"


class DatabaseError(Exception):
    """A start-up problem with the database, worded for the operator."""


def redact(url: str) -> str:
    return re.sub(r"//([^:/@]+):[^@]*@", r"//\1:***@", url)


async def _no_reset(conn: asyncpg.Connection) -> None:
    """asyncpg's default release runs RESET ALL, CLOSE ALL, UNLISTEN * and
    pg_advisory_unlock_all: one more round trip for every acquire, which is a recall's arms and
    its details. The server leaves no session state on a pooled connection (settings are fixed
    when it is opened; cursors, locks and SET LOCAL live in transactions, which the pool rolls
    back), so there is nothing to reset."""


def _connection_setup(backend_nice: int) -> Callable[[asyncpg.Connection], Awaitable[None]]:
    async def init(conn: asyncpg.Connection) -> None:
        await register_vector(conn)
        lower_priority(conn, backend_nice)

    return init


async def ensure_vector_extension(url: str, update: bool = False) -> None:
    """Create pgvector if it is missing. `update` (the embedded database, which we own): bring an
    extension made by an older bundled pgvector up to the installed one, as pgvector's upgrade
    notes ask (`ALTER EXTENSION vector UPDATE`)."""
    conn = await asyncpg.connect(url)
    try:
        row = await conn.fetchrow(Q.vector_extension_versions)
        if row is not None and row["installed_version"]:
            if update and row["installed_version"] != row["default_version"]:
                await conn.execute(Q.vector_extension_update)
                log.info("pgvector extension updated from %s to %s", row["installed_version"], row["default_version"])
            return
        try:
            await conn.execute(Q.vector_extension_create)
        except asyncpg.UniqueViolationError:
            return  # another process sharing the database created it at the same moment
        except asyncpg.PostgresError as exc:
            raise DatabaseError(
                f"the PostgreSQL at {redact(url)} has no 'vector' extension (pgvector) and it "
                f"could not be created: {exc}. Install pgvector on that server, or have an "
                "administrator run CREATE EXTENSION vector, or unset HINDSIGHT_API_DATABASE_URL "
                "to use the embedded PostgreSQL."
            ) from None
    finally:
        await conn.close()


async def migrate(url: str, until: int | None = None) -> list[str]:
    """Apply pending migrations, one transaction each, under a session advisory lock so that
    several processes starting together apply each migration once; `until`, the last version to
    apply (a test of a later migration on data written before it)."""
    conn = await asyncpg.connect(url)
    applied_now: list[str] = []
    try:
        await conn.execute(Q.migration_lock, MIGRATION_LOCK_KEY)
        await conn.execute(Q.migration_table)
        done = {r["version"] for r in await conn.fetch(Q.migrations_applied)}
        for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
            version = int(path.name.split("_", 1)[0])
            if version in done or (until is not None and version > until):
                continue
            async with conn.transaction():
                await conn.execute(path.read_text())
                await conn.execute(Q.migration_record, version, path.name)
            applied_now.append(path.name)
            log.info("applied migration %s", path.name)
    finally:
        await conn.execute(Q.migration_unlock, MIGRATION_LOCK_KEY)
        await conn.close()
    return applied_now


# What every pooled connection is opened with (also after `repoint`).
# Iterative HNSW scans keep bank-filtered vector searches complete (pgvector 0.8).
_SETTINGS = {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": "100", "jit": "off"}
# ...and the planned pool's: every statement planned for its own parameters. After five runs of
# a statement PostgreSQL may keep a generic plan, which cannot see how selective the parameters
# are; the recall arms whose cost depends on that (how common the words are, how wide the time
# window is) took several times as long with one (bench/README.md, "Keyword and temporal arms:
# a custom plan each call"). Set when the connection opens, it costs no round trip a call (a
# setting changed per call cost two: setting it, and resetting it on release).
#
# Its connections also stop an HNSW walk at TEMPORAL_WALK_ROWS rows (pgvector's default 20,000):
# the time arm, the one statement here that walks the index with a filter, ranks the window
# exactly when the walk stops short; a long walk is slow on a large bank, and a much shorter one
# returns the nearest less often (bench/README.md, "Temporal arm: a short walk, then exact").
TEMPORAL_WALK_ROWS = 3_000
_PLANNED = _SETTINGS | {"plan_cache_mode": "force_custom_plan", "hnsw.max_scan_tuples": str(TEMPORAL_WALK_ROWS)}
# ...and the fixed pool's: statements whose one plan is right for every parameter, planned once a
# connection. Recall's walk of the vector index for a bank's nearest memories (its semantic arm on
# a bank it does not sort, engine/banks/sizes.py): left to PostgreSQL, a generic plan of it
# estimates a bank at the average bank's share of the table, so with a few hundred small banks
# beside a big one it keeps, after five calls, a plan that sorts the big bank's rows by distance
# (a hundred times the walk's time); with a few banks it plans the walk anew every call. With
# sorting disabled the walk is the one plan left that orders rows by distance (the statement still
# ends in its own small sort: the cheapest plan has the fewest disabled steps). And the word counts
# (recall_word_frequencies, chunk_word_frequencies), an index lookup a word whatever the words,
# which PostgreSQL planned anew every call too (its generic plan guesses 10 words). What each
# saves: bench/README.md, "One plan for the walk and the word counts".
_FIXED = _SETTINGS | {"plan_cache_mode": "force_generic_plan", "enable_sort": "off"}


# Statements the planned pool's connections keep prepared. Its statements change text with the
# query (the keyword arm has a term per word and a branch per seed word), so a cache of asyncpg's
# default 100 a connection filled with variants that rarely came back, each ~5 KB of the
# server's memory; the recurring ones (the time arm's) fit in this.
_PLANNED_STATEMENTS = 24

# Each kind of pool's connection arguments, in the order Pools holds them.
_KINDS: dict[str, dict[str, object]] = {
    "shared": {"server_settings": _SETTINGS},
    "planned": {"server_settings": _PLANNED, "statement_cache_size": _PLANNED_STATEMENTS},
    "fixed": {"server_settings": _FIXED},
}


def _connect_args(kind: str, pooled: bool = False) -> dict:
    """A `kind` of pool's (_KINDS) connection arguments. `pooled`: through a transaction pooler
    (HINDSIGHT_API_DB_POOL_MODE=transaction). PgBouncer refuses session settings in the startup
    packet, and a statement prepared on one of its server connections is not there on the next
    transaction's: no settings are sent (the database has them as its defaults, `pooled_defaults`)
    and no statement is kept prepared, so each is planned for its own parameters, as the planned
    pool's are anyway (a walk so planned sees its bank's share)."""
    if pooled:
        return {"statement_cache_size": 0}
    return dict(_KINDS[kind])


async def create_pool(
    url: str,
    min_size: int,
    max_size: int,
    kind: str = "shared",
    backend_nice: int = 0,
    pooled: bool = False,
    connect_timeout: float = 60.0,
) -> asyncpg.Pool:
    """A pool of connections opened with our session settings; `kind` "planned": they plan every
    statement for its own parameters, "fixed": they keep one plan a statement (_FIXED), "shared": the
    rest, PostgreSQL's choice (a generic plan once it is as good, which saves planning them every
    call). `backend_nice`: the priority a local backend yields to the server at (db/priority.py);
    `pooled`: through a transaction pooler (_connect_args)."""
    logging.getLogger("asyncpg.pool").addFilter(_one_line)
    return await asyncpg.create_pool(
        url,
        min_size=min_size,
        max_size=max_size,
        init=_connection_setup(backend_nice),
        reset=_no_reset,
        timeout=connect_timeout,
        **_connect_args(kind, pooled),
    )


async def pooled_defaults(direct_url: str, pooled_url: str) -> bool:
    """The session settings of `_SETTINGS` made defaults of the database (`ALTER DATABASE ...
    SET`) over `direct_url`, for connections through a transaction pooler, which cannot carry
    them; True when they were changed. The pooler's server connections opened before a change
    keep the old values, so the settings are then read back through `pooled_url`: a mismatch
    stops the start with what to do, rather than serve recalls without them."""
    conn = await asyncpg.connect(direct_url, server_settings=_SETTINGS)
    try:
        # pgvector's settings are known to a session once its library is loaded; a default for a
        # setting the session does not know would need more than the database's ownership.
        await conn.execute(Q.vector_library_load)
        current = {r["name"]: r["value"] for r in await conn.fetch(Q.database_defaults)}
        changed = any(current.get(name) != value for name, value in _SETTINGS.items())
        if changed:
            try:
                await conn.execute(Q.database_defaults_from_session)
            except asyncpg.InsufficientPrivilegeError as exc:
                statements = "; ".join(f"ALTER DATABASE <name> SET {k} = '{v}'" for k, v in _SETTINGS.items())
                raise DatabaseError(
                    f"cannot give the database the session settings that connections through the pooler "
                    f"need ({exc}); have its owner run: {statements}"
                ) from None
    finally:
        await conn.close()
    conn = await asyncpg.connect(pooled_url, statement_cache_size=0)
    try:
        seen = await conn.fetchval(Q.session_settings, list(_SETTINGS))
    finally:
        await conn.close()
    wrong = [f"{name}={value!r}" for name, value in zip(_SETTINGS, seen) if value != _SETTINGS[name]]
    if wrong:
        raise DatabaseError(
            "connections through the pooler lack the session settings the database has as defaults ("
            + ", ".join(wrong)
            + "): its server connections predate them; have the pooler open new ones (PgBouncer: RECONNECT)"
        )
    return changed


def sizes(min_size: int, max_size: int) -> dict[str, tuple[int, int]]:
    """Each pool's (min, max) for HINDSIGHT_API_DB_POOL_MIN/MAX: a third of the connections plan
    each call (recall's keyword arm holds its connection for two statements and is its slowest on
    a large bank: a third of a recall's connection time or more), a fifth keep one plan a
    statement (the vector index's walk and the word counts: one short statement each), the rest
    are shared, at least one of each kind, so a maximum of 1 still opens 3. The minimum is the
    shared and planned pools' together; a planned connection is kept open from a minimum of 2, a
    fixed one is opened by the first statement it runs."""
    planned_max = max(1, max_size // 3)
    fixed_max = max(1, max_size // 5)
    shared_max = max(1, max_size - planned_max - fixed_max)
    if min_size == 0:  # a read replica's pools: nothing opened until a read needs it
        return {"shared": (0, shared_max), "planned": (0, planned_max), "fixed": (0, fixed_max)}
    planned_min = 1 if min_size >= 2 else 0
    shared_min = min(max(1, min_size - planned_min), shared_max)
    return {"shared": (shared_min, shared_max), "planned": (planned_min, planned_max), "fixed": (0, fixed_max)}


@dataclass
class Pools:
    """The server's three pools: `shared` for everything, `planned` for the statements that need a
    plan of their own each call, `fixed` for those that keep one plan (_FIXED);
    `HINDSIGHT_API_DB_POOL_MIN/MAX` bound them together (sizes)."""

    shared: asyncpg.Pool
    planned: asyncpg.Pool
    fixed: asyncpg.Pool

    pooled: bool = False  # through a transaction pooler (_connect_args)

    @classmethod
    async def open(
        cls,
        url: str,
        min_size: int,
        max_size: int,
        backend_nice: int = 0,
        pooled: bool = False,
        connect_timeout: float = 60.0,
    ) -> Pools:
        opened: dict[str, asyncpg.Pool] = {}
        try:
            for kind, (least, most) in sizes(min_size, max_size).items():
                opened[kind] = await create_pool(url, least, most, kind, backend_nice, pooled, connect_timeout)
        except BaseException:
            for pool in opened.values():
                await pool.close()
            raise
        return cls(opened["shared"], opened["planned"], opened["fixed"], pooled)

    def __iter__(self) -> Iterator[asyncpg.Pool]:
        return iter((self.shared, self.planned, self.fixed))

    def repoint(self, url: str) -> None:
        """Open the pools' next connections to `url` (a restarted embedded PostgreSQL on another
        socket; the caller expires the current ones). This rather than new pools: whatever holds
        them (the engine, the LLM client, the tenant extension) follows."""
        for kind, pool in zip(_KINDS, self):
            pool.set_connect_args(url, **_connect_args(kind, self.pooled))

    async def expire_connections(self) -> None:
        for pool in self:
            await pool.expire_connections()

    async def close(self) -> None:
        for pool in self:
            await pool.close()


def _one_line(record: logging.LogRecord) -> bool:
    """asyncpg keeps the pool's minimum size by reconnecting in the background and logs every
    failed attempt with a traceback; while the database is away that is one expected line each
    time, with the reason."""
    if record.exc_info and record.exc_info[1] is not None:
        record.msg = f"{record.getMessage()}: {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        record.args = None
        record.exc_info = None
    return True
