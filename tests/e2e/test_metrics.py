"""Prometheus /metrics: what operators watch, with labels that never carry a bank id."""

from __future__ import annotations

import re

from prometheus_client.parser import text_string_to_metric_families

from conftest import ADMIN_KEY, AUTH_EXT, Server, mcp_session, wait_for
from support import metric as value
from support import metric_samples as samples


async def test_metrics_count_requests_tools_arms_and_read_the_queue(server, api, bank):
    before = samples(api.get("/metrics").text)
    api.post(f"/v1/banks/{bank}/memories", json={"content": "The ferry leaves at 9 in May 2024."}).raise_for_status()
    api.post(f"/v1/banks/{bank}/recall", json={"query": "When did the ferry leave in May 2024?"}).raise_for_status()
    async with mcp_session(f"{server.url}/mcp/{bank}/") as c:
        await c.call_tool("recall", {"query": "ferry"})
        r = await c.call_tool("recall", {"query": "", "top_k": 0})  # an argument error, counted as such
        assert r.is_error
    r = api.get("/metrics")
    assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
    assert bank not in r.text  # route templates and tool names only
    after = samples(r.text)

    def grew(name, **labels):
        return value(after, name, **labels) - value(before, name, **labels)

    assert grew("hindsight_http_requests_total", method="POST", route="/v1/banks/{bank_id}/recall", status="200") == 1
    assert grew("hindsight_http_requests_total", method="POST", route="/mcp/{bank_id}", status="200") >= 2
    assert grew("hindsight_http_request_seconds_count", method="POST", route="/v1/banks/{bank_id}/recall") == 1
    assert grew("hindsight_mcp_tool_calls_total", tool="recall", outcome="ok") == 1
    assert grew("hindsight_mcp_tool_calls_total", tool="recall", outcome="error") == 1
    assert grew("hindsight_mcp_tool_seconds_count", tool="recall") == 2  # failed calls are timed too
    for arm in ("semantic", "keyword", "temporal"):
        assert grew("hindsight_recall_arm_seconds_count", arm=arm) >= 1, arm
    assert grew("hindsight_retain_items_total") == 1 and grew("hindsight_retain_units_total", kind="raw") == 1
    assert grew("hindsight_embedding_seconds_count", call="query") >= 1
    assert value(after, "hindsight_db_pool_connections", state="max") == 10
    assert value(after, "hindsight_db_pool_connections", state="open") >= 1


def test_llm_calls_and_queue_depth_are_counted(llm_server, llm_api, bank):
    before = samples(llm_api.get("/metrics").text)
    r = llm_api.post(f"/v1/banks/{bank}/memories?wait=true", json={"content": "Ravi bakes bread on Sundays."})
    assert r.status_code == 200 and r.json()["extraction"] == "succeeded"
    after = samples(llm_api.get("/metrics").text)
    calls = [k for k in after if k[0] == "hindsight_llm_calls_total" and dict(k[1])["outcome"] == "ok"]
    assert calls and sum(after[k] - before.get(k, 0) for k in calls) >= 1
    assert value(
        after, "hindsight_llm_tokens_total", operation="retain", model="openai/stub-model", kind="prompt"
    ) > value(before, "hindsight_llm_tokens_total", operation="retain", model="openai/stub-model", kind="prompt")
    assert value(after, "hindsight_retain_units_total", kind="fact") > value(
        before, "hindsight_retain_units_total", kind="fact"
    )

    # queue depth, read from the database at scrape: a refresh held open by the stub LLM
    created = llm_api.post(
        f"/v1/banks/{bank}/mental-models", json={"name": "Baking", "source_query": "Who bakes? [[sleep:2]]"}
    ).json()
    wait_for(
        lambda: llm_api.get(f"/v1/banks/{bank}/operations/{created['operation_id']}").json()["status"] == "running"
    )
    during = samples(llm_api.get("/metrics").text)
    assert value(during, "hindsight_operations", type="refresh_mental_model", status="running") >= 1


def test_metrics_can_require_an_admin_key(pg_url):
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": pg_url,
            "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
            "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
            "HINDSIGHT_API_METRICS_ADMIN_ONLY": "true",
        }
    ).start()
    try:
        with s.http() as anon:
            r = anon.get("/metrics")
            assert r.status_code == 401 and r.json()["error"] == "unauthorized"
        with s.http(ADMIN_KEY) as admin:
            key = admin.post("/v1/keys", json={"name": "m", "role": "bank", "banks": ["b1"]}).json()["key"]
            assert admin.get("/metrics").status_code == 200
            assert re.search(r"^hindsight_http_requests_total", admin.get("/metrics").text, re.M)
        with s.http(key) as scoped:
            assert scoped.get("/metrics").status_code == 403
    finally:
        s.stop()


def test_the_example_dashboard_uses_metrics_that_exist(server, api):
    """deploy/grafana-dashboard.json: every series it queries is one the server exports."""
    import json
    from pathlib import Path

    dashboard = json.loads((Path(__file__).resolve().parents[2] / "deploy" / "grafana-dashboard.json").read_text())
    wanted = {m for p in dashboard["panels"] for t in p["targets"] for m in re.findall(r"hindsight_\w+", t["expr"])}
    exported = {f.name for f in text_string_to_metric_families(api.get("/metrics").text)}
    exported |= {f"{n}_total" for n in exported} | {f"{n}_bucket" for n in exported}
    assert wanted and wanted <= exported, wanted - exported
