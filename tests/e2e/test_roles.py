"""Server roles (HINDSIGHT_API_ROLE): an `api` process serves requests and claims no queued work;
`worker` processes answer only their probes and metrics and run the queue and the scheduler, a
stale mental model refreshed once whatever their number."""

from __future__ import annotations

import time

import httpx
import pytest

from conftest import Server, fresh_database, llm_env, wait_for
from support import op_done, retain


@pytest.fixture(scope="module")
def roles_db(pg_url):
    return fresh_database(pg_url, "roles")


@pytest.fixture(scope="module")
def api_server(roles_db, stub):
    s = Server(llm_env(stub, roles_db, role="api")).start()
    yield s
    s.stop()


def test_a_worker_process_serves_only_its_probes(roles_db, stub):
    worker = Server(llm_env(stub, roles_db, role="worker", worker_concurrency=0)).start()
    try:
        with worker.http() as c:
            assert c.get("/health").json()["role"] == "worker"
            assert c.get("/health/live").status_code == 200
            assert c.get("/health/ready").json()["ready"] is True
            assert "hindsight_http_requests" in c.get("/metrics").text
            for method, path in (("GET", "/v1/banks"), ("POST", "/v1/banks/b/recall"), ("POST", "/mcp/b/")):
                r = c.request(method, path, json={"query": "x"})
                assert r.status_code == 404, (path, r.text)
                assert "worker role" in r.json()["message"] and "/health/ready" in r.json()["message"]
    finally:
        worker.stop()


def test_api_claims_nothing_and_workers_refresh_a_model_once(api_server, roles_db, stub, bank):
    with api_server.http() as api:
        assert api.get("/health").json()["role"] == "api"
        # Queued through the api process, which leaves it for a worker.
        queued = api.post(
            f"/v1/default/banks/{bank}/memories",
            json={"items": [{"content": "Ines runs the night shift.", "tags": ["crew"]}], "async": True},
        ).json()["operation_id"]
        time.sleep(2)  # ticks of an api process's scheduler would have claimed it by now
        assert api.get(f"/v1/banks/{bank}/operations/{queued}").json()["status"] == "queued"

        workers = [Server(llm_env(stub, roles_db, role="worker")).start() for _ in range(2)]
        try:
            assert op_done(api, bank, queued)["status"] == "succeeded"
            created = api.post(
                f"/v1/banks/{bank}/mental-models",
                json={"name": "Crew", "source_query": "Who works here?", "tags": ["crew"]},
            )
            assert created.status_code == 202, created.text
            assert op_done(api, bank, created.json()["operation_id"])["status"] == "succeeded"
            model = api.get(f"/v1/banks/{bank}/mental-models/crew").json()
            # New memories with the model's tags make it stale: both workers' schedulers sweep,
            # and it is refreshed once.
            retain(api, bank, {"content": "Tomas joined the night shift.", "tags": ["crew"]})

            def refreshed():
                m = api.get(f"/v1/banks/{bank}/mental-models/crew").json()
                return m if m["last_refreshed_at"] > model["last_refreshed_at"] else None

            wait_for(refreshed, timeout=60)
            time.sleep(4)  # sweeps of both workers after the refresh (debounce 1 s, ticks 0.3 s)
            ops = api.get(f"/v1/banks/{bank}/operations", params={"type": "refresh_mental_model"}).json()
            refreshes = [o for o in ops["operations"] if o["status"] != "cancelled"]
            assert len(refreshes) == 2, [(o["created_at"], o["started_at"], o["finished_at"]) for o in refreshes]
            history = api.get(f"/v1/banks/{bank}/mental-models/crew/history").json()
            assert [h["version"] for h in history] == [2, 1]
            ran = {o["operation_id"]: o for o in refreshes}
            assert all(o["status"] == "succeeded" and o["attempts"] == 1 for o in ran.values()), ran
        finally:
            for w in workers:
                w.stop()
        with httpx.Client(base_url=api_server.url) as c:
            assert c.get("/health/ready").status_code == 200
