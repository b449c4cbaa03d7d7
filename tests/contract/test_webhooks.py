"""Webhooks in process: what a webhook may be made of (checked before anything is stored), a
server with no key to seal secrets with, another bank's ids and read-only keys; and, with the
stub LLM, the events of LLM work: extraction.completed (and Hindsight's consolidation.completed
with it), mental_model.refreshed and operation.failed, delivered to a receiver on loopback."""

from __future__ import annotations

import asyncio

import httpx
import pytest

from hindsight.engine.access.keys import Principal
from hindsight.engine.errors import Forbidden
from hindsight.engine.notify.schemas import WebhookCreate, WebhookUpdate

from conftest import fresh_database, llm_env, running_app
from support import Receiver

KEY = "contract-secrets-key-0123456789-abcdef"


async def test_a_server_without_a_key_refuses_webhooks(rest, bank):
    """The shared app has an external database and no HINDSIGHT_API_SECRETS_KEY."""
    r = await rest.post(f"/v1/banks/{bank}/webhooks", json={"url": "https://example.com/hook"})
    assert r.status_code == 409 and "HINDSIGHT_API_SECRETS_KEY" in r.json()["message"], r.text
    assert (await rest.get(f"/v1/banks/{bank}/webhooks")).json() == {"webhooks": []}


@pytest.fixture(scope="module")
def hooks_db(pg_url):
    return fresh_database(pg_url, "contract_webhooks")


@pytest.fixture(scope="module")
async def hooks_app(hooks_db, stub):
    env = llm_env(
        stub,
        hooks_db,
        allow_private_urls="true",
        secrets_key=KEY,
        webhook_retry_base="0.1",
        webhook_max_attempts="2",
    )
    async with running_app(env) as application:
        yield application


@pytest.fixture
async def hooks(hooks_app):
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=hooks_app), base_url="http://127.0.0.1") as c:
        yield c


async def test_what_a_webhook_may_be(hooks, bank):
    bad = [
        ({"url": "ftp://example.com/x"}, "url"),
        ({"url": "https://user:pw@example.com/x"}, "url"),
        ({"url": "not a url"}, "url"),
        ({"url": "https://example.com:99999/"}, "url"),
        ({"url": "https://example.com/", "event_types": []}, "event_types"),
        ({"url": "https://example.com/", "event_types": ["everything"]}, "event_types"),
        ({"url": "https://example.com/", "event_types": "retain.completed"}, "event_types"),
        ({"url": "https://example.com/", "secret": "short"}, "secret"),
        ({"url": "https://example.com/", "http_config": {"method": "GET"}}, "method"),
        ({"url": "https://example.com/", "http_config": {"timeout_seconds": 600}}, "timeout_seconds"),
        ({"url": "https://example.com/", "http_config": {"headers": {"X-Hindsight-Signature": "x"}}}, "headers"),
        ({"url": "https://example.com/", "http_config": {"headers": {"Host": "evil"}}}, "headers"),
        ({"url": "https://example.com/", "http_config": {"headers": {"X-A": "b\r\nX-B: c"}}}, "headers"),
        ({"url": "https://example.com/", "http_config": {"headers": {"Bad Name": "x"}}}, "headers"),
        ({"url": "https://example.com/\x00"}, "url"),
    ]
    for body, field in bad:
        r = await hooks.post(f"/v1/banks/{bank}/webhooks", json=body)
        assert r.status_code == 422 and field in r.json()["message"], (body, r.text)
    assert (await hooks.get(f"/v1/banks/{bank}/webhooks")).json() == {"webhooks": []}
    r = await hooks.post(f"/v1/default/banks/{bank}/webhooks", json={"url": "https://example.com/hook"})
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["event_types"] == ["consolidation.completed"] and made["secret"].startswith("whsec_")
    assert made["http_config"]["timeout_seconds"] == 30
    cleared = await hooks.patch(f"/v1/default/banks/{bank}/webhooks/{made['id']}", json={"secret": None})
    assert cleared.status_code == 200 and cleared.json()["secret"].startswith("whsec_")  # never unsigned here
    kept = await hooks.patch(f"/v1/default/banks/{bank}/webhooks/{made['id']}", json={"enabled": False})
    assert kept.json()["secret"] is None and kept.json()["enabled"] is False
    both = await hooks.patch(f"/v1/banks/{bank}/webhooks/{made['id']}", json={"secret": "x" * 20, "new_secret": True})
    assert both.status_code == 422
    for path in (f"/v1/banks/{bank}/webhooks/nope", f"/v1/banks/{bank}/webhooks/nope/deliveries"):
        assert (await hooks.get(path)).status_code == 422
    r = await hooks.get(f"/v1/banks/{bank}/webhooks/{made['id']}/deliveries", params={"cursor": "garbage"})
    assert r.status_code == 422 and "cursor" in r.json()["message"]
    for _ in range(19):
        await hooks.post(f"/v1/banks/{bank}/webhooks", json={"url": "https://example.com/more"})
    r = await hooks.post(f"/v1/banks/{bank}/webhooks", json={"url": "https://example.com/one-too-many"})
    assert r.status_code == 409 and "20 webhooks" in r.json()["message"]


