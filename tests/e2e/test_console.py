"""The web console (/ui) in a real browser: Debian's Chromium driven by Playwright for Python.

A person signs in with a key, finds a memory retained through the API (and sees in the recall
playground why it came back), reads and forgets it,
creates a mental model and sees it filled, imports a document (with its progress) and finds it,
and follows the operations; what memories say is shown as text, never run as HTML. An admin
finds a registered OAuth application and deletes it.
With HINDSIGHT_SCREENSHOTS=<folder>, the main pages are saved there (the pictures of docs/console.md).
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

import pytest

from conftest import ADMIN_KEY, AUTH_EXT, Server, fresh_database, wait_for
from support import Receiver

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
pytestmark = pytest.mark.skipif(not CHROMIUM, reason="Chromium is not installed (scripts/test.sh installs Debian's)")
SHOTS = os.environ.get("HINDSIGHT_SCREENSHOTS")
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


@pytest.fixture
def page():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=CHROMIUM, args=FLAGS)
        context = browser.new_context(viewport={"width": 1280, "height": 900})
        pg = context.new_page()
        pg.errors = []
        pg.on("pageerror", lambda e: pg.errors.append(str(e)))
        pg.on("dialog", lambda d: d.accept())  # confirm() before deletions
        yield pg
        browser.close()


def shot(page, name: str) -> None:
    if SHOTS:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{name}.png"), full_page=True)


def test_a_person_uses_the_console(page, auth_server, tmp_path):
    from playwright.sync_api import expect

    bank = f"console-{uuid.uuid4().hex[:6]}"
    with auth_server.http(ADMIN_KEY) as admin:
        retained = admin.post(
            f"/v1/banks/{bank}/memories",
            json={
                "items": [
                    {
                        "content": "Ines keeps the lighthouse on Hook Head.",
                        "tags": ["people"],
                        "timestamp": "2024-05-02T10:00:00Z",
                    },
                    {"content": "The lighthouse lamp was replaced in March 2023."},
                    {"content": "<img src=x onerror=\"document.title='owned'\"> is how the note began."},
                ]
            },
        ).json()
        admin.patch(f"/v1/banks/{bank}", json={"name": "Lighthouse notes", "mission": "Remembers the lighthouse."})

        # sign in: the key is asked once and kept for the tab
        page.goto(f"{auth_server.url}/ui/")
        page.fill("#key", "wrong-key")
        page.click("button[type=submit]")
        expect(page.locator("form.login .error")).to_be_visible()
        page.fill("#key", ADMIN_KEY)
        page.click("button[type=submit]")
        expect(page.locator(f"tr[data-bank='{bank}']")).to_be_visible()
        shot(page, "banks")

        # the memory retained through the API, found by browsing and by searching
        page.click(f"tr[data-bank='{bank}'] a")
        expect(page.locator("h1")).to_contain_text("Lighthouse notes")
        page.click("a[data-tab=memories]")
        expect(page.locator("#memory-list")).to_contain_text("Ines keeps the lighthouse on Hook Head.")
        expect(page.locator("#memory-list")).to_contain_text("<img src=x")  # shown as text, not run
        assert page.title() == "Hindsight console"
        page.click("a[data-tab=search]")
        page.fill("input[name=query]", "Who keeps the lighthouse?")
        page.click("form button.primary")
        first = page.locator("#results .result").first
        expect(first).to_contain_text("Ines keeps the lighthouse on Hook Head.")
        expect(first).to_contain_text("#people")
        expect(first).to_contain_text("relevance")
        shot(page, "search")

        # the recall playground: the same question, each memory with the score each arm gave it
        page.click("a[data-tab=playground]")
        page.fill("input[name=playground_query]", "Who keeps the lighthouse?")
        page.click("form button.primary")
        top = page.locator("#playground tbody tr").first
        expect(top).to_contain_text("Ines keeps the lighthouse on Hook Head.")
        semantic = float(top.locator("td[data-arm=semantic]").inner_text())
        assert 0 < semantic <= 1 and float(top.locator("td[data-arm=score]").inner_text()) >= semantic
        expect(page.locator("#playground-formula")).to_contain_text("× neighbour")
        page.select_option("select[name=playground_mode]", "keyword")
        page.click("form button.primary")
        expect(page.locator("#playground-formula")).not_to_contain_text("neighbour")
        shot(page, "playground")
        page.click("a[data-tab=search]")
        page.fill("input[name=query]", "Who keeps the lighthouse?")
        page.click("form button.primary")

        # read it, then forget it
        ines = retained["memory_ids"][0]
        page.click(f"#results [data-memory='{ines}'] button")
        expect(page.locator("#memory-detail")).to_contain_text("Hook Head")
        shot(page, "memory")
        page.click("#memory-detail button[name=forget]")
        expect(page.locator("#toast")).to_contain_text("1 memory forgotten")
        assert admin.get(f"/v1/banks/{bank}/memories/{ines}").status_code == 404

        # a mental model, created here and filled in the background
        page.click("a[data-tab=models]")
        page.fill("input[name=name]", "Lamp")
        page.fill("input[name=source_query]", "When was the lamp replaced?")
        page.click("form button.primary")
        detail = page.locator("[data-model-detail]")
        expect(detail).to_be_visible()
        for _ in range(40):
            if "March 2023" in (page.text_content("#model-content") or ""):
                break
            page.wait_for_timeout(250)
            detail.locator("button", has_text="Reload").click()
        expect(page.locator("#model-content")).to_contain_text("March 2023")
        expect(detail.locator(".badge").first).to_have_text("ready")
        shot(page, "mental-model")

        # a document imported with its progress, then found by search
        doc = tmp_path / "lamp-care.md"
        doc.write_text("# Lamp care\n\nClean the lighthouse lens every Tuesday with a soft cloth.\n")
        page.click("a[data-tab=documents]")
        page.set_input_files("input[name=files]", str(doc))
        page.click("form button.primary")
        expect(page.locator("#import-status")).to_contain_text(
            re.compile("succeeded: lamp-care.md imported"), timeout=30_000
        )
        expect(page.locator("#document-list")).to_contain_text("lamp-care.md")
        page.fill("input[name=doc_query]", "How often is the lens cleaned?")
        page.click("text=Search documents")
        expect(page.locator("#document-results")).to_contain_text("every Tuesday")
        shot(page, "documents")

        # the operations behind it, and the keys page
        page.click("a[data-tab=operations]")
        expect(page.locator("#operation-list")).to_contain_text("document_import")
        expect(page.locator("#operation-list")).to_contain_text("succeeded")
        shot(page, "operations")
        page.click("#nav a[href='#/keys']")
        page.fill("input[name=key_name]", "console-made")
        page.fill("input[name=key_banks]", bank)
        page.click("form button.primary")
        expect(page.locator("#new-key .secret")).to_contain_text("hsk_")
        shot(page, "keys")
        names = [k["name"] for k in admin.get("/v1/keys").json()["keys"]]
        assert "console-made" in names
    assert page.errors == [], page.errors


def test_a_person_corrects_a_memory_in_the_console(page, auth_server):
    """Edit, invalidate, restore, the history on the memory's page, and recall as of a time."""
    from playwright.sync_api import expect

    bank = f"curate-{uuid.uuid4().hex[:6]}"
    with auth_server.http(ADMIN_KEY) as admin:
        old = admin.post(
            f"/v1/banks/{bank}/memories", json={"content": "Jon lives in Cork.", "timestamp": "2020-01-01T00:00:00Z"}
        ).json()["memory_ids"][0]
        new = admin.post(
            f"/v1/banks/{bank}/memories",
            json={"content": "Jon moved to Galway.", "timestamp": "2023-01-01T00:00:00Z", "supersedes": [old]},
        ).json()["memory_ids"][0]
        pet = admin.post(f"/v1/banks/{bank}/memories", json={"content": "Jon has a grey cat."}).json()["memory_ids"][0]
        page.goto(f"{auth_server.url}/ui/")
        page.fill("#key", ADMIN_KEY)
        page.click("button[type=submit]")
        page.click(f"tr[data-bank='{bank}'] a")
        page.click("a[data-tab=memories]")
        expect(page.locator(f"[data-memory='{old}'] [data-state=ended]")).to_be_visible()
        page.click(f"[data-memory='{new}'] button")
        detail = page.locator("#memory-detail")
        expect(detail).to_contain_text("Galway")
        page.fill("#memory-edit textarea[name=text]", "Jon moved to Galway in January 2023.")
        page.fill("#memory-edit input[name=reason]", "the month was known")
        page.click("#memory-edit button.primary")
        expect(page.locator("#toast")).to_contain_text("Memory updated")
        expect(page.locator("#memory-history")).to_contain_text("edited")
        expect(page.locator("#memory-history")).to_contain_text("the month was known")
        shot(page, "memory-history")
        page.click(f"#memory-list [data-memory='{pet}'] button")
        expect(page.locator("#memory-detail")).to_contain_text("grey cat")
        page.click("#memory-detail button[name=invalidate]")
        expect(page.locator("#toast")).to_contain_text("Memory invalidated")
        expect(page.locator(f"#memory-list [data-memory='{pet}'] [data-state=invalidated]")).to_be_visible()
        page.click("#memory-detail button[name=restore]")
        expect(page.locator("#toast")).to_contain_text("Memory restored")
        actions = [v["action"] for v in admin.get(f"/v1/banks/{bank}/memories/{pet}/history").json()["versions"]]
        assert actions == ["created", "invalidated", "restored"]
        actions = [v["action"] for v in admin.get(f"/v1/banks/{bank}/memories/{new}/history").json()["versions"]]
        assert actions == ["created", "edited"]
        # recall: now, and as of a time when the old fact was true
        page.click("a[data-tab=search]")
        page.fill("input[name=query]", "Where does Jon live?")
        page.click("form button.primary")
        expect(page.locator("#results .result").first).to_contain_text("Galway")
        expect(page.locator("#results")).not_to_contain_text("Cork")
        page.fill("input[name=as_of]", "2021-06-01T12:00")
        page.click("form button.primary")
        expect(page.locator("#results .result").first).to_contain_text("Cork")
        expect(page.locator("#results")).not_to_contain_text("Galway")
    assert page.errors == [], page.errors


