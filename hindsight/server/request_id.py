"""Every request has an id: the X-Request-Id a client or a proxy sent, when it is a plain token,
else one made here. It is answered in the X-Request-Id header and names the request's audit record
(server/audit_trail.py), so that a client's log, a proxy's and the audit log meet on it."""

from __future__ import annotations

import itertools
import re
import secrets

from hindsight.web.audit import REQUEST_ID
from hindsight.web.scope import header

HEADER = b"x-request-id"
# What is taken from a client: letters, digits and the punctuation ids use, at most 128 of them;
# anything else (spaces, control characters, a megabyte) is replaced by an id of ours.
_PLAIN = re.compile(r"[A-Za-z0-9._:@/+=-]{1,128}")
# An id made here: this process's random prefix and a count, 32 hex digits, unique across
# processes and restarts (a new prefix each start) for a fraction of a uuid4's cost per request.
_PREFIX = secrets.token_hex(8)
_COUNT = itertools.count()


def request_id(given: str | None) -> str:
    if given is not None and _PLAIN.fullmatch(given):
        return given
    return f"{_PREFIX}{next(_COUNT) & 0xFFFFFFFFFFFFFFFF:016x}"


class RequestId:
    """Middleware, just inside the metrics: every answer carries the id, refusals included."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        rid = request_id(header(scope, HEADER))
        scope[REQUEST_ID] = rid
        value = rid.encode()

        async def with_id(message):
            if message["type"] == "http.response.start":
                message = {**message, "headers": [*message.get("headers", []), (HEADER, value)]}
            await send(message)

        await self.app(scope, receive, with_id)
