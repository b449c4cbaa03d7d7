"""Documents: real files of each type made here, import as an operation, re-import rules, the
curl-shaped rag_search call, tag-based access with several users, verify_document_access."""

from __future__ import annotations

import http.server
import json
import threading

import httpx
import pytest

from conftest import mcp_session
from support import b64, docx_bytes, import_docs, pdf_bytes, tool_error

SALES = "Our sales playbook: the Falcon X router ships with eight ports and a lifetime warranty."
HR = "Holiday policy: employees get thirty days of paid leave and a sabbatical after five years."


def test_import_every_type_and_failures_do_not_spoil_the_batch(api, bank):
    res = import_docs(
        api,
        bank,
        files=[
            {"name": "notes.txt", "text": "Plain text notes about the Falcon X launch party."},
            {
                "name": "readme.md",
                "text": "# Falcon X\n\nQuick start for the router.\n\n## Reset\n\nHold the button ten seconds.",
            },
            {
                "name": "page.html",
                "content_base64": b64(
                    b"<html><head><title>T</title><script>x()</script></head>"
                    b"<body><h1>Falcon X FAQ</h1><p>Does it support mesh? Yes.</p></body></html>"
                ),
            },
            {"name": "guide.pdf", "content_base64": b64(pdf_bytes())},
            {"name": "specs.docx", "content_base64": b64(docx_bytes())},
            {"name": "legacy.doc", "content_base64": b64(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)},
            {"name": "broken.pdf", "content_base64": b64(b"%PDF-1.4 this is not really a pdf")},
        ],
    )
    assert res["status"] == "succeeded", res
    by = {f["name"]: f for f in res["result"]["files"]}
    assert {n for n, f in by.items() if f["status"] == "imported"} == {
        "notes.txt",
        "readme.md",
        "page.html",
        "guide.pdf",
        "specs.docx",
    }
    assert by["legacy.doc"]["status"] == "failed" and "unsupported" in by["legacy.doc"]["error"]
    assert by["broken.pdf"]["status"] == "failed" and "cannot read" in by["broken.pdf"]["error"]
    assert by["guide.pdf"]["pages"] == 2
    op = api.get(f"/v1/banks/{bank}/operations/{res['operation_id']}").json()
    assert op["progress"] == {"done": 7, "total": 7}

    docs = {d["source_name"]: d for d in api.get(f"/v1/banks/{bank}/documents").json()["documents"]}
    assert set(docs) == {"notes.txt", "readme.md", "page.html", "guide.pdf", "specs.docx"}
    assert docs["guide.pdf"]["source_type"] == "pdf" and docs["guide.pdf"]["page_count"] == 2
    assert len(docs["specs.docx"]["content_hash"]) == 64 and docs["specs.docx"]["size_bytes"] > 0

    r = api.post(f"/v1/banks/{bank}/documents/search", json={"search_phrases": ["LED blinks red firmware reset"]})
    top = r.json()["segments"][0]
    assert top["source_file_name"] == "guide.pdf" and "blinks red" in top["raw_text"]
    assert (top["page_start"], top["page_end"]) == (1, 2)  # both short pages fit one chunk
    r = api.post(f"/v1/banks/{bank}/documents/search", json={"search_phrases": ["how many watts does it draw"]})
    top = r.json()["segments"][0]
    assert top["source_file_name"] == "specs.docx" and top["headline"] == "Falcon X technical specifications"
    html = api.post(f"/v1/banks/{bank}/documents/search", json={"search_phrases": ["mesh support"]}).json()["segments"][
        0
    ]
    assert html["source_file_type"] == "html" and "x()" not in html["raw_text"]


def test_reimport_unchanged_is_noop_changed_replaces_and_rechunk(api, bank):
    text = "\n\n".join(f"Paragraph {i} about the Falcon X router and its {i} features." * 3 for i in range(20))
    first = import_docs(api, bank, files=[{"name": "long.txt", "text": text}])["result"]["files"][0]
    again = import_docs(api, bank, files=[{"name": "long.txt", "text": text}])["result"]["files"][0]
    assert again["status"] == "unchanged" and again["document_id"] == first["document_id"]
    small = import_docs(api, bank, files=[{"name": "long.txt", "text": text}], chunk_size=400)["result"]["files"][0]
    assert small["status"] == "replaced" and small["chunks"] > first["chunks"]
    changed = import_docs(api, bank, files=[{"name": "long.txt", "text": "Completely new content."}])["result"][
        "files"
    ][0]
    assert changed["status"] == "replaced" and changed["chunks"] == 1 and changed["document_id"] == first["document_id"]
    segs = api.post(f"/v1/banks/{bank}/documents/search", json={"search_phrases": ["Falcon X features"]}).json()[
        "segments"
    ]
    assert [s["raw_text"] for s in segs] == ["Completely new content."]


