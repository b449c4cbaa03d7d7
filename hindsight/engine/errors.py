"""Errors the engine raises on purpose, each with its message written once and the code every
face reports it with: an HTTP status and a JSON body on REST (which the CLI prints), a tool result
flagged `isError` carrying the same body on MCP (mcp/servers.py).

Two more kinds are not raised on purpose. A database that cannot be reached (stopped, restarting,
out of connections): `unavailable` maps those asyncpg and socket errors to `Unavailable` here,
once, so that every face answers it like the others (503 with Retry-After, a tool error with
`retry_after`) instead of a 500 and a traceback. And an LLM that failed (llm.LLMError): `LLMUnavailable`, a
502, 503 or 504 naming the cause. `known` maps both and passes the engine's own errors through."""

from __future__ import annotations

import math

import asyncpg

from hindsight.llm import LLMError

# Seconds a client should wait before retrying while the database is away: the watchdog restarts
# an embedded PostgreSQL within a few seconds (db/watchdog.py).
RETRY_AFTER = 5


class HindsightError(Exception):
    status = 400
    code = "bad_request"
    retry_after: int | None = None  # seconds, for errors that go away by themselves

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field

    def to_dict(self) -> dict:
        out = {"error": self.code, "message": self.message}
        if self.field:
            out["field"] = self.field
        return {**out, **self.details()}

    def details(self) -> dict:
        """Fields beyond the message that a client may act on, in the REST body and an MCP tool
        error's structured content."""
        return {}

    def http_headers(self) -> dict[str, str]:
        headers = {}
        if self.status == 401:
            headers["WWW-Authenticate"] = 'Bearer realm="hindsight"'
        if self.retry_after is not None:
            headers["Retry-After"] = str(self.retry_after)
        return headers


class BadRequest(HindsightError):
    """A request that cannot be read at all (malformed JSON)."""


class InvalidArgument(HindsightError):
    status = 422
    code = "invalid_argument"


class NotFound(HindsightError):
    status = 404
    code = "not_found"


class Unauthorized(HindsightError):
    status = 401
    code = "unauthorized"


class Forbidden(HindsightError):
    status = 403
    code = "forbidden"


class TooLarge(HindsightError):
    status = 413
    code = "too_large"


class Conflict(HindsightError):
    status = 409
    code = "conflict"


class Unavailable(HindsightError):
    """The database cannot be reached right now; the same request may succeed in a moment."""

    status = 503
    code = "database_unavailable"
    retry_after = RETRY_AFTER

    def __init__(self, cause: str):
        super().__init__(f"the database is unavailable ({cause}); retry in a few seconds")
        self.cause = cause


class LLMUnavailable(HindsightError):
    """The LLM failed to give a usable answer (llm.LLMError), after the retries its settings
    allow. Not the client's fault and not a bug: a 502 (the provider failed, or its answer was
    malformed, cut off, empty or too long), 503 with Retry-After (it is rate-limiting), or 504 (it
    did not answer in time), with `cause` in the body (and in an MCP tool error's)."""

    code = "llm_unavailable"
    STATUS = {"rate_limit": 503, "timeout": 504}  # every other cause: 502

    def __init__(self, cause: str, message: str, retry_after: float | None = None):
        super().__init__(message)
        self.cause = cause
        self.status = self.STATUS.get(cause, 502)
        self.retry_after = max(1, math.ceil(retry_after)) if retry_after is not None else None

    @classmethod
    def of(cls, exc: LLMError, what: str) -> LLMUnavailable:
        """`what` failed because of `exc`: "reflect: the LLM did not answer in time (...)"."""
        message = f"{what}: {exc.message}"
        if exc.retry_after is not None:
            message += f"; retry after {max(1, math.ceil(exc.retry_after))} s"
        return cls(exc.cause, message, exc.retry_after)

    def details(self) -> dict:
        return {"cause": self.cause}


# SQLSTATEs that say "no database to talk to" rather than "this statement is wrong": class 08
# (connection exceptions, e.g. 08003 connection does not exist, 08006 connection failure),
# 57P01-57P05 (shut down by an administrator or a crash, still starting up or recovering,
# database dropped, idle session timeout), 53300 (every connection slot taken) and 25006 (a write
# on a server that takes none: a standby, met during a failover through a pooler that still calls
# it the primary; docs/scaling.md).
_UNREACHABLE_STATES = ("57P01", "57P02", "57P03", "57P04", "57P05", "53300", "25006")


def unavailable(exc: BaseException) -> Unavailable | None:
    """`Unavailable` if `exc` means the database cannot be reached, else None.

    Socket errors (connection refused, socket file missing, reset, connect timeouts) count only
    when they came up through asyncpg: the same OSError from a file or a URL fetch is not about
    the database. asyncpg reports a connection it found closed as InterfaceError("connection is
    closed") and a pool shutting down as "pool is closing"; its other InterfaceErrors are misuse."""
    if isinstance(exc, asyncpg.PostgresError):
        state = exc.sqlstate or ""
        if state.startswith("08") or state in _UNREACHABLE_STATES:
            return Unavailable(_first_line(exc))
        return None
    if isinstance(exc, asyncpg.InterfaceError):
        text = str(exc)
        if "closed" in text or "closing" in text:
            return Unavailable(_first_line(exc))
        # A connection that died in the middle of an operation (COPY, say) is left in a state
        # asyncpg reports this way on the next call, the ROLLBACK of its release included.
        if _lost_connection(exc):
            return Unavailable("the database connection was lost in the middle of an operation")
        return None
    if isinstance(exc, asyncpg.TargetServerAttributeNotMatched):
        # Every host of a multi-host URL answered and none takes writes: a failover under way.
        return Unavailable("no database host takes writes now (a standby is being promoted?)")
    if isinstance(exc, asyncpg.InternalClientError) and _lost_connection(exc):
        return Unavailable("the database connection was lost in the middle of an operation")
    if isinstance(exc, OSError) and _through_asyncpg(exc):  # TimeoutError is an OSError
        return Unavailable(_first_line(exc))
    return None


def known(exc: BaseException) -> HindsightError | None:
    """What a face reports for `exc`: the engine's own error, `Unavailable` for a database that
    cannot be reached, `LLMUnavailable` for an LLM that failed, or None for anything else (a bug:
    a 500 and a logged traceback)."""
    if isinstance(exc, HindsightError):
        return exc
    if isinstance(exc, LLMError):
        return LLMUnavailable.of(exc, "the LLM failed")
    return unavailable(exc)


def _lost_connection(exc: BaseException) -> bool:
    """Whether asyncpg says a connection is in the middle of another operation ("cannot switch to
    state", "another operation is in progress"). It says so when the connection's socket closed
    during an operation (a COPY, say) and the next call, the ROLLBACK of its release included,
    finds it half-way; our code never shares a connection between tasks, which is the other way
    to get there."""
    text = str(exc)
    return "cannot switch to state" in text or "another operation is in progress" in text


def _through_asyncpg(exc: BaseException) -> bool:
    tb = exc.__traceback__
    while tb is not None:
        if tb.tb_frame.f_globals.get("__name__", "").startswith("asyncpg."):
            return True
        tb = tb.tb_next
    return False


def _first_line(exc: BaseException) -> str:
    return (str(exc).strip().splitlines() or [type(exc).__name__])[0][:200]


def parse_uuid(value: object, field: str, noun: str):
    """Ids from clients are UUIDs; anything else is an error naming the argument, not a 500."""
    import uuid

    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise InvalidArgument(f"{field}: {value!r} is not {noun} id (a UUID)", field) from None