async def test_another_banks_webhook_and_read_only_keys(hooks_app, hooks, bank):
    mine, theirs = bank + "_a", bank + "_b"
    r = await hooks.post(f"/v1/banks/{theirs}/webhooks", json={"url": "https://example.com/theirs"})
    their_id = r.json()["webhook_id"]
    for method, path, body in [
        ("GET", f"/v1/banks/{mine}/webhooks/{their_id}", None),
        ("PATCH", f"/v1/banks/{mine}/webhooks/{their_id}", {"url": "https://evil.example/"}),
        ("DELETE", f"/v1/banks/{mine}/webhooks/{their_id}", None),
        ("POST", f"/v1/banks/{mine}/webhooks/{their_id}/test", None),
        ("GET", f"/v1/banks/{mine}/webhooks/{their_id}/deliveries", None),
        ("PATCH", f"/v1/default/banks/{mine}/webhooks/{their_id}", {"url": "https://evil.example/"}),
        ("DELETE", f"/v1/default/banks/{mine}/webhooks/{their_id}", None),
        ("GET", f"/v1/default/banks/{mine}/webhooks/{their_id}/deliveries", None),
    ]:
        r = await hooks.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
    assert (await hooks.get(f"/v1/banks/{theirs}/webhooks/{their_id}")).json()["url"] == "https://example.com/theirs"
    engine = hooks_app.engine
    reader = Principal("bank", key_id="r", banks=frozenset({theirs}), read_only=True)
    assert len((await engine.list_webhooks(reader, theirs)).webhooks) == 1
    for attempt in (
        engine.create_webhook(reader, theirs, WebhookCreate(url="https://example.com/x")),
        engine.update_webhook(reader, theirs, their_id, WebhookUpdate(enabled=False)),
        engine.delete_webhook(reader, theirs, their_id),
        engine.test_webhook(reader, theirs, their_id),
    ):
        with pytest.raises(Forbidden):
            await attempt


async def _settled(hooks, bank, webhook_id, n: int) -> list[dict]:
    for _ in range(300):
        found = (await hooks.get(f"/v1/banks/{bank}/webhooks/{webhook_id}/deliveries")).json()["deliveries"]
        if len(found) >= n and all(d["status"] in ("delivered", "failed", "cancelled") for d in found):
            return found
        await asyncio.sleep(0.05)
    raise AssertionError(f"deliveries did not settle: {found}")


async def test_events_of_llm_work(hooks, stub, bank):
    receiver = Receiver()
    try:
        events = ["extraction.completed", "consolidation.completed", "mental_model.refreshed", "operation.failed"]
        r = await hooks.post(f"/v1/banks/{bank}/webhooks", json={"url": receiver.url, "event_types": events})
        hook = r.json()
        r = await hooks.post(
            f"/v1/banks/{bank}/memories", params={"wait": True}, json={"content": "Tomas repairs boats in Vigo."}
        )
        assert r.json()["extraction"] == "succeeded", r.text
        await hooks.post(f"/v1/banks/{bank}/mental-models", json={"name": "Boats", "source_query": "Who repairs?"})
        stub.fault("error", task="extract_facts", match="always broken")
        try:
            r = await hooks.post(
                f"/v1/banks/{bank}/memories", params={"wait": True}, json={"content": "This is always broken."}
            )
            assert r.json()["extraction"] == "failed", r.text
        finally:
            stub.clear_faults()
        found = await _settled(hooks, bank, hook["webhook_id"], 4)
        assert {d["event_type"] for d in found} == set(events)
        assert all(d["status"] == "delivered" for d in found)
        assert receiver.verify(hook["secret"]) == len(found)
        extracted = receiver.events("extraction.completed")[0]
        assert extracted["data"]["facts_created"] >= 1 and extracted["operation_id"]
        consolidated = receiver.events("consolidation.completed")[0]
        assert consolidated["data"]["observations_created"] == extracted["data"]["facts_created"]
        failed = receiver.events("operation.failed")[0]
        assert failed["status"] == "failed" and failed["data"]["operation_type"] == "retain_extract"
        assert "LLM" in failed["data"]["error"] and failed["data"]["attempts"] == 2
    finally:
        receiver.stop()


async def test_disabled_and_deleted_webhooks_get_nothing(hooks, bank):
    receiver = Receiver(answers=[500] * 5)
    try:
        hook = (await hooks.post(f"/v1/banks/{bank}/webhooks", json={"url": receiver.url})).json()
        await hooks.patch(f"/v1/banks/{bank}/webhooks/{hook['webhook_id']}", json={"enabled": False})
        await hooks.post(f"/v1/banks/{bank}/memories", json={"content": "Nobody hears of this."})
        await hooks.patch(f"/v1/banks/{bank}/webhooks/{hook['webhook_id']}", json={"enabled": True})
        assert (await hooks.get(f"/v1/banks/{bank}/webhooks/{hook['webhook_id']}/deliveries")).json() == {
            "deliveries": [],
            "next_cursor": None,
        }
        # a delivery retrying (500s) when the webhook goes: cancelled, not sent again
        await hooks.post(f"/v1/banks/{bank}/memories", json={"content": "This one is heard, badly."})
        for _ in range(200):
            if receiver.requests:
                break
            await asyncio.sleep(0.05)
        r = await hooks.delete(f"/v1/banks/{bank}/webhooks/{hook['webhook_id']}")
        assert r.status_code == 200 and r.json()["deleted"] is True
        await asyncio.sleep(0.5)
        sent = len(receiver.requests)
        await asyncio.sleep(0.5)
        assert len(receiver.requests) == sent <= 2
    finally:
        receiver.stop()
