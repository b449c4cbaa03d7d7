"""Durable asynchronous operations: the work queue is a table.

An operation is queued in the same transaction as the data it works on, so accepted work can't
be lost. Workers claim rows with FOR UPDATE SKIP LOCKED under a lease they renew while working;
a crashed process stops renewing, and its operations are claimed again once the lease expires.
Failures are retried with exponential backoff up to `max_attempts`; an LLM provider's rate limit
is not a failure of the work: the operation waits for it (defer_operation) without using up an
attempt.
"""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

import asyncpg

from hindsight.db.sql import Q
from hindsight.engine.errors import Conflict, NotFound, parse_uuid
from hindsight.engine.queue.schemas import TERMINAL, Operation, OperationList, OperationQuery

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


class Cancelled(Exception):
    """A handler's way to say its work has no subject any more (the mental model was deleted):
    the operation ends as cancelled at once, with this message, instead of failing and retrying."""


class RetryLater(Exception):
    """A handler's way to name the wait before its next attempt (a webhook's own backoff); the
    attempt counts, and after the last one the operation fails."""

    def __init__(self, message: str, seconds: float):
        super().__init__(message)
        self.seconds = seconds


class GiveUp(Exception):
    """A handler's way to say another attempt cannot help (a destination the server refuses):
    the operation fails now, whatever attempts it has left."""


class Job:
    """A claimed operation, as its handler receives it: the row, and the worker whose claim
    (lease) it runs under; the statements that finish it name both, and its bank."""

    def __init__(self, row, worker_id: str):
        self.id = row["id"]
        self.bank_id = row["bank_id"]
        self.type = row["type"]
        self.payload = json.loads(row["payload"])
        self.attempts = row["attempts"]
        self.max_attempts = row["max_attempts"]
        self.worker_id = worker_id


def to_operation(r) -> Operation:
    return Operation(
        operation_id=str(r["id"]),
        bank_id=r["bank_id"],
        type=r["type"],
        status=r["status"],
        attempts=r["attempts"],
        max_attempts=r["max_attempts"],
        error=r["error"],
        result=json.loads(r["result"]) if r["result"] is not None else None,
        payload=json.loads(r["payload"]),
        run_after=r["run_after"],
        progress=json.loads(r["progress"]) if r["progress"] is not None else None,
        created_at=r["created_at"],
        started_at=r["started_at"],
        finished_at=r["finished_at"],
        updated_at=r["updated_at"],
    )


def parse_operation_id(operation_id: str) -> uuid.UUID:
    return parse_uuid(operation_id, "operation_id", "an operation")


async def enqueue_operation(
    conn: asyncpg.Connection,
    bank_id: str,
    type_: str,
    payload: dict,
    *,
    max_attempts: int,
    dedup_key: str | None = None,
) -> uuid.UUID:
    """Queue work in the caller's transaction. With a dedup key, an operation already queued or
    running under that key is returned instead of a new one."""
    for _ in range(3):
        op_id = await conn.fetchval(
            Q.operation_enqueue,
            uuid.uuid4(),
            bank_id,
            type_,
            json.dumps(payload),
            max_attempts,
            dedup_key,
        )
        if op_id is not None:
            return op_id
        op_id = await conn.fetchval(Q.operation_pending_by_key, bank_id, dedup_key)
        if op_id is not None:
            return op_id
    raise RuntimeError(f"could not queue operation {dedup_key}")


async def get_operation(rt: Runtime, bank_id: str, operation_id: str) -> Operation:
    oid = parse_operation_id(operation_id)
    async with rt.pool.acquire() as conn:
        r = await conn.fetchrow(Q.operation_get, oid, bank_id)
    if r is None:
        raise NotFound(f"operation {operation_id} not found in bank {bank_id!r}", "operation_id")
    return to_operation(r)


async def list_operations(rt: Runtime, bank_id: str, req: OperationQuery) -> OperationList:
    """One page of the bank's operations, newest first, and how many match in all."""
    status, type_ = req.status, req.type
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(
            Q.operation_list,
            bank_id,
            status,
            type_,
            req.limit,
            req.offset,
        )
        total = await conn.fetchval(Q.operation_count, bank_id, status, type_)
    return OperationList(operations=[to_operation(r) for r in rows], total=total)


async def cancel_operation(rt: Runtime, bank_id: str, operation_id: str) -> Operation:
    """Queued work never starts; running work is stopped at its next heartbeat. Finished
    operations are returned unchanged."""
    oid = parse_operation_id(operation_id)
    async with rt.pool.acquire() as conn:
        await conn.execute(
            Q.operation_cancel,
            oid,
            bank_id,
        )
    return await get_operation(rt, bank_id, operation_id)


async def retry_operation(rt: Runtime, bank_id: str, operation_id: str) -> Operation:
    """A failed operation queued again as new, under its id (its payload is what it had). Only a
    failed one: queued or running work is under way, and finished work is done or was stopped."""
    oid = parse_operation_id(operation_id)
    async with rt.pool.acquire() as conn:
        try:
            retried = await conn.fetchval(Q.operation_retry, oid, bank_id)
        except asyncpg.UniqueViolationError:
            raise Conflict(
                f"operation_id: a newer operation for the same work is already queued or running in bank {bank_id!r}",
                "operation_id",
            ) from None
    if retried is None:
        op = await get_operation(rt, bank_id, operation_id)  # NotFound when it is not the bank's
        raise Conflict(
            f"operation_id: operation {operation_id} is {op.status}; only a failed one is retried", "operation_id"
        )
    rt.queue.poke()
    return await get_operation(rt, bank_id, operation_id)


