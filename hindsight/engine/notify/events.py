"""The events a webhook may subscribe to, and queuing their deliveries.

An event is fired in the transaction of the change it reports (the retain's, the refresh's, the
operation's outcome), so a delivery is queued exactly when the change is committed: each delivery
is a `webhook_delivery` operation, which the worker runs and retries (notify/delivery.py).
"""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from hindsight.db.sql import Q

if TYPE_CHECKING:
    import asyncpg

    from hindsight.engine.runtime import Runtime

RETAIN_COMPLETED = "retain.completed"
EXTRACTION_COMPLETED = "extraction.completed"
MENTAL_MODEL_REFRESHED = "mental_model.refreshed"
OPERATION_FAILED = "operation.failed"
TEST = "webhook.test"
DELIVERY = "webhook_delivery"  # the operation kind of a delivery

# Every event a webhook may subscribe to, with what it means (docs/webhooks.md lists them).
EVENTS: dict[str, str] = {
    RETAIN_COMPLETED: "a retain's memories are stored (a call, or its queued operation)",
    EXTRACTION_COMPLETED: "the LLM extracted facts from retained text (its operation succeeded)",
    "consolidation.completed": "Hindsight's name for extraction.completed, sent with it",
    MENTAL_MODEL_REFRESHED: "a mental model has new content",
    OPERATION_FAILED: "an operation failed for good, after its retries (not a webhook delivery)",
    "memory_defense.triggered": "Hindsight's event; accepted, never sent (this server has no memory defense)",
}
# Names an event is also sent under, to the webhooks subscribed to those.
ALIASES: dict[str, tuple[str, ...]] = {EXTRACTION_COMPLETED: ("consolidation.completed",)}


def event(name: str, bank_id: str, data: dict[str, Any], operation_id: Any = None, status: str = "completed") -> dict:
    """An event's body, without its name and delivery id (each delivery adds them)."""
    return {
        "bank_id": bank_id,
        "operation_id": str(operation_id) if operation_id else None,
        "status": status,
        "timestamp": datetime.now(UTC).isoformat(),
        "data": data,
    }


async def fire(
    rt: Runtime,
    conn: asyncpg.Connection,
    bank_id: str,
    name: str,
    data: dict[str, Any],
    operation_id: Any = None,
    status: str = "completed",
) -> int:
    """Queue a delivery of event `name` to each of the bank's webhooks subscribed to it, in the
    caller's transaction; returns how many were queued (the caller pokes the worker after its
    commit when any were)."""
    body = json.dumps(event(name, bank_id, data, operation_id, status), default=str)
    rows = await conn.fetch(
        Q.webhook_fire, bank_id, [name, *ALIASES.get(name, ())], body, rt.settings.webhook_max_attempts
    )
    return len(rows)