@pytest.fixture(scope="module")
def hooks_server(pg_url):
    """Keys on, a key to seal webhook secrets with, and receivers on this machine allowed."""
    s = Server(
        {
            "HINDSIGHT_API_DATABASE_URL": fresh_database(pg_url, "console_hooks"),
            "HINDSIGHT_API_TENANT_EXTENSION": AUTH_EXT,
            "HINDSIGHT_API_TENANT_API_KEY": ADMIN_KEY,
            "HINDSIGHT_API_SECRETS_KEY": "console-secrets-key-0123456789-abcdef",
            "HINDSIGHT_API_ALLOW_PRIVATE_URLS": "true",
            "HINDSIGHT_API_SCHEDULER_INTERVAL": "0.3",
        }
    ).start()
    yield s
    s.stop()


def test_the_graph_directives_webhooks_and_pages_in_the_console(page, hooks_server):
    """The entity graph drawn (SVG) and an entity's memories; a directive added and switched off; a
    webhook added, its secret shown once, a test event delivered (signed) and in its deliveries;
    a page written and read; the LLM calls table."""
    from playwright.sync_api import expect

    bank = f"graph-{uuid.uuid4().hex[:6]}"
    receiver = Receiver()
    try:
        with hooks_server.http(ADMIN_KEY) as admin:
            items = [
                {"content": "Alice Moreau founded Lumen Labs with Bruno Silva in Porto."},
                {"content": "Alice Moreau hired Chen Wei as the first engineer."},
                {"content": "Later, Bruno Silva argued with Alice Moreau about pricing."},
            ]
            assert admin.post(f"/v1/banks/{bank}/memories", json={"items": items}).status_code == 200
            page.goto(f"{hooks_server.url}/ui/")
            page.fill("#key", ADMIN_KEY)
            page.click("button[type=submit]")
            page.click(f"tr[data-bank='{bank}'] a")

            # the graph: entities drawn as circles, pairs named together as lines
            page.click("a[data-tab=graph]")
            expect(page.locator("#entity-graph svg")).to_be_visible()
            assert page.locator("#entity-graph g.node").count() >= 4
            assert page.locator("#entity-graph line.edge").count() >= 3
            alice = admin.get(f"/v1/banks/{bank}/entities", params={"q": "alice"}).json()["entities"][0]
            page.click(f"#entity-graph g.node[data-entity='{alice['id']}'] circle")
            expect(page.locator("#entity-detail")).to_contain_text("hired Chen Wei")
            shot(page, "graph")

            # a directive, added and switched off
            page.click("a[data-tab=directives]")
            page.fill("input[name=directive_name]", "Language")
            page.fill("input[name=directive_content]", "Answer in French.")
            page.click("#tab form button.primary")
            row = page.locator("#directive-list tr[data-directive]")
            expect(row).to_contain_text("Answer in French.")
            shot(page, "directives")
            row.locator("input[name=active]").uncheck()
            expect(page.locator("#toast")).to_contain_text("Directive off")
            (d,) = admin.get(f"/v1/banks/{bank}/directives", params={"active_only": False}).json()["directives"]
            assert d["name"] == "Language" and d["is_active"] is False

            # a webhook: its secret shown once, a test delivered, signed, in the deliveries
            page.click("a[data-tab=webhooks]")
            page.fill("input[name=webhook_url]", receiver.url + "/events")
            page.click("#tab form button.primary")
            secret = page.locator("#new-webhook .secret").inner_text().strip()
            assert secret.startswith("whsec_")
            page.click("#webhook-list button[name=test]")
            for _ in range(60):
                if "delivered" in (page.text_content("#delivery-list") or ""):
                    break
                page.wait_for_timeout(250)
                page.click("#delivery-list button")
            expect(page.locator("#delivery-list")).to_contain_text("webhook.test")
            expect(page.locator("#delivery-list")).to_contain_text("delivered")
            assert receiver.events("webhook.test") and receiver.verify(secret) == 1
            shot(page, "webhooks")

            # a page written, found in the tree, read back; recall finds it
            page.click("a[data-tab=knowledge]")
            page.fill("input[name=page_name]", "Pricing")
            page.fill("textarea[name=page_content]", "Lumen Labs charges per seat, billed yearly.")
            page.click("#tab form button.primary")
            expect(page.locator("#knowledge-tree")).to_contain_text("Pricing")
            expect(page.locator("#knowledge-page")).to_contain_text("billed yearly")
            found = admin.post(f"/v1/banks/{bank}/recall", json={"query": "How is Lumen Labs billed?"}).json()
            assert any("billed yearly" in m["text"] for m in found["results"])

            page.click("a[data-tab=usage]")
            expect(page.locator("#llm-requests")).to_contain_text("No LLM calls yet.")
        assert page.errors == [], page.errors
    finally:
        receiver.stop()