async def retry_failed_operations(rt: Runtime, bank_id: str, types: list[str]) -> int:
    """The bank's failed operations of these types (those without a dedup key) queued again;
    returns how many."""
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(Q.operation_retry_failed, bank_id, types)
    if rows:
        rt.queue.poke()
    return len(rows)


async def delete_operation(rt: Runtime, bank_id: str, operation_id: str) -> Operation:
    """Forget a finished operation (what it did stays done); returns it as it was. Queued or
    running work is cancelled first (cancel_operation), not deleted."""
    op = await get_operation(rt, bank_id, operation_id)
    async with rt.pool.acquire() as conn:
        deleted = await conn.fetchval(Q.operation_delete, parse_operation_id(operation_id), bank_id)
    if deleted is None:
        raise Conflict(f"operation_id: operation {operation_id} is still {op.status}; cancel it first", "operation_id")
    return op


async def wait_for_operation(
    rt: Runtime,
    bank_id: str,
    operation_id: str,
    timeout: float,
    wakeup: asyncio.Event | None = None,
    give_up: asyncio.Event | None = None,
) -> Operation:
    """Poll until the operation finishes or `timeout` passes (it may run in another process);
    `wakeup`, set by this process's worker when it finishes the operation, cuts the poll short;
    `give_up` (a stopping server) ends the wait with the operation as it is."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    delay = 0.02
    while True:
        op = await get_operation(rt, bank_id, operation_id)
        if op.status in TERMINAL or loop.time() >= deadline or (give_up is not None and give_up.is_set()):
            return op
        if wakeup is None:
            await asyncio.sleep(delay)
        else:
            try:
                await asyncio.wait_for(wakeup.wait(), delay)
            except TimeoutError:
                pass
        delay = min(0.25, delay * 1.5)


# ---- used by the worker ---------------------------------------------------------------------
async def claim_operations(
    rt: Runtime, worker_id: str, limit: int, lease: float, types: list[str], others: list[str]
) -> list[asyncpg.Record]:
    """`others`, the types this worker does not run: a bank with due work of those keeps its
    turn for a worker that runs them."""
    async with rt.pool.acquire() as conn:
        return await conn.fetch(Q.operation_claim, worker_id, limit, lease, types, others)


async def renew_lease(rt: Runtime, job: Job, lease: float) -> bool:
    async with rt.pool.acquire() as conn:
        return bool(await conn.fetchval(Q.operation_heartbeat, job.id, job.worker_id, lease, job.bank_id))


async def mark_succeeded(conn, job: Job, result: Any) -> bool:
    """Mark done; callers may pass their own connection so that the result and the data it
    describes commit together. False when the operation was no longer this worker's to finish
    (cancelled meanwhile, or taken over after a lost lease)."""
    done = await conn.execute(Q.operation_succeed, job.id, job.worker_id, json.dumps(result, default=str), job.bank_id)
    return done == "UPDATE 1"


async def drop_items(conn, job: Job) -> None:
    """A retain whose items are stored keeps their count in its payload, not their text: the text
    is in the memories, and leaves with them when they are forgotten (engine/forgetting/)."""
    await conn.execute(Q.operation_drop_items, job.id, job.bank_id)


async def mark_failed(
    rt: Runtime,
    job: Job,
    error: str,
    *,
    backoff: float | None = None,
    final: bool = False,
    on_failed: Callable[[asyncpg.Connection], Awaitable[Any]] | None = None,
) -> str:
    """Queue a retry after `backoff` seconds (default: doubling, five minutes at most), or fail
    for good after the last attempt (or at once, `final`); `on_failed(conn)` runs in the
    transaction that fails it for good. Returns the status the operation now has: a user may
    have cancelled it meanwhile, and then it stays cancelled."""
    final = final or job.attempts >= job.max_attempts
    wait = min(300.0, 2.0**job.attempts) if backoff is None else backoff
    async with rt.pool.acquire() as conn:
        async with conn.transaction():
            status = await conn.fetchval(
                Q.operation_fail,
                job.id,
                job.worker_id,
                "failed" if final else "queued",
                error[:2000],
                wait,
                job.bank_id,
            )
            if status == "failed" and on_failed is not None:
                await on_failed(conn)
        return status or await conn.fetchval(Q.operation_status, job.id, job.bank_id)


async def defer_operation(rt: Runtime, job: Job, reason: str, seconds: float) -> str:
    """Queue the operation again after `seconds` without counting this attempt: the LLM provider
    asked us to wait (a rate limit), which says nothing about the work. Returns the status it now
    has (a user may have cancelled it meanwhile). Like mark_failed, only the worker holding the
    claim can do it, so the operation is still claimed by one worker at a time."""
    async with rt.pool.acquire() as conn:
        status = await conn.fetchval(Q.operation_defer, job.id, job.worker_id, reason[:2000], seconds, job.bank_id)
        return status or await conn.fetchval(Q.operation_status, job.id, job.bank_id)


async def mark_cancelled(rt: Runtime, job: Job, reason: str) -> None:
    """A running operation whose subject is gone (Cancelled); one already cancelled keeps its reason."""
    async with rt.pool.acquire() as conn:
        await conn.execute(Q.operation_end_cancelled, job.id, job.worker_id, reason[:2000], job.bank_id)


async def release_operations(rt: Runtime, op_ids: list, worker_id: str) -> None:
    """On clean shutdown, hand running work back at once instead of waiting for the lease."""
    async with rt.pool.acquire() as conn:
        await conn.execute(
            Q.operation_release,
            op_ids,
            worker_id,
        )
