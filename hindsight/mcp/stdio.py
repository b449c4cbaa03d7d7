"""`hindsight mcp --bank NAME`: the single-bank tools over stdio, for IDE agents that spawn a
process instead of connecting to a URL.

The process runs its own engine against the same database as the server (the embedded one is
shared per data directory), acting for one bank only: a principal scoped to that bank, so no tool
can reach another. There are no HTTP headers on stdio, so the rag_search end_user (user id and
session tags) comes from the command line.
"""

from __future__ import annotations

import json

from hindsight.engine.access.keys import Principal
from hindsight.engine.facade import Engine
from hindsight.mcp.servers import RequestState, build_server


async def serve_stdio(
    settings, bank_id: str, user_id: str | None = None, session_tags: list[str] | None = None
) -> None:
    engine = Engine(settings)
    await engine.start()
    try:
        end_user = {}
        if user_id:
            end_user["x-user-id"] = user_id
        if session_tags:
            end_user["x-session-tags"] = json.dumps(session_tags)
        state = RequestState(who=Principal("bank", banks=frozenset({bank_id})), bank_id=bank_id, end_user=end_user)
        await build_server(engine, multi=False, local_state=state).run_stdio_async()
    finally:
        await engine.close()
