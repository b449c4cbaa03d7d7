"""Delivering one event to one webhook: a `webhook_delivery` operation the worker runs.

The body is the event as JSON, with its name (`event`) and the delivery's id (`delivery_id`,
the same in every attempt, so a receiver can drop a repeat); the headers say the event
(X-Hindsight-Event), the delivery (X-Hindsight-Delivery) and sign the exact body bytes
(X-Hindsight-Signature: `sha256=` and the HMAC-SHA256 hex of the body with the webhook's secret,
what Hindsight's own webhooks send). The webhook is read at each attempt, so a new URL or secret
applies to retries; a deleted or disabled webhook's delivery is cancelled.

Any answer but a 2xx is a failure (redirects are not followed), and so is no answer in the
webhook's timeout: the attempt is recorded on the operation (`progress`: when, where, the status
code) and retried after HINDSIGHT_API_WEBHOOK_RETRY_BASE seconds, four times longer each time,
six hours at most, until HINDSIGHT_API_WEBHOOK_MAX_ATTEMPTS; then it fails. A destination this
server refuses (a private address) fails at once: sending again cannot change that.
"""

from __future__ import annotations

import json
import time
import uuid
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from hindsight import __version__
from hindsight.db.sql import Q
from hindsight.engine.notify.schemas import HttpConfig
from hindsight.engine.notify.secrets import SecretUnreadable, secret_box, signature
from hindsight.engine.queue import operations as ops
from hindsight.files.fetch import Refused, Unreachable, send

if TYPE_CHECKING:
    from hindsight.engine.queue.operations import Job
    from hindsight.engine.runtime import Runtime

LONGEST_WAIT = 6 * 3600.0


def backoff(settings, attempt: int) -> float:
    """Seconds before the attempt after `attempt` (1 for the first)."""
    return min(LONGEST_WAIT, settings.webhook_retry_base * 4 ** (attempt - 1))


def body_of(job: Job) -> bytes:
    """The delivery's body: the same bytes at every attempt."""
    event = job.payload["event"]
    return json.dumps({"event": job.payload["event_type"], "delivery_id": str(job.id), **event}).encode()


async def run_delivery(rt: Runtime, job: Job) -> dict:
    webhook_id = job.payload["webhook_id"]
    async with rt.pool.acquire() as conn:
        w = await conn.fetchrow(Q.webhook_for_delivery, job.bank_id, uuid.UUID(webhook_id))
    if w is None:
        raise ops.Cancelled("webhook deleted")
    if not w["enabled"]:
        raise ops.Cancelled("webhook disabled")
    try:
        secret = secret_box(rt.settings).open(w["secret"], w["secret_key"], job.bank_id, webhook_id)
    except SecretUnreadable as exc:
        raise ops.GiveUp(f"cannot sign: {exc}") from None
    config = HttpConfig.model_validate(json.loads(w["http_config"]))
    content = body_of(job)
    headers = {
        **config.headers,
        "Content-Type": "application/json",
        "User-Agent": f"hindsight-webhooks/{__version__}",
        "X-Hindsight-Event": job.payload["event_type"],
        "X-Hindsight-Delivery": str(job.id),
        "X-Hindsight-Signature": signature(secret, content),
    }
    started = time.monotonic()
    attempt: dict = {"attempted_at": datetime.now(UTC).isoformat(), "url": w["url"], "attempt": job.attempts}
    try:
        sent = await send(
            w["url"],
            content=content,
            headers=headers,
            params=config.params,
            timeout=config.timeout_seconds,
            allow_private=rt.settings.allow_private_urls,
        )
    except Refused as exc:
        await _record(rt, job, attempt)
        raise ops.GiveUp(f"refused: {exc}") from None
    except Unreachable as exc:
        await _record(rt, job, attempt)
        raise ops.RetryLater(f"not delivered: {exc}", backoff(rt.settings, job.attempts)) from None
    attempt["status_code"] = sent.status
    attempt["duration_ms"] = round((time.monotonic() - started) * 1000)
    if 200 <= sent.status < 300:
        return attempt
    await _record(rt, job, attempt)
    raise ops.RetryLater(f"not delivered: the receiver answered HTTP {sent.status}", backoff(rt.settings, job.attempts))


async def _record(rt: Runtime, job: Job, attempt: dict) -> None:
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.operation_set_progress, job.bank_id, job.id, json.dumps(attempt))
