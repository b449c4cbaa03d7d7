"""Which errors mean "the database cannot be reached" (503, an MCP tool error with retry_after)
and which are bugs (500)."""

from __future__ import annotations

import asyncio

import asyncpg
import pytest

from hindsight.engine.errors import RETRY_AFTER, InvalidArgument, Unavailable, known, unavailable


async def connect_error(**where) -> BaseException:
    """What asyncpg raises connecting where no PostgreSQL listens (no database needed)."""
    try:
        await asyncpg.connect(user="postgres", database="postgres", timeout=5, **where)
    except BaseException as exc:
        return exc
    raise AssertionError("connected")


@pytest.mark.parametrize(
    "where",
    [
        {"host": "/nonexistent-hindsight-socket-dir"},  # the embedded socket is gone
        {"host": "127.0.0.1", "port": 1},  # connection refused
    ],
)
def test_socket_errors_through_asyncpg_are_unavailable(where):
    exc = asyncio.run(connect_error(**where))
    assert isinstance(exc, OSError)
    error = unavailable(exc)
    assert isinstance(error, Unavailable)
    assert error.status == 503
    assert error.retry_after == RETRY_AFTER and error.http_headers() == {"Retry-After": str(RETRY_AFTER)}
    assert error.to_dict()["error"] == "database_unavailable"
    assert error.message.startswith("the database is unavailable (") and "\n" not in error.message


def test_socket_errors_elsewhere_are_not():
    """The same OSError from a file or a URL is not about the database."""
    for exc in (ConnectionRefusedError(111, "Connection refused"), FileNotFoundError(2, "x"), TimeoutError()):
        try:
            raise exc
        except OSError as caught:
            assert unavailable(caught) is None


@pytest.mark.parametrize(
    "exc",
    [
        asyncpg.AdminShutdownError("terminating connection due to administrator command"),  # 57P01
        asyncpg.CrashShutdownError("terminating connection because of crash of another server process"),
        asyncpg.CannotConnectNowError("the database system is starting up"),  # 57P03
        asyncpg.ConnectionDoesNotExistError("connection was closed in the middle of operation"),  # 08003
        asyncpg.ConnectionFailureError("connection failure"),  # 08006
        asyncpg.TooManyConnectionsError("sorry, too many clients already"),  # 53300
        asyncpg.ReadOnlySQLTransactionError("cannot execute INSERT in a read-only transaction"),  # 25006
        asyncpg.InterfaceError("connection is closed"),
        asyncpg.InterfaceError("pool is closing"),
    ],
)
def test_lost_connections_are_unavailable(exc):
    error = unavailable(exc)
    assert error is not None and str(exc) in error.message


@pytest.mark.parametrize(
    "exc",
    [
        # a connection whose socket closed during a COPY: the next call finds it half-way (seen
        # when the embedded postmaster was killed during a retain)
        asyncpg.InterfaceError("cannot perform operation: another operation is in progress"),
        asyncpg.InternalClientError("cannot switch to state 21; another operation (2) is in progress"),
    ],
)
def test_connections_lost_mid_operation_are_unavailable(exc):
    error = unavailable(exc)
    assert error is not None and "lost" in error.message


@pytest.mark.parametrize(
    "exc",
    [
        asyncpg.UniqueViolationError("duplicate key"),
        asyncpg.QueryCanceledError("canceling statement due to statement timeout"),  # 57014: not 57P0x
        asyncpg.UndefinedTableError("relation does not exist"),
        RuntimeError("connection is closed"),
    ],
)
def test_other_errors_are_bugs(exc):
    assert unavailable(exc) is None and known(exc) is None


def test_known_keeps_the_engines_own_errors():
    mine = InvalidArgument("limit: too big", "limit")
    assert known(mine) is mine and mine.http_headers() == {}
    assert isinstance(known(asyncpg.AdminShutdownError("x")), Unavailable)


def test_no_host_taking_writes_is_unavailable():
    """A multi-host URL with target_session_attrs=read-write while every host is a standby (the
    gap of a failover)."""
    error = unavailable(asyncpg.TargetServerAttributeNotMatched("None of the hosts match"))
    assert error is not None and error.status == 503 and "takes writes" in error.message
