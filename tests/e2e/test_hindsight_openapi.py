"""Requests built from Hindsight's own OpenAPI document (0.9.1, ../shared/hindsight/), against a
real server with the stub LLM: for every operation of `/v1/default` this server serves, requests
Schemathesis draws as valid by that document, on a bank of their own holding a memory, a
document, a mental model and a finished operation (the path's ids are those). Each answer is no
5xx; at least one per operation is accepted (2xx), since a request valid by the reference's
schema must not be refused for its shape; and an accepted answer matches the response schema that
document gives. Our rules are stricter than its schema in places (bank ids, tags, dates), so not
every drawn request is accepted, but every operation takes some."""

from __future__ import annotations

import json
import uuid
from pathlib import Path

import httpx
import pytest

from hindsight.api.compat.reference import NOT_SERVED, OPERATIONS

from conftest import Server, fresh_database, llm_env, wait_for

SPEC = Path(__file__).resolve().parents[3] / "shared" / "hindsight" / "openapi-0.9.1.json"
pytestmark = pytest.mark.skipif(not SPEC.exists(), reason="../shared/hindsight/ is not beside this checkout")
EXAMPLES = 12
SERVED = [(m, p, op) for m, p, op in OPERATIONS if op not in NOT_SERVED and p.startswith("/v1/")]
# Operations no request drawn from the document alone can succeed on, and why (each is accepted
# elsewhere: tests/e2e/test_hindsight_client_surface.py, tests/contract/test_hindsight_routes.py).
UNREACHABLE = {
    "cancel_operation": "needs an operation still pending or running (the bank's is finished: 409)",
    "retry_operation": "needs a failed operation (the bank's succeeded: 409)",
    "export_documents_sync_removed": "410 on purpose, as on the reference (it removed the route)",
    "import_documents": "needs a real transfer archive, not bytes drawn at random",
    "create_webhook": "the document's url is any string; ours must be an http(s) URL of an address deliveries may "
    "reach (made in tests/contract/test_webhooks.py and above, in _filled)",
    "import_bank_template": "the document gives no request body (the reference reads one raw), so none is drawn",
}


@pytest.fixture(scope="module")
def reference():
    import schemathesis

    spec = json.loads(SPEC.read_text())
    return schemathesis.openapi.from_dict(spec)


@pytest.fixture(scope="module")
def live(pg_url, stub):
    env = llm_env(stub, fresh_database(pg_url, "hindsight_openapi"))
    # webhooks need a key to seal their secrets with, and the one made here points at loopback
    env |= {
        "HINDSIGHT_API_SECRETS_KEY": "openapi-secrets-key-0123456789-abcd",
        "HINDSIGHT_API_ALLOW_PRIVATE_URLS": "true",
    }
    s = Server(env).start()
    yield s
    s.stop()


def _filled(http: httpx.Client, bank: str) -> dict[str, str]:
    """A bank holding something of each kind the reference's paths name, and their ids."""
    p = f"/v1/default/banks/{bank}"
    r = http.post(f"{p}/memories", json={"items": [{"content": "Ana lives in Porto.", "document_id": "doc-1"}]})
    assert r.status_code == 200, r.text
    memory_id = http.get(f"{p}/memories/list").json()["items"][0]["id"]
    chunk_id = http.get(f"{p}/documents/doc-1/chunks").json()["items"][0]["chunk_id"]
    model = http.post(f"{p}/mental-models", json={"id": "home", "name": "Home", "source_query": "Where?"}).json()

    def finished(op_id):
        def check():
            op = http.get(f"{p}/operations/{op_id}").json()
            return op if op["status"] in ("completed", "failed") else None

        return wait_for(check, timeout=60)

    finished(model["operation_id"])
    entity_id = http.get(f"{p}/entities").json()["items"][0]["id"]
    rule = http.post(f"{p}/directives", json={"name": "Tone", "content": "Answer briefly."})
    hook = http.post(f"{p}/webhooks", json={"url": "http://127.0.0.1:9/hook", "event_types": ["retain.completed"]})
    page = http.post(f"{p}/knowledge-base/pages", json={"name": "Home", "source_query": "Where does Ana live?"})
    assert rule.is_success and hook.is_success and page.is_success, (rule.text, hook.text, page.text)
    export = http.post(f"{p}/document-transfer/export").json()["operation_id"]
    key = finished(export)["result_metadata"]["storage_key"]
    return {
        "bank_id": bank,
        "memory_id": memory_id,
        "document_id": "doc-1",
        "chunk_id": chunk_id,
        "mental_model_id": "home",
        "operation_id": model["operation_id"],
        "key": key,
        "entity_id": entity_id,
        "directive_id": rule.json()["id"],
        "webhook_id": hook.json()["id"],
        "page_id": page.json()["page_id"],
        "node_id": page.json()["page_id"],
    }


@pytest.mark.parametrize("method,path,operation_id", SERVED, ids=[op for _, _, op in SERVED])
def test_requests_built_from_its_schema_are_served_in_its_shapes(live, reference, method, path, operation_id):
    from hypothesis import HealthCheck, given, settings
    from schemathesis import GenerationMode
    from schemathesis.specs.openapi.checks import response_schema_conformance

    operation = reference[path][method]
    accepted: list[int] = []
    problems: list[str] = []
    with httpx.Client(base_url=live.url, timeout=120) as http:
        ids = _filled(http, f"oa_{uuid.uuid4().hex[:10]}")

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            database=None,
            derandomize=True,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=operation.as_strategy(GenerationMode.POSITIVE))
        def run(case) -> None:
            for name in list(case.path_parameters or {}):
                case.path_parameters[name] = ids.get(name, case.path_parameters[name])
            if case.headers:
                case.headers.pop("authorization", None)
            response = case.call(base_url=live.url)
            if response.status_code >= 500:
                problems.append(f"{response.status_code} for {case.body!r:.200}: {response.text[:300]}")
                return
            if 200 <= response.status_code < 300:
                accepted.append(response.status_code)
                try:
                    case.validate_response(response, checks=[response_schema_conformance])
                except (Exception, BaseExceptionGroup) as exc:  # Schemathesis's FailureGroup
                    problems.append(f"answer does not match its schema: {exc!s:.600}")

        run()
    assert not problems, "\n".join(problems[:5])
    if operation_id not in UNREACHABLE:
        assert accepted, f"{method} {path}: none of {EXAMPLES} requests valid by its schema was accepted"
