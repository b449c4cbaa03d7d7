"""Connection pool, schema migrations and the checks that make start-up errors readable."""

from __future__ import annotations

import logging
import re
from pathlib import Path

import asyncpg
from pgvector.asyncpg import register_vector

from .sql import Q

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


class Connection(asyncpg.Connection):
    """A pooled connection that knows whether its session settings were changed.

    asyncpg's default release runs RESET ALL, CLOSE ALL, UNLISTEN * and
    pg_advisory_unlock_all: one more round trip for every acquire, which is a recall's four
    arms and its details. The server leaves no other session state on a pooled connection
    (cursors and locks live in transactions, which the pool rolls back), so a connection
    costs a reset only after `set_session`."""

    settings_changed = False

    async def set_session(self, name: str, value: str) -> None:
        await self.execute(Q.session_set, name, value)
        self.settings_changed = True

    async def custom_plans(self) -> None:
        """Plan this connection's next statements for their own parameters, until it is released.
        After five runs of one statement PostgreSQL may keep a generic plan, which cannot see
        how selective the parameters are; the arms whose cost depends on that (how common the
        words are, how wide the time window is) ask for this."""
        await self.set_session("plan_cache_mode", "force_custom_plan")


async def _reset_connection(conn: Connection) -> None:
    if conn.settings_changed:
        await conn.execute(Q.session_reset)
        conn.settings_changed = False


async def _init_connection(conn: asyncpg.Connection) -> None:
    await register_vector(conn)


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


async def migrate(url: str) -> list[str]:
    """Apply pending migrations, one transaction each, under a session advisory lock so that
    several processes starting together apply each migration once."""
    conn = await asyncpg.connect(url)
    applied_now: list[str] = []
    try:
        await conn.execute(Q.migration_lock, MIGRATION_LOCK_KEY)
        await conn.execute(Q.migration_table)
        done = {r["version"] for r in await conn.fetch(Q.migrations_applied)}
        for path in sorted(MIGRATIONS_DIR.glob("*.sql")):
            version = int(path.name.split("_", 1)[0])
            if version in done:
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
_CONNECT = {"server_settings": {"hnsw.iterative_scan": "relaxed_order", "hnsw.ef_search": "100", "jit": "off"}}


async def create_pool(url: str, min_size: int, max_size: int) -> asyncpg.Pool:
    logging.getLogger("asyncpg.pool").addFilter(_one_line)
    return await asyncpg.create_pool(
        url,
        min_size=min_size,
        max_size=max_size,
        init=_init_connection,
        connection_class=Connection,
        reset=_reset_connection,
        **_CONNECT,
    )


def repoint(pool: asyncpg.Pool, url: str) -> None:
    """Open the pool's next connections to `url` (a restarted embedded PostgreSQL on another
    socket; the caller expires the current ones). This rather than a new pool: whatever holds
    this one (the engine, the LLM client, the tenant extension) follows."""
    pool.set_connect_args(url, **_CONNECT)


def _one_line(record: logging.LogRecord) -> bool:
    """asyncpg keeps the pool's minimum size by reconnecting in the background and logs every
    failed attempt with a traceback; while the database is away that is one expected line each
    time, with the reason."""
    if record.exc_info and record.exc_info[1] is not None:
        record.msg = f"{record.getMessage()}: {type(record.exc_info[1]).__name__}: {record.exc_info[1]}"
        record.args = None
        record.exc_info = None
    return True
