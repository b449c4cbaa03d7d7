"""Webhooks against a real server and a real receiver on loopback (the private-URL setting on, as
a receiver on this machine needs): each event is delivered by the worker, signed with the
webhook's secret (the receiver checks every signature), retried with backoff until the receiver
takes it, and logged; Hindsight's routes read the same webhooks and deliveries. By default, a
private address is refused: when the webhook is made (an IP literal, localhost) and when a
delivery finds its name resolves to one."""

from __future__ import annotations

import socket

import pytest

from hindsight.files.fetch import public_address

from conftest import Server, fresh_database, wait_for
from support import Receiver

KEY = "test-secrets-key-0123456789-abcdefghij"


@pytest.fixture(scope="module")
def hook_server(pg_url):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "webhooks"),
            "HINDSIGHT_API_ALLOW_PRIVATE_URLS": "true",
            "HINDSIGHT_API_SECRETS_KEY": KEY,
            "HINDSIGHT_API_WEBHOOK_RETRY_BASE": "0.2",
            "HINDSIGHT_API_WEBHOOK_MAX_ATTEMPTS": "3",
            "HINDSIGHT_API_SCHEDULER_INTERVAL": "0.2",
        }
    ).start()
    yield s
    s.stop()


@pytest.fixture
def receiver():
    r = Receiver()
    yield r
    r.stop()


def deliveries(api, bank, webhook_id, **params):
    r = api.get(f"/v1/banks/{bank}/webhooks/{webhook_id}/deliveries", params=params)
    assert r.status_code == 200, r.text
    return r.json()["deliveries"]


def test_events_are_delivered_signed_and_logged(hook_server, receiver, bank):
    with hook_server.http() as api:
        r = api.post(
            f"/v1/banks/{bank}/webhooks",
            json={
                "url": receiver.url + "/hooks?source=hindsight",
                "event_types": ["retain.completed", "mental_model.refreshed"],
                "http_config": {"headers": {"X-Team": "blue"}, "params": {"bank": bank}},
            },
        )
        assert r.status_code == 201, r.text
        hook = r.json()
        secret = hook["secret"]
        assert secret.startswith("whsec_") and len(secret) > 40
        listed = api.get(f"/v1/banks/{bank}/webhooks").json()["webhooks"]
        assert [w["webhook_id"] for w in listed] == [hook["webhook_id"]] and listed[0]["secret"] is None
        assert api.get(f"/v1/banks/{bank}/webhooks/{hook['webhook_id']}").json()["secret"] is None

        retained = api.post(
            f"/v1/banks/{bank}/memories",
            json={"content": "Ines keeps the lighthouse.", "tags": ["coast"], "document_id": "log-1"},
        ).json()
        wait_for(lambda: receiver.events("retain.completed"))
        (event,) = receiver.events("retain.completed")
        assert event["bank_id"] == bank and event["status"] == "completed"
        assert event["data"]["memory_unit_count"] == 1 and event["data"]["tags"] == ["coast"]
        assert event["data"]["document_id"] == "log-1" and event["data"]["memory_ids"] == retained["memory_ids"]
        path, headers, _ = receiver.requests[0]
        assert path == f"/hooks?source=hindsight&bank={bank}"
        assert headers["x-hindsight-event"] == "retain.completed" and headers["x-team"] == "blue"
        assert headers["x-hindsight-delivery"] == event["delivery_id"]
        assert headers["content-type"] == "application/json"

        # an event it does not subscribe to: nothing; one it does: delivered
        api.post(f"/v1/banks/{bank}/mental-models", json={"name": "Coast", "source_query": "Who keeps it?"})
        wait_for(lambda: receiver.events("mental_model.refreshed"))
        refreshed = receiver.events("mental_model.refreshed")[0]
        assert refreshed["data"]["mental_model_id"] == "coast" and refreshed["data"]["version"] == 1
        assert receiver.verify(secret) == 2  # every delivery signed with the secret shown once

        log = deliveries(api, bank, hook["webhook_id"])
        assert [d["event_type"] for d in log] == ["mental_model.refreshed", "retain.completed"]
        assert all(d["status"] == "delivered" and d["attempts"] == 1 for d in log)
        assert log[1]["delivery_id"] == event["delivery_id"] and log[1]["event"]["data"]["tags"] == ["coast"]

        # a test event, on demand
        r = api.post(f"/v1/banks/{bank}/webhooks/{hook['webhook_id']}/test")
        assert r.status_code == 202
        wait_for(lambda: receiver.events("webhook.test"))

        # a new secret: shown once, and the next deliveries are signed with it
        rotated = api.patch(f"/v1/banks/{bank}/webhooks/{hook['webhook_id']}", json={"new_secret": True}).json()
        assert rotated["secret"] and rotated["secret"] != secret
        receiver.requests.clear()
        api.post(f"/v1/banks/{bank}/memories", json={"content": "The lamp was replaced."})
        wait_for(lambda: receiver.events("retain.completed"))
        assert receiver.verify(rotated["secret"]) == 1


