"""Errors the engine raises on purpose; each face maps them to its own protocol
(JSON-RPC codes on MCP, HTTP statuses with a JSON body on REST, exit codes in the CLI)."""

from __future__ import annotations


class HindsightError(Exception):
    status = 400
    code = "bad_request"

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


class Forbidden(HindsightError):
    status = 403
    code = "forbidden"


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
