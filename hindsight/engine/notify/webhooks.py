"""A bank's webhooks: kept with their secret sealed (notify/secrets.py), listed without it, and
their deliveries read back from the operations that carry them.

A webhook's URL is checked when it is set: http(s), a host, no user name or password in it (they
would be shown to every reader of the bank), and, unless HINDSIGHT_API_ALLOW_PRIVATE_URLS is on,
no IP address or `localhost` name that is private, loopback, link-local or a cloud metadata
address. A name is checked again at each delivery, against what it resolves to then.
"""

from __future__ import annotations

import ipaddress
import json
import uuid
from datetime import datetime
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit

import asyncpg

from hindsight.db.sql import Q, fill
from hindsight.engine.banks.registry import ensure_bank
from hindsight.engine.errors import Conflict, InvalidArgument, NotFound, parse_uuid
from hindsight.engine.notify import events
from hindsight.engine.notify.schemas import (
    MAX_WEBHOOKS,
    Delivery,
    DeliveryList,
    DeliveryQuery,
    HttpConfig,
    TestQueued,
    Webhook,
    WebhookCreate,
    WebhookList,
    WebhookUpdate,
)
from hindsight.engine.notify.secrets import new_secret, secret_box
from hindsight.engine.queue import operations as ops
from hindsight.files.fetch import public_address

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

_CREATE = fill(Q.webhook_create, columns=Q.webhook_columns)
_GET = fill(Q.webhook_get, columns=Q.webhook_columns)
_LIST = fill(Q.webhook_list, columns=Q.webhook_columns)
_UPDATE = fill(Q.webhook_update, columns=Q.webhook_columns)
DELETED = "webhook deleted"
# Delivery states in words a reader of the log expects, from its operation's.
_STATES = {"queued": "pending", "running": "delivering", "succeeded": "delivered", "failed": "failed"}


def to_webhook(r: asyncpg.Record, secret: str | None = None) -> Webhook:
    return Webhook(
        webhook_id=str(r["id"]),
        bank_id=r["bank_id"],
        url=r["url"],
        event_types=list(r["event_types"]),
        enabled=r["enabled"],
        http_config=HttpConfig.model_validate(json.loads(r["http_config"])),
        created_at=r["created_at"],
        updated_at=r["updated_at"],
        secret=secret,
    )


def parse_webhook_id(webhook_id: str) -> uuid.UUID:
    return parse_uuid(webhook_id, "webhook_id", "a webhook")


def _missing(bank_id: str, webhook_id: str) -> NotFound:
    return NotFound(f"webhook {webhook_id} does not exist in bank {bank_id!r}", "webhook_id")


def check_url(url: str, allow_private: bool) -> str:
    """The URL, or InvalidArgument naming what is wrong (see the module docstring)."""
    try:
        parts = urlsplit(url)
        port = parts.port  # raises on a port that is not a number, or past 65535
    except ValueError as exc:
        raise InvalidArgument(f"url: not a URL ({exc})", "url") from None
    if port == 0:
        raise InvalidArgument("url: port 0 is not a port to send to", "url")
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise InvalidArgument("url: must be an http(s) URL with a host", "url")
    if parts.username is not None or parts.password is not None:
        raise InvalidArgument("url: must not hold a user name or password (use http_config.headers)", "url")
    if any(c.isspace() or ord(c) < 32 for c in url):
        raise InvalidArgument("url: must not hold spaces or control characters", "url")
    host = parts.hostname.rstrip(".").lower()
    if not allow_private:
        literal = None
        try:
            literal = ipaddress.ip_address(host)
        except ValueError:
            pass
        if host == "localhost" or host.endswith(".localhost") or (literal is not None and not public_address(host)):
            raise InvalidArgument(
                "url: private, loopback, link-local and metadata addresses are refused "
                "(HINDSIGHT_API_ALLOW_PRIVATE_URLS=true allows them)",
                "url",
            )
    return url


async def create_webhook(rt: Runtime, bank_id: str, req: WebhookCreate) -> Webhook:
    check_url(req.url, rt.settings.allow_private_urls)
    box = secret_box(rt.settings)  # before anything is written: a server without a key says so
    webhook_id = uuid.uuid4()
    secret = req.secret or new_secret()
    async with rt.writes.open(bank_id) as conn:
        await ensure_bank(conn, bank_id)
        if await conn.fetchval(Q.webhook_count, bank_id) >= MAX_WEBHOOKS:
            raise Conflict(f"bank {bank_id!r} already has {MAX_WEBHOOKS} webhooks, the most a bank may have")
        r = await conn.fetchrow(
            _CREATE,
            bank_id,
            webhook_id,
            req.url,
            box.seal(secret, bank_id, str(webhook_id)),
            box.fingerprint,
            req.event_types,
            req.enabled,
            req.http_config.model_dump_json(),
        )
    return to_webhook(r, None if req.secret else secret)


async def list_webhooks(rt: Runtime, bank_id: str) -> WebhookList:
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(_LIST, bank_id)
    return WebhookList(webhooks=[to_webhook(r) for r in rows])


