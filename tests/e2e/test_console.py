"""The web console (/ui) in a real browser: Debian's Chromium driven by Playwright for Python.

A person signs in with a key, finds a memory retained through the API, reads and deletes it,
creates a mental model and sees it filled, imports a document (with its progress) and finds it,
and follows the operations; what memories say is shown as text, never run as HTML.
With HINDSIGHT_SCREENSHOTS=<folder>, the main pages are saved there (the pictures of docs/console.md).
"""

from __future__ import annotations

import os
import re
import shutil
import uuid
from pathlib import Path

import pytest

from conftest import ADMIN_KEY

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

        # read it, then delete it
        ines = retained["memory_ids"][0]
        page.click(f"#results [data-memory='{ines}'] button")
        expect(page.locator("#memory-detail")).to_contain_text("Hook Head")
        shot(page, "memory")
        page.click("#memory-detail button.danger")
        expect(page.locator("#toast")).to_contain_text("Memory deleted")
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
