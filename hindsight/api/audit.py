"""The audit log over REST: one bank's records (admins, and keys that may write the bank), every
bank's (admins), their counts by time, and an export as JSON lines."""

from __future__ import annotations

from fastapi import APIRouter, Query
from fastapi.responses import StreamingResponse

from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.audit.schemas import AuditList, AuditQuery, AuditStats, AuditStatsQuery

router = APIRouter(tags=["audit"])

JSONL = "application/x-ndjson"


@router.get("/v1/audit-logs", summary="Every bank's audit records, newest first (admin)")
async def list_all_audit_logs(who: PrincipalDep, eng: EngineDep, query: AuditQuery = Query()) -> AuditList:
    return await eng.list_audit_logs(who, None, query)


@router.get(
    "/v1/audit-logs/export",
    summary="Every bank's audit records as JSON lines, oldest first (admin)",
    response_class=StreamingResponse,
)
async def export_all_audit_logs(who: PrincipalDep, eng: EngineDep, query: AuditQuery = Query()):
    stream = await eng.export_audit_logs(who, None, query)
    return StreamingResponse(
        stream, media_type=JSONL, headers={"Content-Disposition": 'attachment; filename="audit.jsonl"'}
    )


@router.get("/v1/banks/{bank_id}/audit-logs", summary="The bank's audit records: who did what, when; newest first")
async def list_audit_logs(
    bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: AuditQuery = Query()
) -> AuditList:
    return await eng.list_audit_logs(who, bank_id, query)


@router.get("/v1/banks/{bank_id}/audit-logs/stats", summary="The bank's audit records counted by operation and time")
async def audit_log_stats(
    bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: AuditStatsQuery = Query()
) -> AuditStats:
    return await eng.audit_stats(who, bank_id, query)


@router.get(
    "/v1/banks/{bank_id}/audit-logs/export",
    summary="The bank's audit records as JSON lines, oldest first",
    response_class=StreamingResponse,
)
async def export_audit_logs(bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: AuditQuery = Query()):
    stream = await eng.export_audit_logs(who, bank_id, query)
    return StreamingResponse(
        stream, media_type=JSONL, headers={"Content-Disposition": f'attachment; filename="{bank_id}.audit.jsonl"'}
    )
