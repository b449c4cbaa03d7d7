from __future__ import annotations

from fastapi import APIRouter

from hindsight.api.deps import EngineDep, PrincipalDep
from hindsight.engine.access.schemas import ApiKey, ApiKeyCreate, ApiKeyList

router = APIRouter(prefix="/v1/keys", tags=["keys"])


@router.post("", status_code=201, summary="Create an API key (admin); the secret is returned once")
async def create_key(req: ApiKeyCreate, who: PrincipalDep, eng: EngineDep) -> ApiKey:
    return await eng.create_key(who, req)


@router.get("", summary="List API keys (admin); secrets are never returned")
async def list_keys(who: PrincipalDep, eng: EngineDep) -> ApiKeyList:
    return await eng.list_keys(who)


@router.delete("/{key_id}", summary="Revoke an API key (admin)")
async def revoke_key(key_id: str, who: PrincipalDep, eng: EngineDep) -> ApiKey:
    return await eng.revoke_key(who, key_id)
