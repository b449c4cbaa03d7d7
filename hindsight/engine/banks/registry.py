"""Bank life cycle. Banks are cheap rows; deleting one cascades to everything in it."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import TYPE_CHECKING

import asyncpg

from hindsight.bank_ids import invalid_bank_id, valid_bank_id
from hindsight.db.sql import Q
from hindsight.engine.banks.schemas import Bank, BankCounts, BankCreate, BankList, BankQuery, BankUpdate
from hindsight.engine.errors import InvalidArgument, NotFound

if TYPE_CHECKING:
    from hindsight.engine.runtime import Runtime


def check_bank_id(bank_id: object, field: str = "bank_id") -> str:
    if not valid_bank_id(bank_id):
        raise InvalidArgument(f"{field}: {invalid_bank_id(bank_id)}", field)
    return bank_id


def _bank(row: asyncpg.Record, stats: asyncpg.Record | None = None) -> Bank:
    config = json.loads(row["config"]) if isinstance(row["config"], str) else row["config"]
    b = Bank(
        bank_id=row["id"],
        name=row["name"],
        mission=row["mission"],
        disposition=json.loads(row["disposition"]) if isinstance(row["disposition"], str) else row["disposition"],
        document_chunk_size=config.get("document_chunk_size"),
        client_settings=config.get("client_settings") or {},
        retention_days=config.get("retention_days") or None,
        retention_by_tag=config.get("retention_by_tag") or {},
        created_at=row["created_at"],
        updated_at=row["updated_at"],
    )
    if stats is not None:
        b.memory_count = stats["memories"]
        b.entity_count = stats["entities"]
        b.document_count = stats["documents"]
        b.last_memory_at = stats["last_memory_at"]
    return b


def bank_config(
    chunk_size: int | None,
    client_settings: dict | None = None,
    retention_days: int | None = None,
    retention_by_tag: dict[str, int] | None = None,
) -> dict:
    """Per-bank settings kept in banks.config (JSON, so new ones need no migration); the update
    merges them into what is there, key by key (a retention of 0 days is kept as null: none)."""
    config: dict = {"document_chunk_size": chunk_size} if chunk_size else {}
    if client_settings is not None:
        config["client_settings"] = client_settings
    if retention_days is not None:
        config["retention_days"] = retention_days or None
    if retention_by_tag is not None:
        config["retention_by_tag"] = retention_by_tag
    return config


async def ensure_bank(conn: asyncpg.Connection, bank_id: str) -> None:
    """Implicit creation on first retain."""
    await conn.execute(Q.bank_ensure, bank_id)


async def create_bank(rt: Runtime, req: BankCreate) -> tuple[Bank, bool]:
    """Create, or return the existing bank unchanged (create_bank is idempotent, like the
    reference's 'create or retrieve'); a name or mission given for a new bank is stored."""
    async with rt.pool.acquire() as conn:
        row = await conn.fetchrow(
            Q.bank_create,
            req.bank_id,
            req.name,
            req.mission,
            json.dumps(bank_config(req.document_chunk_size)),
        )
        if row is not None:
            return _bank(row), True
        row = await conn.fetchrow(Q.bank_get, req.bank_id)
        return _bank(row), False


async def get_bank(rt: Runtime, bank_id: str) -> Bank:
    async with rt.pool.acquire() as conn:
        row = await conn.fetchrow(Q.bank_get, bank_id)
        if row is None:
            raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
        stats = await conn.fetchrow(Q.bank_stats, bank_id)
        return _bank(row, stats)


async def list_banks(rt: Runtime, query: BankQuery, only: set[str] | None = None) -> BankList:
    """A page of the banks (`only`: those a scoped key may see), with their counts."""
    async with rt.pool.acquire() as conn:
        rows = await conn.fetch(
            Q.bank_list, sorted(only) if only is not None else None, query.q, query.limit, query.offset
        )
        rows = [r for r in rows if r["id"] is not None]
        ids = [r["id"] for r in rows]
        memories = {r["bank_id"]: r for r in await conn.fetch(Q.bank_memory_counts, ids)}
        entities = {r["bank_id"]: r["n"] for r in await conn.fetch(Q.bank_entity_counts, ids)}
    total = rows[0]["total"] if rows else await _total(rt, query, only)
    out = []
    for r in rows:
        b = _bank(r)
        m = memories.get(r["id"])
        b.memory_count = m["n"] if m else 0
        b.last_memory_at = m["last"] if m else None
        b.entity_count = entities.get(r["id"], 0)
        out.append(b)
    return BankList(banks=out, total=total)


async def _total(rt: Runtime, query: BankQuery, only: set[str] | None) -> int:
    """How many banks match when the page is empty (the statement's row of nulls says it)."""
    async with rt.pool.acquire() as conn:
        row = await conn.fetchrow(Q.bank_list, sorted(only) if only is not None else None, query.q, 0, 0)
    return int(row["total"]) if row else 0


async def change_bank(rt: Runtime, bank_id: str, change: Callable[[Bank], BankUpdate | None]) -> Bank:
    """Apply the update `change` makes of the bank as it is now, in one transaction holding the
    bank's row, so that a change computed from its settings (merging into them) loses no other
    writer's change. `change` returning None changes nothing."""
    async with rt.pool.acquire() as conn, conn.transaction():
        row = await conn.fetchrow(Q.bank_lock, bank_id)
        if row is None:
            raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
        req = change(_bank(row))
        if req is None:
            return _bank(row)
        return await _update(conn, bank_id, req)


async def update_bank(rt: Runtime, bank_id: str, req: BankUpdate) -> Bank:
    async with rt.pool.acquire() as conn:
        return await _update(conn, bank_id, req)


async def _update(conn: asyncpg.Connection, bank_id: str, req: BankUpdate) -> Bank:
    fields = req.model_dump(exclude_unset=True)
    row = await conn.fetchrow(
        Q.bank_update,
        bank_id,
        "name" in fields,
        fields.get("name"),
        "mission" in fields,
        fields.get("mission"),
        "disposition" in fields and fields["disposition"] is not None,
        json.dumps(fields.get("disposition") or {}),
        json.dumps(
            bank_config(
                fields.get("document_chunk_size"),
                fields.get("client_settings"),
                fields.get("retention_days"),
                fields.get("retention_by_tag"),
            )
        ),
    )
    if row is None:
        raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
    return _bank(row)


async def count_bank(rt: Runtime, bank_id: str) -> BankCounts:
    async with rt.pool.acquire() as conn:
        if await conn.fetchrow(Q.bank_get, bank_id) is None:
            raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
        kinds = await conn.fetch(Q.bank_counts_by_kind, bank_id)
        links = await conn.fetchrow(Q.bank_link_counts, bank_id)
        ops = await conn.fetch(Q.bank_operation_counts, bank_id)
        stats = await conn.fetchrow(Q.bank_stats, bank_id)
    return BankCounts(
        bank_id=bank_id,
        memories_by_type={r["kind"]: r["n"] for r in kinds},
        links_by_kind={"entity": links["entity"], "source": links["source"]},
        operations_by_status={r["status"]: r["n"] for r in ops},
        documents=stats["documents"],
        last_memory_at=stats["last_memory_at"],
    )


async def delete_bank(rt: Runtime, bank_id: str) -> int:
    """Delete a bank; its rows go by cascade. Writers that hold the bank's write lock are waited
    for; one that does not take it (an operation queued, an upload staged for an import, a
    document's access changed: their foreign-key checks lock the bank row after their own rows)
    may still meet the cascade in the other order, so a deadlock that PostgreSQL resolves against
    this transaction is retried."""
    for attempt in range(3):
        try:
            async with rt.writes.open(bank_id) as conn:
                n = await conn.fetchval(Q.bank_memory_count, bank_id)
                await conn.execute(Q.bank_delete_grants, bank_id)
                deleted = await conn.fetchval(Q.bank_delete, bank_id)
            break
        except asyncpg.DeadlockDetectedError:
            if attempt == 2:
                raise
    if deleted is None:
        raise NotFound(f"bank {bank_id!r} does not exist", "bank_id")
    return n