def test_a_person_forgets_in_the_console_and_reads_the_audit_log(page, auth_server):
    """Everything about a person, previewed and forgotten; a purge; the bank's retention; and the
    audit log of it all, with no trace of what was forgotten on any page."""
    from playwright.sync_api import expect

    bank = f"forget-{uuid.uuid4().hex[:6]}"
    with auth_server.http(ADMIN_KEY) as admin:
        items = [
            {"content": "Barnaby Quillfeather owes Ann ten pounds."},
            {"content": "On Friday Barnaby Quillfeather fixed the gate."},
            {"content": "Ann waters the tomatoes."},
        ]
        admin.post(f"/v1/banks/{bank}/memories", json={"items": items})
        wrong = admin.post(f"/v1/banks/{bank}/memories", json={"content": "Ann hates tea."}).json()["memory_ids"][0]
        admin.post(f"/v1/banks/{bank}/memories/{wrong}/invalidate", json={"reason": "a guess"})
        page.goto(f"{auth_server.url}/ui/")
        page.fill("#key", ADMIN_KEY)
        page.click("button[type=submit]")
        page.click(f"tr[data-bank='{bank}'] a")
        page.click("a[data-tab=entities]")
        expect(page.locator("#entity-list")).to_contain_text("Barnaby Quillfeather")
        page.fill("input[name=forget_name]", "Barnaby Quillfeather")
        page.click("text=Show what would go")
        expect(page.locator("#forget-preview [data-forget]")).to_have_count(2)
        expect(page.locator("#forget-preview")).to_contain_text("fixed the gate")
        shot(page, "forget-person")
        page.click("#forget-preview button[name=forget_all]")
        expect(page.locator("#toast")).to_contain_text("Everything about Barnaby Quillfeather was forgotten")
        expect(page.locator("#entity-list")).not_to_contain_text("Quillfeather")
        # what is no longer true, purged from the memories tab
        page.click("a[data-tab=memories]")
        expect(page.locator("#memory-list")).to_contain_text("Ann hates tea.")
        page.click("button[name=purge]")
        expect(page.locator("#toast")).to_contain_text("1 memory forgotten")
        expect(page.locator("#memory-list")).not_to_contain_text("Ann hates tea.")
        expect(page.locator("#memory-list")).to_contain_text("Ann waters the tomatoes.")
        # retention, set and shown
        page.click("a[data-tab=settings]")
        page.fill("input[name=retention_days]", "365")
        page.fill("input[name=retention_by_tag]", "chat=30")
        page.click("#retention button.primary")
        expect(page.locator("#retention-now")).to_contain_text("365 days; by tag: chat 30 days")
        assert admin.get(f"/v1/banks/{bank}").json()["retention_by_tag"] == {"chat": 30}

        # the audit log: what was done here, by whom; nothing of what it said (its records are
        # written in batches within a second, so the tab is opened once they are)
        def recorded() -> bool:  # both forgets and the purge before them
            actions = [
                r["action"] for r in admin.get(f"/v1/banks/{bank}/audit-logs", params={"limit": 200}).json()["items"]
            ]
            return actions.count("forget_entity") == 2 and "purge_memories" in actions

        wait_for(recorded)
        page.click("a[data-tab=audit]")
        expect(page.locator("#audit-list [data-action=forget_entity]")).to_have_count(2, timeout=10_000)
        expect(page.locator("#audit-list [data-action=purge_memories]").first).to_contain_text("200 ok")
        expect(page.locator("#audit-list")).to_contain_text("env")
        shot(page, "audit-log")
        with page.expect_download() as download:
            page.click("button[name=audit_export]")
        exported = Path(download.value.path()).read_text()
        assert "forget_entity" in exported and "Quillfeather" not in exported
        for tab in ("search", "memories", "entities", "models", "operations", "audit"):
            page.click(f"a[data-tab={tab}]")
            page.wait_for_load_state("networkidle")
            # the page's view (a toast may still show the name the person typed)
            assert "quillfeather" not in page.inner_html("#view").lower(), tab
    assert page.errors == [], page.errors


