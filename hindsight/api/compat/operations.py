"""Operations in the reference's words: pending, processing, completed, failed, cancelled."""

from __future__ import annotations

from fastapi import APIRouter, Query

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.errors import Conflict, InvalidArgument
from hindsight.engine.queue.schemas import TERMINAL, OperationQuery
from hindsight.engine.rules.fields import MAX_OFFSET
from hindsight.engine.rules.validation import parse

router = APIRouter(prefix="/v1/default/banks/{bank_id}/operations", tags=["Hindsight-compatible: operations"])


@router.get("", response_model=M.OperationList, summary="The bank's operations, newest first")
async def list_operations(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    status: str | None = None,
    type: str | None = None,
    limit: int = Query(20, ge=1, le=100),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    if status is not None and status not in convert.STATUS_IN:
        raise InvalidArgument(f"status: one of {', '.join(convert.STATUS_OUT.values())}", "status")
    ours = convert.STATUS_IN[status] if status is not None else None
    query = parse(OperationQuery, dict(status=ours, type=type, limit=limit, offset=offset))
    return convert.operation_list(bank_id, await eng.list_operations(who, bank_id, query), limit, offset)


@router.get("/{operation_id}", response_model=M.OperationStatus, summary="One operation's status")
async def get_operation(operation_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    return convert.operation_status(await eng.get_operation(who, bank_id, operation_id))


@router.delete("/{operation_id}", response_model=M.Cancelled, summary="Cancel a pending or running operation")
async def cancel_operation(operation_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    before = await eng.get_operation(who, bank_id, operation_id)
    if before.status in TERMINAL:
        raise Conflict(f"operation {operation_id} already ended ({convert.STATUS_OUT[before.status]})", "operation_id")
    op = await eng.cancel_operation(who, bank_id, operation_id)
    return M.Cancelled(
        success=op.status == "cancelled",
        operation_id=operation_id,
        message=f"operation {operation_id} is {convert.STATUS_OUT[op.status]}",
    )


@router.post(
    "/{operation_id}/retry",
    response_model=M.OperationDone,
    summary="Queue a failed operation again, as new (409 for one not failed)",
)
async def retry_operation(operation_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    op = await eng.retry_operation(who, bank_id, operation_id)
    return M.OperationDone(
        success=True, operation_id=operation_id, message=f"operation {operation_id} is {convert.STATUS_OUT[op.status]}"
    )


@router.delete(
    "/{operation_id}/delete",
    response_model=M.OperationDone,
    summary="Forget a finished operation and the archive it wrote (409 for one still pending or running)",
)
async def delete_operation(operation_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    await eng.delete_operation(who, bank_id, operation_id)
    return M.OperationDone(success=True, operation_id=operation_id, message=f"operation {operation_id} deleted")
