"""A mental-model refresh whose model is deleted ends as cancelled at once.

Deleting a model cancels its pending refresh, but a refresh already reflecting used to finish,
insert its version and hit the foreign key of the deleted model: a ForeignKeyViolationError in
the log, reported as "failed, queued" for a retry. It must end as cancelled, quietly, and a
refresh queued for a model that no longer exists must not count as succeeded.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import asyncpg
import pytest

from conftest import Server, fresh_database, llm_env, wait_for


@pytest.fixture(scope="module")
def slow_lease_server(pg_url, stub):
    # A 30 s lease: its heartbeat (every 10 s) cannot notice the deletion first, so the refresh
    # reaches its commit after the model is gone, as on a production server.
    url = fresh_database(pg_url, "refresh_cancel")
    s = Server(llm_env(stub, url, operation_lease=30)).start()
    s.db_url = url
    yield s
    s.stop()


def _operation(api, bank, op_id) -> dict:
    return api.get(f"/v1/banks/{bank}/operations/{op_id}").json()


def test_model_deleted_while_its_refresh_runs(slow_lease_server, bank):
    with slow_lease_server.http() as api:
        assert api.post(f"/v1/banks/{bank}/memories", json={"content": "Ana leads the design team."}).status_code == 200
        created = api.post(
            f"/v1/banks/{bank}/mental-models",
            json={"name": "Team", "source_query": "Who leads which team? [[sleep:3]]", "mental_model_id": "team"},
        ).json()
        op_id = created["operation_id"]
        wait_for(lambda: True if _operation(api, bank, op_id)["status"] == "running" else None)
        assert api.delete(f"/v1/banks/{bank}/mental-models/team").status_code in (200, 204)
        time.sleep(4)  # the stub answers; the refresh reaches its commit with the model gone
        op = _operation(api, bank, op_id)
        assert op["status"] == "cancelled" and op["error"] == "mental model deleted" and op["attempts"] == 1, op
        time.sleep(2.5)  # nothing retries it
        assert _operation(api, bank, op_id) == op
    log = slow_lease_server.log_path.read_text()
    assert "ForeignKeyViolation" not in log, log[-3000:]
    # the one attempt ended cancelled; none failed or was retried
    ends = [ln for ln in log.splitlines() if f"operation {op_id} " in ln and " started: " not in ln]
    assert len(ends) == 1 and f"operation {op_id} cancelled: " in ends[0], ends


def test_refresh_queued_for_a_model_that_is_gone_is_cancelled(slow_lease_server, bank):
    """The state a refresh request racing a delete leaves: an operation for no model."""
    with slow_lease_server.http() as api:
        assert api.post(f"/v1/banks/{bank}/memories", json={"content": "x"}).status_code == 200

        async def queue_orphan() -> str:
            conn = await asyncpg.connect(slow_lease_server.db_url)
            try:
                op_id = uuid.uuid4()
                await conn.execute(
                    "INSERT INTO operations (id, bank_id, type, payload) VALUES ($1, $2, 'refresh_mental_model',"
                    ' \'{"mental_model_id": "ghost", "reason": "requested"}\'::jsonb)',
                    op_id,
                    bank,
                )
                return str(op_id)
            finally:
                await conn.close()

        op_id = asyncio.run(queue_orphan())
        op = wait_for(lambda: o if (o := _operation(api, bank, op_id))["status"] not in ("queued", "running") else None)
        assert op["status"] == "cancelled" and op["error"] == "mental model deleted" and op["attempts"] == 1, op


def test_bank_deleted_while_a_refresh_runs(slow_lease_server, bank):
    """A bank deleted while its model's refresh is reflecting: the delete answers 200 and the
    refresh, committing after it, ends quietly. The race that deadlocked (a 500) is the delete
    landing inside the refresh's commit, a few milliseconds wide: test_hindsight_client.py's
    test_async_forms met it in 3 of 10 runs before the refresh took the bank's write lock, in 0
    of 10 after."""
    with slow_lease_server.http() as api:
        assert api.post(f"/v1/banks/{bank}/memories", json={"content": "Jo leads the data team."}).status_code == 200
        created = api.post(
            f"/v1/banks/{bank}/mental-models",
            json={"name": "Leads", "source_query": "Who leads the data team? [[sleep:2]]"},
        ).json()
        wait_for(lambda: _operation(api, bank, created["operation_id"])["status"] == "running")
        r = api.delete(f"/v1/default/banks/{bank}")
        assert r.status_code == 200 and r.json()["success"], r.text
        time.sleep(3)  # the refresh reaches its commit with the bank gone
        assert api.get(f"/v1/banks/{bank}").status_code == 404
    log = slow_lease_server.log_path.read_text()
    assert "Deadlock" not in log and "Traceback" not in log, log[-3000:]