def test_import_errors(api, bank):
    r = api.post(f"/v1/banks/{bank}/documents", json={"files": []})
    assert r.status_code == 422 and "files" in r.json()["message"]
    r = api.post(f"/v1/banks/{bank}/documents", json={"files": [{"name": "a.txt", "content_base64": "***"}]})
    assert r.status_code == 422 and "base64" in r.json()["message"]
    r = api.post(f"/v1/banks/{bank}/documents", json={"urls": ["ftp://example.com/x"]})
    assert r.status_code == 422 and "is not an http(s) URL" in r.json()["message"]
    assert api.get(f"/v1/banks/{bank}/documents/not-a-uuid").status_code in (404, 422)


def test_url_import_and_private_addresses_refused_by_default(api, auth_server, bank):
    page = b"<html><body><h1>Pricing</h1><p>The Falcon X costs 199 euros.</p></body></html>"

    class H(http.server.BaseHTTPRequestHandler):
        def do_GET(self):
            self.send_response(200)
            self.send_header("content-type", "text/html")
            self.end_headers()
            self.wfile.write(page)

        def log_message(self, *a):
            pass

    srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    url = f"http://127.0.0.1:{srv.server_port}/pricing"
    try:
        res = import_docs(api, bank, urls=[url])  # the test server allows private URLs
        f = res["result"]["files"][0]
        assert f["status"] == "imported"
        seg = api.post(f"/v1/banks/{bank}/documents/search", json={"search_phrases": ["price"]}).json()["segments"][0]
        assert seg["source_url"] == url and "199 euros" in seg["raw_text"]
        from conftest import ADMIN_KEY

        with auth_server.http(ADMIN_KEY) as admin:
            res = import_docs(admin, bank + "_ssrf", urls=[url])
            f = res["result"]["files"][0]
            assert f["status"] == "failed" and "private" in f["error"]
    finally:
        srv.shutdown()


@pytest.fixture
def tagged_bank(api, bank):
    import_docs(api, bank, files=[{"name": "sales.txt", "text": SALES}], tags=["department:sales"])
    import_docs(api, bank, files=[{"name": "hr.txt", "text": HR}], tags=["department:hr"])
    import_docs(api, bank, files=[{"name": "public.txt", "text": "The Falcon X is our flagship router."}])
    import_docs(
        api,
        bank,
        files=[{"name": "bob.txt", "text": "Bob's private Falcon X discount is forty percent."}],
        allowed_users=["bob@example.com"],
    )
    return bank


def curl_search(server, bank, phrases, **headers):
    """Exactly the document's curl: JSON body, no initialize, no Accept header."""
    h = {"Content-Type": "application/json", **headers}
    body = {
        "jsonrpc": "2.0",
        "method": "tools/call",
        "id": "request-123",
        "params": {"name": "rag_search", "arguments": {"search_phrases": phrases}},
    }
    return httpx.post(f"{server.url}/mcp/{bank}/", json=body, headers=h, timeout=60)


def names(result) -> set[str]:
    return {s["source_file_name"] for s in result["segments"]}


def test_curl_shaped_rag_search_and_tag_filtering(server, tagged_bank):
    phrases = ["Falcon X", "router warranty ports", "paid leave policy", "discount"]
    r = curl_search(
        server,
        tagged_bank,
        phrases,
        **{"x-user-id": "alice@example.com", "x-session-tags": '["department:sales", "premium_access"]'},
    )
    assert r.status_code == 200, r.text
    body = r.json()
    assert body["id"] == "request-123" and body["result"]["status"] == "success"
    assert names(body["result"]) == {"sales.txt", "public.txt"}  # hr needs its tag, bob's needs bob
    seg = next(s for s in body["result"]["segments"] if s["source_file_name"] == "sales.txt")
    assert {
        "segment_uid",
        "source_file_name",
        "source_file_type",
        "headline",
        "segment_summary",
        "raw_text",
        "source_url",
    } <= set(seg)
    assert seg["source_file_type"] == "txt" and seg["raw_text"] == SALES
    assert body["result"]["structuredContent"]["segments"] == body["result"]["segments"]
    assert json.loads(body["result"]["content"][0]["text"])["status"] == "success"

    hr = curl_search(server, tagged_bank, phrases, **{"x-session-tags": '["department:hr"]'}).json()["result"]
    assert names(hr) == {"hr.txt", "public.txt"}
    bob = curl_search(server, tagged_bank, phrases, **{"x-user-id": "bob@example.com"}).json()["result"]
    assert names(bob) == {"bob.txt", "public.txt"}
    anonymous = curl_search(server, tagged_bank, phrases).json()["result"]
    assert names(anonymous) == {"public.txt"}

    bad = curl_search(server, tagged_bank, phrases, **{"x-session-tags": "department:sales"}).json()
    assert "x-session-tags" in tool_error(bad["result"])["message"]
    for wrong in ([], ["a"] * 6):
        err = tool_error(curl_search(server, tagged_bank, wrong).json()["result"])
        assert err["field"] == "search_phrases" and "search_phrases" in err["message"]


