"""Request bodies bounded before anything reads them whole: a body past
HINDSIGHT_API_MAX_REQUEST_BYTES is refused at once when Content-Length says so, else as soon as
that much has arrived (a chunked body), so a huge body is never held in memory; and its JSON is
weighed as it arrives (body_weight.py), refused as soon as no rest of the body could make up for
what parsing it would allocate (a multipart upload is not JSON: its size alone is bounded). A bank
import file is the one body that is neither JSON nor held in memory: it streams to disk under its
own limit (api/banks.py)."""

from __future__ import annotations

import re

from hindsight.config import Settings
from hindsight.engine.errors import TooLarge
from hindsight.server.body_weight import FREE, PER_BYTE, UNWEIGHED, JsonWeight

# The one route whose body is not JSON and not held in memory: an export file, streamed to disk.
BANK_IMPORT = re.compile(r"/v1/banks/[^/]+/import")


class BodyLimit:
    """Middleware: the request's `receive`, refusing (TooLarge, raised to error_answers.py) a body
    past the limit or one whose JSON would weigh too much."""

    def __init__(self, app, settings: Settings):
        self.app = app
        self.limit = settings.max_request_bytes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http" or (scope["method"] == "POST" and BANK_IMPORT.fullmatch(scope["path"])):
            return await self.app(scope, receive, send)
        limit = self.limit
        too_large = TooLarge(f"body: larger than the limit of {limit} bytes (HINDSIGHT_API_MAX_REQUEST_BYTES)")
        for k, v in scope.get("headers", []):
            if k == b"content-length" and v.isdigit() and int(v) > limit:
                raise too_large
        hopeless = max(FREE, PER_BYTE * limit)
        # A multipart form (an upload) is not JSON, and its parser streams file parts to disk:
        # only its size is bounded.
        json_body = not _multipart(scope)
        size = 0
        # What arrived while the body was no larger than UNWEIGHED, which no JSON of that size can
        # weigh too much for: a body that stays that small (most requests) is never weighed.
        held: list[bytes] = []
        weight: JsonWeight | None = None

        async def bounded():
            nonlocal size, weight
            message = await receive()
            chunk = message.get("body", b"")
            size += len(chunk)
            if size > limit:
                raise too_large
            if not json_body:
                return message
            if weight is None:
                if size <= UNWEIGHED:
                    held.append(chunk)
                    return message
                weight = JsonWeight()
                for earlier in held:
                    weight.feed(earlier)
                held.clear()
            weight.feed(chunk)
            if weight.weight() > hopeless or (not message.get("more_body", False) and weight.too_heavy()):
                raise TooLarge(
                    f"body: its JSON would take ~{weight.weight() // 2**20} MiB of memory to parse, more than "
                    f"{FREE // 2**20} MiB and {PER_BYTE} bytes for each byte of the body "
                    "(many small values, very long numbers, or characters past U+FFFF in a long text): "
                    "split the request"
                )
            return message

        await self.app(scope, bounded, send)


def _multipart(scope) -> bool:
    for k, v in scope.get("headers", []):
        if k == b"content-type":
            return v.split(b";", 1)[0].strip().lower() == b"multipart/form-data"
    return False
