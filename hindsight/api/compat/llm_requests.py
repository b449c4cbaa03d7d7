"""The LLM request log in the reference's shape: every call of the bank, `success` or `error`
(its cause in `metadata.cause`), a call's operation as its trace. The prompt and the answer are
there only when HINDSIGHT_API_LLM_LOG_CONTENT keeps them. Calls are not linked to documents or
memories, so a filter on one finds none; `group` is accepted and pages by call."""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Query

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.banks.usage import LLMRequestList, LLMRequestQuery, LLMStatsQuery
from hindsight.engine.rules.fields import MAX_OFFSET
from hindsight.engine.rules.validation import parse

router = APIRouter(prefix="/v1/default/banks/{bank_id}/llm-requests", tags=["Hindsight-compatible: LLM requests"])
STATUS_IN = {"success": "ok", "error": "failed"}


@router.get("", response_model=M.LLMRequestListOut, summary="The bank's LLM calls, newest first")
async def list_llm_requests(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    status: str | None = None,
    operation: str | None = None,
    scope: str | None = None,
    provider: str | None = None,
    trace_id: str | None = None,
    document_id: str | None = None,
    memory_id: str | None = None,
    group: bool = False,
    start_date: datetime | None = None,
    end_date: datetime | None = None,
    limit: int = Query(50, ge=1, le=500),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    query = parse(
        LLMRequestQuery,
        dict(
            status=STATUS_IN.get(status, status) if status is not None else None,
            operation=operation,
            purpose=scope,
            provider=provider,
            operation_id=trace_id,
            since=start_date,
            until=end_date,
            limit=limit,
            offset=offset,
        ),
    )
    found = await eng.list_llm_requests(who, bank_id, query)
    if document_id is not None or memory_id is not None:  # no call is linked to one
        found = LLMRequestList(requests=[], total=0, limit=limit, offset=offset)
    return convert.llm_request_list(bank_id, found)


@router.get("/stats", response_model=M.LLMStatsOut, summary="LLM calls and tokens by outcome, in time buckets")
async def llm_request_stats(
    bank_id: BankPath, who: PrincipalDep, eng: EngineDep, operation: str | None = None, period: str = "7d"
):
    query = parse(LLMStatsQuery, dict(operation=operation, period=period if period in ("1d", "7d", "30d") else "7d"))
    return convert.llm_stats(await eng.llm_request_stats(who, bank_id, query))