async def test_rag_search_and_verify_with_the_official_client(server, api, tagged_bank):
    sales = {"x-session-tags": '["department:sales"]'}
    async with mcp_session(f"{server.url}/mcp/{tagged_bank}/", sales) as c:
        res = await c.call_tool("rag_search", {"search_phrases": ["warranty"], "top_k": 3})
        seg = next(s for s in res.structured_content["segments"] if s["source_file_name"] == "sales.txt")
        ok = (await c.call_tool("verify_document_access", {"segment_uid": seg["segment_uid"]})).structured_content
        assert ok["has_access"] is True and ok["access_level"] == "view" and ok["error"] is None
    async with mcp_session(
        f"{server.url}/mcp/", {"x-session-tags": '["department:hr"]', "X-Bank-Id": tagged_bank}
    ) as c:
        denied = (await c.call_tool("verify_document_access", {"segment_uid": seg["segment_uid"]})).structured_content
        assert denied["has_access"] is False and "access denied" in denied["error"]
        e = tool_error(await c.call_tool("rag_search", {"search_phrases": ["x"], "top_k": 50}))
        assert e["error"] == "invalid_argument" and "top_k" in e["message"]
    doc_id = next(
        d["document_id"]
        for d in api.get(f"/v1/banks/{tagged_bank}/documents").json()["documents"]
        if d["source_name"] == "sales.txt"
    )
    assert api.delete(f"/v1/banks/{tagged_bank}/documents/{doc_id}").status_code == 200
    async with mcp_session(f"{server.url}/mcp/{tagged_bank}/", sales) as c:
        gone = (await c.call_tool("verify_document_access", {"segment_uid": seg["segment_uid"]})).structured_content
        assert gone["has_access"] is False and "deleted" in gone["error"]


def test_cli_documents_import_with_progress_list_search_delete(server, api, bank, tmp_path):
    import subprocess
    import sys

    (tmp_path / "guide.pdf").write_bytes(pdf_bytes())
    (tmp_path / "notes.md").write_text("# Notes\n\nThe Falcon X ships in March.")
    (tmp_path / "old.doc").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 600)

    def cli(*args):
        return subprocess.run(
            [sys.executable, "-m", "hindsight.cli.main", "documents", "--url", server.url, *args],
            capture_output=True,
            text=True,
            timeout=120,
        )

    r = cli(
        "import",
        bank,
        str(tmp_path / "guide.pdf"),
        str(tmp_path / "notes.md"),
        str(tmp_path / "old.doc"),
        "--tag",
        "manual",
        "--chunk-size",
        "800",
    )
    assert r.returncode == 1, r.stderr  # one file failed
    assert "Importing" in r.stderr and "3/3" in r.stderr  # the progress bar
    lines = dict(line.split(None, 1)[::-1] for line in r.stdout.splitlines())
    assert any(k.startswith("guide.pdf") and v == "imported" for k, v in lines.items()), r.stdout
    assert any(k.startswith("old.doc") and v == "failed" for k, v in lines.items()), r.stdout
    r = cli("list", bank)
    assert r.returncode == 0 and "guide.pdf" in r.stdout and "manual" in r.stdout
    doc_id = next(line.split()[0] for line in r.stdout.splitlines() if "notes.md" in line)
    r = cli("search", bank, "when does it ship", "--session-tag", "manual", "--strictness", "0")
    assert r.returncode == 0 and r.stdout.splitlines()[0].split()[1] == "notes.md", r.stdout
    assert "guide.pdf p.1-2" in r.stdout
    r = cli("search", bank, "when does it ship")  # without the tag nothing is visible
    assert r.returncode == 0 and r.stdout == ""
    r = cli("delete", bank, doc_id, "--yes")
    assert r.returncode == 0 and '"deleted": true' in r.stdout
    assert "notes.md" not in cli("list", bank).stdout


