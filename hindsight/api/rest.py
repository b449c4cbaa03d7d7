"""The REST face as one FastAPI application: our `/v1/banks/...` routes, Hindsight's
`/v1/default/...` API (api/compat/), the system routes and the web console, with every error
answered as web/errors.py says. The server shell (server/app.py) routes to it; it starts
nothing itself."""

from __future__ import annotations

from fastapi import FastAPI

from hindsight import __version__
from hindsight.api import (
    audit,
    banks,
    compat,
    directives,
    documents,
    errors,
    keys,
    knowledge,
    memories,
    mental_models,
    oauth,
    system,
    webhooks,
)
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
    routers = [
        m.router
        for m in (
            system,
            banks,
            memories,
            mental_models,
            directives,
            webhooks,
            knowledge,
            documents,
            keys,
            oauth,
            audit,
        )
    ]
    for router in routers:
        api.include_router(router)
    compat.install(api)
    # Every route as declared (full paths), for what must name a request's route without routing
    # it: the audit record of a request refused before it was routed (server/audit_trail.py).
    api.state.routes = [route for router in (*routers, *compat.ROUTERS) for route in router.routes]
    api.mount("/ui", console(), name="ui")
    return api