async def get_webhook(rt: Runtime, bank_id: str, webhook_id: str) -> Webhook:
    wid = parse_webhook_id(webhook_id)
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(_GET, bank_id, wid)
    if r is None:
        raise _missing(bank_id, webhook_id)
    return to_webhook(r)


async def update_webhook(rt: Runtime, bank_id: str, webhook_id: str, req: WebhookUpdate) -> Webhook:
    """Only what is given changes. A new secret (given, or made: `new_secret`) replaces the old
    at once, retries of earlier events included; a made one is shown in this answer only."""
    wid = parse_webhook_id(webhook_id)
    if req.url is not None:
        check_url(req.url, rt.settings.allow_private_urls)
    if req.secret is not None and req.new_secret:
        raise InvalidArgument("secret: give a secret or ask for a new one (new_secret), not both", "secret")
    secret = req.secret or (new_secret() if req.new_secret else None)
    sealed = fingerprint = None
    if secret is not None:
        box = secret_box(rt.settings)
        sealed, fingerprint = box.seal(secret, bank_id, str(wid)), box.fingerprint
    config = req.http_config.model_dump_json() if req.http_config is not None else None
    async with rt.writes.open(bank_id) as conn:
        r = await conn.fetchrow(
            _UPDATE, bank_id, wid, req.url, req.event_types, req.enabled, config, sealed, fingerprint
        )
        if r is None:
            raise _missing(bank_id, webhook_id)
        if req.enabled is False:
            await conn.execute(Q.webhook_cancel_deliveries, bank_id, str(wid), "webhook disabled")
    return to_webhook(r, secret if req.new_secret else None)


async def delete_webhook(rt: Runtime, bank_id: str, webhook_id: str) -> None:
    wid = parse_webhook_id(webhook_id)
    async with rt.writes.open(bank_id) as conn:
        if await conn.fetchval(Q.webhook_delete, bank_id, wid) is None:
            raise _missing(bank_id, webhook_id)
        await conn.execute(Q.webhook_cancel_deliveries, bank_id, str(wid), DELETED)


async def test_webhook(rt: Runtime, bank_id: str, webhook_id: str) -> TestQueued:
    """Queue a `webhook.test` event to this webhook alone, whatever it subscribes to."""
    wid = parse_webhook_id(webhook_id)
    body = events.event(events.TEST, bank_id, {"message": "a test delivery, asked for through the API"})
    async with rt.pool.acquire() as conn:
        async with conn.transaction():
            if await conn.fetchrow(_GET, bank_id, wid) is None:
                raise _missing(bank_id, webhook_id)
            op = await ops.enqueue_operation(
                conn,
                bank_id,
                events.DELIVERY,
                {"webhook_id": str(wid), "event_type": events.TEST, "event": body},
                max_attempts=rt.settings.webhook_max_attempts,
            )
    rt.queue.poke()
    return TestQueued(delivery_id=str(op))


def _cursor(cursor: str | None) -> tuple[datetime | None, uuid.UUID | None]:
    if cursor is None:
        return None, None
    try:
        when, _, last = cursor.partition("|")
        return datetime.fromisoformat(when), uuid.UUID(last)
    except ValueError:
        raise InvalidArgument("cursor: not a cursor this listing gave (next_cursor)", "cursor") from None


def to_delivery(r: asyncpg.Record) -> Delivery:
    progress: dict[str, Any] = json.loads(r["progress"]) if r["progress"] else {}
    result: dict[str, Any] = json.loads(r["result"]) if r["result"] else {}
    last = {**progress, **result} if isinstance(result, dict) else progress
    return Delivery(
        delivery_id=str(r["id"]),
        event_type=r["event_type"],
        status=_STATES.get(r["status"], "cancelled"),
        attempts=r["attempts"],
        max_attempts=r["max_attempts"],
        next_attempt_at=r["run_after"] if r["status"] == "queued" else None,
        last_attempt_at=last.get("attempted_at"),
        last_status_code=last.get("status_code"),
        last_error=r["error"] if r["status"] != "succeeded" else None,
        url=last.get("url"),
        event=json.loads(r["event"]) if r["event"] else None,
        created_at=r["created_at"],
        updated_at=r["updated_at"],
    )


async def list_deliveries(rt: Runtime, bank_id: str, webhook_id: str, query: DeliveryQuery) -> DeliveryList:
    """A webhook's deliveries, newest first, a page at a time (their operations: operations.py)."""
    wid = parse_webhook_id(webhook_id)
    before, last = _cursor(query.cursor)
    async with rt.pool.acquire() as conn:
        if await conn.fetchrow(_GET, bank_id, wid) is None:
            raise _missing(bank_id, webhook_id)
        rows = await conn.fetch(Q.webhook_deliveries, bank_id, str(wid), before, last, query.limit + 1)
    page = rows[: query.limit]
    more = len(rows) > query.limit
    cursor = f"{page[-1]['created_at'].isoformat()}|{page[-1]['id']}" if more else None
    return DeliveryList(deliveries=[to_delivery(r) for r in page], next_cursor=cursor)
