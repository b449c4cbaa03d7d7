"""REST face of webhooks: a bank's subscriptions to its events, signed deliveries and their log
(docs/webhooks.md)."""

from __future__ import annotations

from fastapi import APIRouter, Query

from hindsight.api.deps import BankPath, EngineDep, PrincipalDep
from hindsight.engine.notify.schemas import (
    DeliveryList,
    DeliveryQuery,
    TestQueued,
    Webhook,
    WebhookCreate,
    WebhookDeleted,
    WebhookList,
    WebhookUpdate,
)

router = APIRouter(prefix="/v1/banks/{bank_id}/webhooks", tags=["webhooks"])


@router.post("", status_code=201, summary="Subscribe a URL to the bank's events; the signing secret is shown once")
async def create(req: WebhookCreate, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Webhook:
    return await eng.create_webhook(who, bank_id, req)


@router.get("", summary="The bank's webhooks (never their secrets)")
async def list_(bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> WebhookList:
    return await eng.list_webhooks(who, bank_id)


@router.get("/{webhook_id}", summary="One webhook")
async def get(webhook_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Webhook:
    return await eng.get_webhook(who, bank_id, webhook_id)


@router.patch("/{webhook_id}", summary="Change a webhook's URL, events, settings or secret")
async def update(req: WebhookUpdate, webhook_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> Webhook:
    return await eng.update_webhook(who, bank_id, webhook_id, req)


@router.delete("/{webhook_id}", summary="Delete a webhook; its queued deliveries are cancelled")
async def delete(webhook_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> WebhookDeleted:
    return await eng.delete_webhook(who, bank_id, webhook_id)


@router.post("/{webhook_id}/test", status_code=202, summary="Send the webhook a test event (webhook.test)")
async def test(webhook_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep) -> TestQueued:
    return await eng.test_webhook(who, bank_id, webhook_id)


@router.get("/{webhook_id}/deliveries", summary="A webhook's deliveries, newest first: status, attempts, last answer")
async def deliveries(
    webhook_id: str, bank_id: BankPath, who: PrincipalDep, eng: EngineDep, query: DeliveryQuery = Query()
) -> DeliveryList:
    return await eng.list_webhook_deliveries(who, bank_id, webhook_id, query)
