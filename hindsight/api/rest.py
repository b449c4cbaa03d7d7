"""The REST face as one FastAPI application: our `/v1/banks/...` routes, Hindsight's
`/v1/default/...` API (api/compat/), the system routes and the web console, with every error
answered as web/errors.py says. The server shell (server/app.py) routes to it; it starts
nothing itself."""

from __future__ import annotations

from fastapi import FastAPI

from hindsight import __version__
from hindsight.api import audit, banks, compat, documents, errors, keys, memories, mental_models, oauth, system
from hindsight.api.console import console
from hindsight.engine.facade import Engine
from hindsight.web.errors import ERROR_RESPONSES


def build_rest(engine: Engine) -> FastAPI:
    api = FastAPI(
        title="Hindsight",
        version=__version__,
        description="Postgres-native memory banks for AI agents (REST face; MCP at /mcp).",
        responses=ERROR_RESPONSES,
    )
    api.state.engine = engine
    errors.install(api)
    for module in (system, banks, memories, mental_models, documents, keys, oauth, audit):
        api.include_router(module.router)
    compat.install(api)
    api.mount("/ui", console(), name="ui")
    return api
