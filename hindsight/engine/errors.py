"""Errors the engine raises on purpose, each with its message written once and the code every
face reports it with: an HTTP status and a JSON body on REST (which the CLI prints), a JSON-RPC
error code on MCP."""

from __future__ import annotations

INVALID_PARAMS = -32602
# JSON-RPC leaves -32000..-32099 to implementations; -32001 is authentication and authorisation
# (a bank the key may not reach), documented in docs/mcp.md.
ACCESS_DENIED = -32001


class HindsightError(Exception):
    status = 400
    code = "bad_request"
    jsonrpc_code = INVALID_PARAMS

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.message = message
        self.field = field

    def to_dict(self) -> dict:
        out = {"error": self.code, "message": self.message}
        if self.field:
            out["field"] = self.field
        return out


class InvalidArgument(HindsightError):
    status = 422
    code = "invalid_argument"


class NotFound(HindsightError):
    status = 404
    code = "not_found"


class Unauthorized(HindsightError):
    status = 401
    code = "unauthorized"
    jsonrpc_code = ACCESS_DENIED


class Forbidden(HindsightError):
    status = 403
    code = "forbidden"
    jsonrpc_code = ACCESS_DENIED


class Conflict(HindsightError):
    status = 409
    code = "conflict"


def parse_uuid(value: object, field: str, noun: str):
    """Ids from clients are UUIDs; anything else is an error naming the argument, not a 500."""
    import uuid

    try:
        return uuid.UUID(str(value))
    except ValueError:
        raise InvalidArgument(f"{field}: {value!r} is not {noun} id (a UUID)", field) from None
