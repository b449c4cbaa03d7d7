from __future__ import annotations

import tempfile

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import StreamingResponse

from ..engine.errors import InvalidArgument
from ..engine.keys import Principal
from ..engine.models import Bank, BankCreate, BankUpdate
from ..engine.portable import ImportResult, OnConflict
from .deps import bank_path, engine, principal

router = APIRouter(prefix="/v1/banks", tags=["banks"])


@router.get("", summary="List banks (those the key may access)")
async def list_banks(who: Principal = Depends(principal), eng=Depends(engine)) -> dict:
    return {"banks": [b.model_dump(mode="json") for b in await eng.list_banks(who)]}


@router.post("", status_code=201, summary="Create a bank (returns the existing one with 200)")
async def create_bank(
    req: BankCreate, response: Response, who: Principal = Depends(principal), eng=Depends(engine)
) -> Bank:
    bank, created = await eng.create_bank(who, req)
    if not created:
        response.status_code = 200
    return bank


@router.get("/{bank_id}", summary="Get a bank with its statistics")
async def get_bank(bank_id: str = Depends(bank_path), who: Principal = Depends(principal), eng=Depends(engine)) -> Bank:
    return await eng.get_bank(who, bank_id)


@router.patch("/{bank_id}", summary="Update a bank's name, mission or disposition")
async def update_bank(
    req: BankUpdate, bank_id: str = Depends(bank_path), who: Principal = Depends(principal), eng=Depends(engine)
) -> Bank:
    return await eng.update_bank(who, bank_id, req)


@router.delete("/{bank_id}", summary="Delete a bank and everything in it")
async def delete_bank(
    bank_id: str = Depends(bank_path), who: Principal = Depends(principal), eng=Depends(engine)
) -> dict:
    n = await eng.delete_bank(who, bank_id)
    return {"deleted": True, "bank_id": bank_id, "memories_deleted": n}


@router.get(
    "/{bank_id}/export",
    summary="Export the bank to one portable file (gzip JSON Lines)",
    response_class=StreamingResponse,
)
async def export_bank(bank_id: str = Depends(bank_path), who: Principal = Depends(principal), eng=Depends(engine)):
    stream = await eng.export_bank(who, bank_id)
    return StreamingResponse(
        stream,
        media_type="application/gzip",
        headers={"Content-Disposition": f'attachment; filename="{bank_id}.hindsight.jsonl.gz"'},
    )


@router.post("/{bank_id}/import", summary="Import an exported bank file into this bank (created if needed)")
async def import_bank(
    request: Request,
    bank_id: str = Depends(bank_path),
    on_conflict: OnConflict = Query("rename", description="rename, skip or replace objects whose name is taken"),
    who: Principal = Depends(principal),
    eng=Depends(engine),
) -> ImportResult:
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
