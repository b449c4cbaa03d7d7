"""Hindsight's own REST API (`/v1/default/...`), so its official clients and their integrations
work against this server unchanged: one router per concept over the same engine calls as our
`/v1/banks/...` API, never a second engine. Shapes follow hindsight-client 1.1.0 (docs/clients.md)."""

from __future__ import annotations

from fastapi import FastAPI

from hindsight.api.compat import (
    audit,
    banks,
    consolidation,
    directives,
    entities,
    knowledge,
    llm_requests,
    memories,
    mental_models,
    operations,
    system,
    transfer,
    webhooks,
)

PREFIX = "/v1/default"


ROUTERS = [
    *(
        m.router
        for m in (
            banks,
            memories,
            entities,
            mental_models,
            directives,
            webhooks,
            knowledge,
            llm_requests,
            operations,
            system,
            audit,
            consolidation,
            transfer,
        )
    ),
    memories.chunks,
]


def install(app: FastAPI) -> None:
    for router in ROUTERS:
        app.include_router(router)