def test_failed_deliveries_are_retried_then_given_up(hook_server, bank):
    flaky, down = Receiver(answers=[500, 503]), Receiver(answers=[500] * 10)
    try:
        with hook_server.http() as api:
            hooks = [
                api.post(f"/v1/banks/{bank}/webhooks", json={"url": r.url, "secret": "shared-secret-1"}).json()
                for r in (flaky, down)
            ]
            assert all(h["secret"] is None for h in hooks)  # a secret of the client's is not shown back
            api.post(f"/v1/banks/{bank}/memories", json={"content": "Porto has six bridges."})

            def settled(hook):
                found = deliveries(api, bank, hook["webhook_id"])
                return found if found and found[0]["status"] in ("delivered", "failed") else None

            (delivered,) = wait_for(lambda: settled(hooks[0]))
            assert delivered["status"] == "delivered" and delivered["attempts"] == 3
            assert len(flaky.requests) == 3 and flaky.verify("shared-secret-1") == 3
            ids = {h["x-hindsight-delivery"] for _, h, _ in flaky.requests}
            assert len(ids) == 1 and len({body for _, _, body in flaky.requests}) == 1  # one delivery, same bytes

            (failed,) = wait_for(lambda: settled(hooks[1]))
            assert failed["status"] == "failed" and failed["attempts"] == 3 and len(down.requests) == 3
            assert failed["last_status_code"] == 500 and "HTTP 500" in failed["last_error"]

            # Hindsight's routes: the same webhooks and deliveries in its shapes
            ref = api.get(f"/v1/default/banks/{bank}/webhooks").json()["items"]
            assert {w["id"] for w in ref} == {h["webhook_id"] for h in hooks}
            assert all(w["secret"] is None and w["event_types"] == ["retain.completed"] for w in ref)
            log = api.get(f"/v1/default/banks/{bank}/webhooks/{hooks[1]['webhook_id']}/deliveries").json()
            (item,) = log["items"]
            assert item["status"] == "failed" and item["last_response_status"] == 500 and item["url"] == down.url
            assert item["last_response_body"] is None and log["next_cursor"] is None
            gone = api.delete(f"/v1/default/banks/{bank}/webhooks/{hooks[1]['webhook_id']}")
            assert gone.status_code == 200 and gone.json()["success"] is True
            assert api.get(f"/v1/banks/{bank}/webhooks/{hooks[1]['webhook_id']}").status_code == 404
    finally:
        flaky.stop()
        down.stop()


def test_private_addresses_are_refused_by_default(pg_url, receiver, bank):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "webhooks_strict"),
            "HINDSIGHT_API_SECRETS_KEY": KEY,
            "HINDSIGHT_API_SCHEDULER_INTERVAL": "0.2",
        }
    ).start()
    try:
        with s.http() as api:
            port = receiver.url.rsplit(":", 1)[1]
            for url in (
                receiver.url,
                f"http://localhost:{port}/",
                "http://169.254.169.254/latest/meta-data/",
                "http://[::ffff:127.0.0.1]/",
                "http://10.1.2.3/hook",
            ):
                for path in (f"/v1/banks/{bank}/webhooks", f"/v1/default/banks/{bank}/webhooks"):
                    r = api.post(path, json={"url": url})
                    assert r.status_code == 422 and "private" in r.json()["message"], (url, r.text)
            # a name that resolves to a private address passes the check of its form, and is
            # refused when a delivery resolves it: failed at once, nothing sent
            host = socket.gethostname()
            addresses = {a[4][0] for a in socket.getaddrinfo(host, None)}
            if any(public_address(a) for a in addresses):
                pytest.skip(f"{host} resolves to a public address here")
            hook = api.post(f"/v1/banks/{bank}/webhooks", json={"url": f"http://{host}:{port}/"}).json()
            api.post(f"/v1/banks/{bank}/memories", json={"content": "Nothing leaves this machine."})

            def failed():
                found = deliveries(api, bank, hook["webhook_id"])
                return found if found and found[0]["status"] == "failed" else None

            (d,) = wait_for(failed)
            assert d["attempts"] == 1 and "private" in d["last_error"] and receiver.requests == []
    finally:
        s.stop()
