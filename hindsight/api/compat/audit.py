"""The audit log in the reference's shape (`/v1/default/banks/{bank_id}/audit-logs`), over the same
engine calls as ours: who read or changed the bank, when, and how it ended."""

from __future__ import annotations

from fastapi import APIRouter, Query

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.audit.schemas import AuditQuery, AuditStatsQuery
from hindsight.engine.rules.fields import MAX_OFFSET
from hindsight.engine.rules.validation import parse

router = APIRouter(prefix="/v1/default/banks/{bank_id}/audit-logs", tags=["Hindsight-compatible: audit"])


@router.get("", response_model=M.AuditLogListResponse, summary="The bank's audit records, newest first")
async def list_audit_logs(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    action: str | None = Query(None, description="Filter by action type"),
    transport: str | None = Query(None, description="Filter by transport (http, mcp, system)"),
    start_date: str | None = Query(None, description="Filter from this ISO datetime (inclusive)"),
    end_date: str | None = Query(None, description="Filter until this ISO datetime (exclusive)"),
    limit: int = Query(50, ge=1, le=500, description="Max items to return"),
    offset: int = Query(0, ge=0, le=MAX_OFFSET, description="Offset for pagination"),
):
    query = parse(
        AuditQuery,
        dict(action=action, transport=transport, start_date=start_date, end_date=end_date, limit=limit, offset=offset),
    )
    return convert.audit_list(bank_id, await eng.list_audit_logs(who, bank_id, query))


@router.get("/stats", response_model=M.AuditLogStatsResponse, summary="The bank's audit records counted by time")
async def audit_log_stats(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    action: str | None = Query(None, description="Filter by action type"),
    period: str = Query("7d", description="Time period: 1d, 7d, or 30d"),
):
    query = parse(AuditStatsQuery, dict(action=action, period=period))
    return convert.audit_stats(await eng.audit_stats(who, bank_id, query))
