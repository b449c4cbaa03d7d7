from __future__ import annotations

import tempfile

from fastapi import APIRouter, Query, Request, Response
from fastapi.responses import StreamingResponse

from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.banks.schemas import Bank, BankCreate, BankDeleted, BankList, BankQuery, BankUpdate
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.transfer.portable import ImportResult, OnConflict
from hindsight.web.audit import about_bank

router = APIRouter(prefix="/v1/banks", tags=["banks"])


@router.get("", summary="List banks (those the key may access)")
async def list_banks(who: PrincipalDep, eng: EngineDep, query: BankQuery = Query()) -> BankList:
    return await eng.list_banks(who, query)


@router.post(
    "",
    status_code=201,
    summary="Create a bank (returns the existing one with 200)",
    responses={200: {"model": Bank, "description": "The bank already existed: returned unchanged"}},
)
async def create_bank(req: BankCreate, request: Request, response: Response, who: PrincipalDep, eng: EngineDep) -> Bank:
    about_bank(request.scope, req.bank_id)
    created = await eng.create_bank(who, req)
    if not created.created:
        response.status_code = 200
    return created.bank


@router.get("/{bank_id}", summary="Get a bank with its statistics")
async def get_bank(bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Bank:
    return await eng.get_bank(who, bank_id)


@router.patch("/{bank_id}", summary="Update a bank's name, mission or disposition")
async def update_bank(req: BankUpdate, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Bank:
    return await eng.update_bank(who, bank_id, req)


@router.delete("/{bank_id}", summary="Delete a bank and everything in it")
async def delete_bank(bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> BankDeleted:
    return await eng.delete_bank(who, bank_id)


@router.get(
    "/{bank_id}/export",
    summary="Export the bank to one portable file (gzip JSON Lines)",
    response_class=StreamingResponse,
)
async def export_bank(bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    stream = await eng.export_bank(who, bank_id)
    return StreamingResponse(
        stream,
        media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="{bank_id}.hindsight.jsonl.gz"'},
    )


@router.post("/{bank_id}/import", summary="Import an exported bank file into this bank (created if needed)")
async def import_bank(
    request: Request,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    on_conflict: OnConflict = Query("rename", description="rename, skip or replace objects whose name is taken"),
) -> ImportResult:
    eng.require(who, bank_id, write=True)  # before reading an upload that may be gigabytes
    limit = eng.settings.max_archive_bytes
    # Spooled to disk: an archive can be far larger than we want in memory.
    with tempfile.SpooledTemporaryFile(max_size=16_000_000) as f:
        size = 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                raise InvalidArgument(f"archive: larger than the limit of {limit} bytes", "archive")
            f.write(chunk)
        if size == 0:
            raise InvalidArgument("archive: the request body is empty; send the exported file", "archive")
        f.seek(0)
        return await eng.import_bank(who, bank_id, f, on_conflict)
