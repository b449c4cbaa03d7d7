"""Retention: a bank's memories older than its policy says are forgotten by the scheduler.

A bank's policy (banks.config, set through its settings: `retention_days`, `retention_by_tag`)
gives a number of days for the bank and for tags. A memory's retention is the shortest number of
days among its tags that have one, else the bank's; a memory with neither is kept. Its age is
counted from when it was stored (`created_at`). A fact extracted from a raw unit ages from its own
storing, and goes with its raw unit in any case (an erasure reaches the facts drawn from it).

Every HINDSIGHT_API_RETENTION_INTERVAL seconds the scheduler forgets what is due, bank by bank,
in batches (engine/forgetting/erase.in_batches): the bank's write lock is held for one batch at a
time. Each bank's sweep that forgot something is recorded in the audit log (transport `system`).
"""

from __future__ import annotations

import json
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import asyncpg

from hindsight.db.sql import Q
from hindsight.engine.forgetting.erase import BATCH, in_batches

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime

log = logging.getLogger("hindsight.retention")
ACTOR = "retention"


@dataclass(frozen=True)
class Policy:
    days: int | None
    by_tag: dict[str, int]

    @property
    def shortest(self) -> int | None:
        every = [d for d in (self.days, *self.by_tag.values()) if d is not None]
        return min(every) if every else None


def policy_of(config: dict[str, Any]) -> Policy:
    """A bank's retention as its settings keep it (values checked when they were set)."""
    days = config.get("retention_days")
    tags = config.get("retention_by_tag") or {}
    return Policy(
        days if _days(days) else None,
        {t: d for t, d in sorted(tags.items()) if _days(d)} if isinstance(tags, dict) else {},
    )


def _days(value: Any) -> bool:
    return type(value) is int and value > 0  # not True, which is an int too


# Called with (bank_id, memories forgotten, seconds) after a bank's sweep that forgot something.
Recorder = Callable[[str, int, float], None]


async def forget_expired(rt: Runtime, bank_id: str, policy: Policy) -> int:
    """Forget the bank's memories past its retention; returns how many went."""
    shortest = policy.shortest
    if shortest is None:
        return 0
    tags, days = list(policy.by_tag), list(policy.by_tag.values())

    async def batch(conn: asyncpg.Connection) -> list:
        rows = await conn.fetch(Q.retention_expired, bank_id, policy.days, tags, days, shortest, BATCH)
        return [r[0] for r in rows]

    return len((await in_batches(rt, bank_id, batch, ACTOR)).ids)


async def sweep_retention(rt: Runtime, record: Recorder | None = None) -> int:
    """Forget what is due in every bank with a policy; returns how many memories went."""
    async with rt.pool.acquire() as conn:
        banks = await conn.fetch(Q.retention_banks)
    total = 0
    for b in banks:
        config = json.loads(b["config"]) if isinstance(b["config"], str) else b["config"]
        started = time.monotonic()
        n = await forget_expired(rt, b["id"], policy_of(config))
        if n:
            log.info("retention forgot %d memories of bank %s", n, b["id"], extra={"bank_id": b["id"]})
            if record is not None:
                record(b["id"], n, time.monotonic() - started)
        total += n
    return total
