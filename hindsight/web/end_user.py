"""The end user a RAG client acts for, from the headers it sends: `x-user-id`, and
`x-session-tags` (a JSON array of strings). Document search shows that person only the documents
their id or tags may see (engine/knowledge/rag.py); these headers are not authentication: the
principal (an API key or token) still decides which banks the request may reach."""

from __future__ import annotations

import json
from collections.abc import Mapping

from hindsight.engine.errors import InvalidArgument
from hindsight.engine.knowledge.rag import EndUser


def end_user(headers: Mapping[str, str]) -> EndUser:
    raw = headers.get("x-session-tags")
    tags: list[str] = []
    if raw is not None and raw.strip():
        try:
            tags = json.loads(raw)
        except ValueError:
            raise InvalidArgument(
                'x-session-tags: must be a JSON array of strings, e.g. ["department:sales"]', "x-session-tags"
            ) from None
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InvalidArgument("x-session-tags: must be a JSON array of strings", "x-session-tags")
    return EndUser(user_id=headers.get("x-user-id") or None, session_tags=tags)
