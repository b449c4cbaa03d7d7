"""Webhooks in the reference's shape. Differences (docs/webhooks.md): every delivery is signed,
so a webhook created without a secret gets one the server makes (returned once, in `secret`) and
a PATCH clearing the secret makes a new one; deliveries are POSTed (GET is refused); the
receiver's answer body is never kept."""

from __future__ import annotations

from fastapi import APIRouter, Query

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.notify.schemas import DeliveryQuery, WebhookCreate, WebhookUpdate
from hindsight.engine.rules.fields import MAX_OFFSET
from hindsight.engine.rules.validation import parse

router = APIRouter(prefix="/v1/default/banks/{bank_id}/webhooks", tags=["Hindsight-compatible: webhooks"])


@router.post("", status_code=201, response_model=M.WebhookOut, summary="Subscribe a URL to the bank's events")
async def create_webhook(body: M.WebhookIn, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    req = parse(WebhookCreate, convert.webhook_create(body))
    return convert.webhook(await eng.create_webhook(who, bank_id, req))


@router.get("", response_model=M.WebhookListOut, summary="The bank's webhooks")
async def list_webhooks(
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    limit: int = Query(1000, ge=0, le=1000),
    offset: int = Query(0, ge=0, le=MAX_OFFSET),
):
    """Newer clients page (`limit`, `offset`); a bank has at most 20 webhooks."""
    return convert.webhook_list(await eng.list_webhooks(who, bank_id), limit, offset)


@router.delete("/{webhook_id}", response_model=M.Deleted, summary="Delete a webhook")
async def delete_webhook(webhook_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    await eng.delete_webhook(who, bank_id, webhook_id)
    return M.Deleted(success=True, message=f"webhook {webhook_id} deleted", deleted_count=1)


@router.patch("/{webhook_id}", response_model=M.WebhookOut, summary="Change what is given of a webhook")
async def update_webhook(webhook_id: str, body: M.WebhookPatch, bank_id: BankPath, who: PrincipalDep, eng: EngineDep):
    req = parse(WebhookUpdate, convert.webhook_update(body))
    return convert.webhook(await eng.update_webhook(who, bank_id, webhook_id, req))


@router.get("/{webhook_id}/deliveries", response_model=M.WebhookDeliveryListOut, summary="A webhook's deliveries")
async def list_deliveries(
    webhook_id: str,
    bank_id: BankPath,
    who: PrincipalDep,
    eng: EngineDep,
    limit: int = Query(50, ge=1, le=200),
    cursor: str | None = None,
):
    query = parse(DeliveryQuery, dict(limit=limit, cursor=cursor))
    return convert.delivery_list(webhook_id, await eng.list_webhook_deliveries(who, bank_id, webhook_id, query))