def test_bank_default_chunk_size_and_per_import_override(api, bank):
    text = "\n\n".join(
        f"Paragraph {i}: the Falcon X router has feature number {i} and it works well." * 2 for i in range(30)
    )
    r = api.post("/v1/banks", json={"bank_id": bank, "document_chunk_size": 400})
    assert r.status_code == 201 and r.json()["document_chunk_size"] == 400
    small = import_docs(api, bank, files=[{"name": "a.txt", "text": text}])["result"]["files"][0]
    docs = api.get(f"/v1/banks/{bank}/documents").json()["documents"]
    assert docs[0]["chunk_size"] == 400
    big = import_docs(api, bank, files=[{"name": "b.txt", "text": text}], chunk_size=4000)["result"]["files"][0]
    assert big["chunks"] < small["chunks"]
    assert api.patch(f"/v1/banks/{bank}", json={"document_chunk_size": 2000}).json()["document_chunk_size"] == 2000
    assert api.patch(f"/v1/banks/{bank}", json={"name": "Docs"}).json()["document_chunk_size"] == 2000  # kept
    again = import_docs(api, bank, files=[{"name": "a.txt", "text": text}])["result"]["files"][0]
    assert again["status"] == "replaced"  # re-chunked at the bank's new default
    r = api.patch(f"/v1/banks/{bank}", json={"document_chunk_size": 50})
    assert r.status_code == 422 and "document_chunk_size" in r.json()["message"]


async def test_unchanged_reimport_never_gives_its_access_to_content_replaced_meanwhile(api, bank, pg_url):
    """An unchanged re-import reads the document before any lock, then updates its access lists.
    If another import replaced the content meanwhile (here: a transaction holding the row with a
    restricted version, committed while the re-import waits on it), the update must not land on
    the new content: before, the restricted version ended with the re-import's (public) access."""
    import asyncio

    import asyncpg

    public = "# Handbook\n\nOpening hours are nine to five."
    assert import_docs(api, bank, files=[{"name": "race.md", "text": public}])["status"] == "succeeded"
    conn, watch = await asyncpg.connect(pg_url), await asyncpg.connect(pg_url)
    try:
        before = await conn.fetchval("SELECT content_hash FROM documents WHERE bank_id = $1", bank)
        replacing = conn.transaction()
        await replacing.start()
        await conn.execute(
            "UPDATE documents SET content_hash = 'restricted', allowed_users = '{alice}' WHERE bank_id = $1", bank
        )
        again = asyncio.ensure_future(
            asyncio.to_thread(import_docs, api, bank, files=[{"name": "race.md", "text": public}])
        )
        waiting = 0
        for _ in range(600):  # until the re-import waits on the row that transaction holds
            waiting = await watch.fetchval(
                "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND query LIKE 'UPDATE documents%'"
            )
            if waiting:
                break
            await asyncio.sleep(0.05)
        assert waiting, "the re-import never reached the access update"
        await replacing.commit()
        res = (await again)["result"]["files"][0]
        row = await conn.fetchrow("SELECT content_hash, allowed_users FROM documents WHERE bank_id = $1", bank)
    finally:
        await conn.close()
        await watch.close()
    # The re-import found other content than it compared, so it imported its own in full.
    assert res["status"] == "replaced", res
    assert (row["content_hash"], row["allowed_users"]) == (before, [])


async def test_an_import_whose_upload_is_gone_ends_cancelled_not_failed(app, rest, bank, monkeypatch):
    """Uploads are stored with their operation and go with it (deleting the bank mid-import takes
    them): the import then has nothing to read. It ends cancelled, saying why, instead of a
    TypeError hashing nothing, logged as a failure and retried. Here the upload reads as gone."""
    from hindsight.db.sql import Q

    monkeypatch.setitem(
        Q._sql, "document_upload_data", "SELECT NULL::bytea WHERE $1::text IS NOT NULL AND $2::uuid IS NOT NULL"
    )
    r = await rest.post(
        f"/v1/banks/{bank}/documents", params={"wait": True}, json={"files": [{"name": "x.md", "text": "Hi."}]}
    )
    assert r.status_code == 202, r.text
    op = r.json()
    assert op["status"] == "cancelled", op
    r = await rest.get(f"/v1/banks/{bank}/operations/{op['operation_id']}")
    assert "the upload of x.md is gone" in (r.json().get("error") or ""), r.json()