def test_an_admin_finds_and_deletes_an_oauth_application(page, auth_server):
    from playwright.sync_api import expect

    name = f"Stray client {uuid.uuid4().hex[:6]} <b>bold</b>"
    with auth_server.http() as anon, auth_server.http(ADMIN_KEY) as admin:
        r = anon.post(
            "/register",
            json={
                "redirect_uris": ["https://app.example/cb"],
                "client_name": name,
                "token_endpoint_auth_method": "none",
            },
        )
        assert r.status_code == 201, r.text
        client_id = r.json()["client_id"]
        page.goto(f"{auth_server.url}/ui/")
        page.fill("#key", ADMIN_KEY)
        page.click("button[type=submit]")
        expect(page.locator("h1")).to_have_text("Banks")  # signed in; the banks page is drawn
        page.click("#nav a[href='#/applications']")
        expect(page.locator("h1")).to_have_text("Applications")
        row = page.locator(f"tr[data-client='{client_id}']")
        expect(row).to_contain_text(name)  # shown as text, not run as HTML
        expect(row).to_contain_text("https://app.example/cb")
        expect(row).to_contain_text("never")  # no person approved it
        shot(page, "applications")
        row.locator("button.danger").click()
        expect(page.locator("#toast")).to_contain_text("Application deleted")
        expect(page.locator(f"tr[data-client='{client_id}']")).to_have_count(0)
        listed = admin.get("/v1/oauth/clients", params={"limit": 1000}).json()["applications"]
        assert client_id not in {a["client_id"] for a in listed}
    assert page.errors == [], page.errors


def test_console_headers_keep_injected_content_from_running(auth_server):
    with auth_server.http() as anon:
        r = anon.get("/ui/")
        assert r.status_code == 200 and "Hindsight console" in r.text  # the files are public; the data is not
        csp = r.headers["content-security-policy"]
        assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp
        assert r.headers["x-content-type-options"] == "nosniff"
        assert anon.get("/ui/app.js").headers["content-type"].startswith(("application/javascript", "text/javascript"))
        assert anon.get("/v1/banks").status_code == 401
        assert anon.get("/", follow_redirects=False).headers["location"] == "/ui/"
