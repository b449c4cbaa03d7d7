from __future__ import annotations

from fastapi import APIRouter, Depends, Response

from ..engine.keys import Principal
from ..engine.models import Bank, BankCreate, BankUpdate
from .deps import bank_path, engine, principal

router = APIRouter(prefix="/v1/banks", tags=["banks"])


@router.get("", summary="List banks (those the key may access)")
async def list_banks(who: Principal = Depends(principal), eng=Depends(engine)) -> dict:
    return {"banks": [b.model_dump(mode="json") for b in await eng.list_banks(who)]}


@router.post("", status_code=201, summary="Create a bank (returns the existing one with 200)")
async def create_bank(req: BankCreate, response: Response, who: Principal = Depends(principal), eng=Depends(engine)) -> Bank:
    bank, created = await eng.create_bank(who, req)
    if not created:
        response.status_code = 200
    return bank


@router.get("/{bank_id}", summary="Get a bank with its statistics")
async def get_bank(bank_id: str = Depends(bank_path), who: Principal = Depends(principal), eng=Depends(engine)) -> Bank:
    return await eng.get_bank(who, bank_id)


@router.patch("/{bank_id}", summary="Update a bank's name, mission or disposition")
async def update_bank(req: BankUpdate, bank_id: str = Depends(bank_path), who: Principal = Depends(principal), eng=Depends(engine)) -> Bank:
    return await eng.update_bank(who, bank_id, req)


@router.delete("/{bank_id}", summary="Delete a bank and everything in it")
async def delete_bank(bank_id: str = Depends(bank_path), who: Principal = Depends(principal), eng=Depends(engine)) -> dict:
    n = await eng.delete_bank(who, bank_id)
    return {"deleted": True, "bank_id": bank_id, "memories_deleted": n}
