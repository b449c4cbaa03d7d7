"""Every OAuth client this server knows, for an admin: the console's Applications page lists
them and deletes the ones nobody wants (registrations nobody finished expire by themselves:
oauth/registration.py). Deleting a client ends its connections in every bank, so it is an
admin's act, not a bank key's."""

from __future__ import annotations

from datetime import datetime
from typing import TYPE_CHECKING

from pydantic import BaseModel, Field

from hindsight.engine.errors import NotFound
from hindsight.oauth import store
from hindsight.oauth.clients import declared_text

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


class Application(BaseModel):
    client_id: str
    kind: str = Field(description="`registered` (RFC 7591) or `document` (a Client ID Metadata Document).")
    client_name: str | None = Field(None, description="The name the application gave itself (unverified).")
    client_uri: str | None = None
    redirect_uris: list[str] = Field(default_factory=list)
    registered_from: str | None = Field(
        None, description="The address it registered from (an IPv6 /64 for IPv6), as registrations are counted."
    )
    created_at: datetime
    approved_at: datetime | None = Field(
        None,
        description="When a person first approved it; until then it expires "
        "HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENT_TTL seconds after it came.",
    )
    connections: int = Field(description="Its live connections, in every bank.")


class ApplicationList(BaseModel):
    applications: list[Application]
    total: int = Field(description="Every client this server keeps.")
    unapproved: int = Field(description="Those no person has approved yet (HINDSIGHT_API_OAUTH_UNAPPROVED_CLIENTS).")


class ApplicationDeleted(BaseModel):
    client_id: str
    deleted: bool


async def list_applications(rt: Runtime, limit: int, offset: int) -> ApplicationList:
    rows, total, unapproved = await store.list_clients(rt, limit, offset)
    return ApplicationList(
        applications=[
            Application(
                client_id=r.client_id,
                kind=r.kind,
                client_name=declared_text(r.metadata, "client_name"),
                client_uri=declared_text(r.metadata, "client_uri"),
                redirect_uris=[u for u in r.metadata.get("redirect_uris") or [] if isinstance(u, str)],
                registered_from=r.registered_from,
                created_at=r.created_at,
                approved_at=r.approved_at,
                connections=r.connections,
            )
            for r in rows
        ],
        total=total,
        unapproved=unapproved,
    )


async def delete_application(rt: Runtime, client_id: str) -> ApplicationDeleted:
    if not await store.delete_client(rt, client_id):
        raise NotFound(f"no OAuth client {client_id[:200]!r}", "client_id")
    return ApplicationDeleted(client_id=client_id, deleted=True)
