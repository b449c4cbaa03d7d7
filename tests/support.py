"""Helpers shared by several test modules (no test module imports another)."""

from __future__ import annotations

import base64
import io

from prometheus_client.parser import text_string_to_metric_families

from conftest import wait_for

# Tables whose rows belong to a bank: those with a bank_id column, and the link tables that hang
# off them. tests/unit/test_sql_bank_scope.py holds every statement on them to its bank;
# tests/db/test_sql_statements.py checks this list against the migrated schema.
BANK_TABLES = {
    "banks",
    "memories",
    "memory_terms",
    "entities",
    "memory_entities",
    "fact_sources",
    "memory_documents",
    "bank_lexemes",
    "chunk_lexemes",
    "mental_models",
    "mental_model_versions",
    "memory_versions",
    "operations",
    "llm_usage",
    "documents",
    "chunks",
    "document_uploads",
    "oauth_grants",
    "oauth_codes",
    "oauth_tokens",
    "bank_turns",
    "bank_files",
}
WITHOUT_BANK_COLUMN = {"memory_entities", "fact_sources", "document_uploads", "oauth_codes", "oauth_tokens"}


def make_key(admin, **body):
    r = admin.post("/v1/keys", json={"name": "k", **body})
    assert r.status_code == 201, r.text
    return r.json()


def retain(api, bank, body, wait=True):
    r = api.post(f"/v1/banks/{bank}/memories", json=body, params={"wait": wait})
    assert r.status_code == 200, r.text
    return r.json()


def recall_texts(api, bank, query, **kw):
    r = api.post(f"/v1/banks/{bank}/recall", json={"query": query, **kw})
    assert r.status_code == 200, r.text
    return [m["text"] for m in r.json()["results"]], r.json()["results"]


def op_done(api, bank, op_id):
    def check():
        op = api.get(f"/v1/banks/{bank}/operations/{op_id}").json()
        return op if op["status"] in ("succeeded", "failed", "cancelled") else None

    return wait_for(check)


def metric_samples(text: str) -> dict[tuple, float]:
    """A /metrics page as {(sample name, sorted labels): value}."""
    out = {}
    for family in text_string_to_metric_families(text):
        for s in family.samples:
            out[(s.name, tuple(sorted(s.labels.items())))] = s.value
    return out


def metric(found: dict, name: str, **labels) -> float:
    return found.get((name, tuple(sorted(labels.items()))), 0.0)


def pdf_bytes() -> bytes:
    from fpdf import FPDF

    pdf = FPDF()
    for text in (
        "Falcon X installation guide. Mount the router on a wall bracket.",
        "Troubleshooting: if the Falcon X LED blinks red, reset the firmware.",
    ):
        pdf.add_page()
        pdf.set_font("helvetica", size=12)
        pdf.multi_cell(0, 10, text)
    return bytes(pdf.output())


def docx_bytes() -> bytes:
    import docx

    d = docx.Document()
    d.add_heading("Falcon X technical specifications", level=1)
    d.add_paragraph("The Falcon X draws twelve watts and supports WiFi 7.")
    buf = io.BytesIO()
    d.save(buf)
    return buf.getvalue()


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def import_docs(api, bank, wait=True, **body):
    r = api.post(f"/v1/banks/{bank}/documents", json=body, params={"wait": wait})
    assert r.status_code == 202, r.text
    return r.json()


def rpc(http, path: str, token: str, method: str = "tools/list", params: dict | None = None):
    """One JSON-RPC request to an MCP endpoint with a bearer credential (an API key or a token)."""
    body = {"jsonrpc": "2.0", "id": 1, "method": method, **({"params": params} if params else {})}
    return http.post(
        path,
        json=body,
        headers={"Authorization": f"Bearer {token}", "Accept": "application/json, text/event-stream"},
    )


def plan_nodes(plan: dict):
    """Every node of an EXPLAIN (FORMAT JSON) plan, the root first."""
    yield plan
    for child in plan.get("Plans", []):
        yield from plan_nodes(child)


class Runs:
    """Counts an embedder's model runs while installed (`with Runs(emb) as runs:`): the most under
    way at once, and the threads they ran on."""

    def __init__(self, emb):
        import threading

        self.emb, self.lock, self.running, self.peak, self.threads = emb, threading.Lock(), 0, 0, []

    def __enter__(self):
        import threading

        run = self.emb._run

        def counted(texts):
            with self.lock:
                self.running += 1
                self.peak = max(self.peak, self.running)
                self.threads.append(threading.current_thread().name)
            try:
                return run(texts)
            finally:
                with self.lock:
                    self.running -= 1

        self.emb._run = counted
        return self

    def __exit__(self, *exc):
        del self.emb._run


def tool_error(result) -> dict:
    """The error an MCP tool answered as its result (flagged `isError`, the message as its text,
    the REST error body as structured content); fails when the result is not an error. Takes the
    SDK client's CallToolResult or a JSON-RPC answer's `result` object."""
    if isinstance(result, dict):
        assert result.get("isError") is True, result
        body = result["structuredContent"]
        assert [c["text"] for c in result["content"]] == [body["message"]], result
    else:
        assert result.is_error, result
        body = result.structured_content
        assert [c.text for c in result.content] == [body["message"]], result
    assert isinstance(body.get("error"), str) and isinstance(body.get("message"), str), body
    return body
