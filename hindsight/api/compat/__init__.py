"""Hindsight's own REST API (`/v1/default/...`), so its official clients and their integrations
work against this server unchanged: one router per concept over the same engine calls as our
`/v1/banks/...` API, never a second engine. Shapes follow hindsight-client 1.1.0 (docs/clients.md)."""

from __future__ import annotations

from fastapi import FastAPI

from hindsight.api.compat import banks, consolidation, memories, mental_models, operations, system, transfer

PREFIX = "/v1/default"


def install(app: FastAPI) -> None:
    for module in (banks, consolidation, memories, mental_models, operations, system, transfer):
        app.include_router(module.router)
    app.include_router(memories.chunks)
