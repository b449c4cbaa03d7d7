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

from conftest import Server, fresh_database, llm_env


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


def _until(fn, timeout=20.0):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if (value := fn()) is not None:
            return value
        time.sleep(0.1)
    raise AssertionError("timed out")


def test_model_deleted_while_its_refresh_runs(slow_lease_server, bank):
    with slow_lease_server.http() as api:
        assert api.post(f"/v1/banks/{bank}/memories", json={"content": "Ana leads the design team."}).status_code == 200
        created = api.post(f"/v1/banks/{bank}/mental-models", json={
            "name": "Team", "source_query": "Who leads which team? [[sleep:3]]", "mental_model_id": "team"}).json()
        op_id = created["operation_id"]
        _until(lambda: True if _operation(api, bank, op_id)["status"] == "running" else None)
        assert api.delete(f"/v1/banks/{bank}/mental-models/team").status_code in (200, 204)
        time.sleep(4)  # the stub answers; the refresh reaches its commit with the model gone
        op = _operation(api, bank, op_id)
        assert op["status"] == "cancelled" and op["error"] == "mental model deleted" and op["attempts"] == 1, op
        time.sleep(2.5)  # nothing retries it
        assert _operation(api, bank, op_id) == op
    log = slow_lease_server.log_path.read_text()
    assert "ForeignKeyViolation" not in log and f"operation {op_id} (refresh_mental_model) attempt" not in log, log[-3000:]


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
                    " '{\"mental_model_id\": \"ghost\", \"reason\": \"requested\"}'::jsonb)", op_id, bank)
                return str(op_id)
            finally:
                await conn.close()

        op_id = asyncio.run(queue_orphan())
        op = _until(lambda: o if (o := _operation(api, bank, op_id))["status"] not in ("queued", "running") else None)
        assert op["status"] == "cancelled" and op["error"] == "mental model deleted" and op["attempts"] == 1, op
