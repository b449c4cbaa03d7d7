"""The knowledge base in process: folders and pages over our REST, Hindsight's /v1/default
routes and its MCP tool names. A written page is retained, so recall finds it, and rewriting or
deleting it replaces or removes those memories; a generated page is a mental model's content;
search ranks pages; export gives markdown files; another bank's nodes are not found."""

from __future__ import annotations

import asyncio

from hindsight.engine.access.keys import Principal

from conftest import mcp_local
from support import tool_failure_message as tool_error


async def recall_texts(rest, bank, query):
    r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": query})
    assert r.status_code == 200, r.text
    return [m["text"] for m in r.json()["results"]]


async def test_written_pages_are_found_by_recall(rest, bank):
    r = await rest.post(f"/v1/banks/{bank}/knowledge-base/folders", json={"name": "Operations"})
    assert r.status_code == 201, r.text
    ops = r.json()
    assert ops["node_id"].startswith("kf-") and ops["kind"] == "folder"
    r = await rest.post(
        f"/v1/banks/{bank}/knowledge-base/pages",
        json={
            "name": "Deployment runbook",
            "parent_id": ops["node_id"],
            "content": "Deploys go out on Tuesdays through the Falcon pipeline. Roll back with falcon revert.",
            "tags": ["ops"],
        },
    )
    assert r.status_code == 201, r.text
    page = r.json()
    assert page["page_id"].startswith("kp-") and page["mental_model_id"] is None
    assert page["node"]["page_kind"] == "written" and page["node"]["parent_id"] == ops["node_id"]
    texts = await recall_texts(rest, bank, "How do I roll back a deploy?")
    assert any("falcon revert" in t and t.startswith("Deployment runbook") for t in texts), texts
    memories = (await rest.get(f"/v1/banks/{bank}/memories", params={"document_id": f"kb:{page['page_id']}"})).json()
    assert memories["total"] == 1 and memories["memories"][0]["tags"] == ["ops"]

    got = (await rest.get(f"/v1/banks/{bank}/knowledge-base/pages/{page['page_id']}")).json()
    assert got["content"].startswith("Deploys go out") and got["type"] == "knowledge-page"
    assert got["markdown"].startswith("---\nid: ") and '"title": ' not in got["markdown"]
    assert 'title: "Deployment runbook"' in got["markdown"] and got["markdown"].rstrip().endswith("falcon revert.")

    # rewritten: the memories follow; renamed and moved to the top
    r = await rest.patch(
        f"/v1/banks/{bank}/knowledge-base/nodes/{page['page_id']}",
        json={"content": "Deploys go out on Thursdays now; roll back with falcon undo.", "parent_id": None},
    )
    assert r.status_code == 200, r.text
    assert r.json()["parent_id"] is None
    texts = await recall_texts(rest, bank, "When do deploys go out?")
    assert any("Thursdays" in t for t in texts) and not any("Tuesdays" in t for t in texts)
    tree = (await rest.get(f"/v1/banks/{bank}/knowledge-base/tree")).json()
    assert tree["nodes"] == 2 and {n["name"] for n in tree["roots"]} == {"Operations", "Deployment runbook"}

    # deleting the folder leaves the page (moved out); deleting the page removes its memories
    assert (await rest.delete(f"/v1/banks/{bank}/knowledge-base/nodes/{ops['node_id']}")).json()["nodes"] == 1
    gone = (await rest.delete(f"/v1/banks/{bank}/knowledge-base/nodes/{page['page_id']}")).json()
    assert gone == {"deleted": True, "node_id": page["page_id"], "nodes": 1}
    assert not any("Thursdays" in t for t in await recall_texts(rest, bank, "When do deploys go out?"))
    assert (await rest.get(f"/v1/banks/{bank}/knowledge-base/tree")).json() == {"roots": [], "nodes": 0}


async def test_generated_pages_search_and_export(rest, bank):
    await rest.post(f"/v1/banks/{bank}/memories", json={"content": "Mira prefers Rust for the ingest service."})
    top = (await rest.post(f"/v1/default/banks/{bank}/knowledge-base/folders", json={"name": "Team"})).json()
    assert top["kind"] == "folder" and top["id"].startswith("kf-") and top["children"] == []
    sub = (
        await rest.post(
            f"/v1/default/banks/{bank}/knowledge-base/folders", json={"name": "Prefs", "parent_id": top["id"]}
        )
    ).json()
    r = await rest.post(
        f"/v1/default/banks/{bank}/knowledge-base/pages",
        json={
            "name": "Languages",
            "source_query": "Which languages does the team prefer?",
            "parent_id": sub["id"],
            "trigger": {"refresh_after_consolidation": True},
        },
    )
    assert r.status_code == 201, r.text
    made = r.json()
    assert made["mental_model_id"] == "languages" and made["operation_id"]
    for _ in range(200):
        page = (await rest.get(f"/v1/default/banks/{bank}/knowledge-base/pages/{made['page_id']}")).json()
        if page["body"]:
            break
        await asyncio.sleep(0.05)
    assert "Rust" in page["body"] and page["description"] == "Which languages does the team prefer?"
    await rest.post(
        f"/v1/banks/{bank}/knowledge-base/pages",
        json={"name": "Coffee", "content": "The espresso machine is on the third floor.", "tags": ["type:howto"]},
    )
    tree = (await rest.get(f"/v1/default/banks/{bank}/knowledge-base/tree")).json()
    team = next(n for n in tree["roots"] if n["name"] == "Team")
    (prefs,) = team["children"]
    (languages,) = prefs["children"]
    assert languages["mental_model_id"] == "languages" and languages["is_stale"] is False

    hits = (await rest.get(f"/v1/default/banks/{bank}/knowledge-base/search", params={"q": "espresso machine"})).json()
    assert hits["results"][0]["name"] == "Coffee" and "espresso" in hits["results"][0]["snippet"].lower()
    ours = (await rest.get(f"/v1/banks/{bank}/knowledge-base/search", params={"query": "programming languages"})).json()
    assert ours["results"][0]["name"] == "Languages"
    assert (await rest.get(f"/v1/default/banks/{bank}/knowledge-base/search")).status_code == 422

    bundle = (await rest.get(f"/v1/default/banks/{bank}/knowledge-base/export")).json()
    files = {f["path"]: f["content"] for f in bundle["files"]}
    assert f"{made['page_id']}.md" in files and f"log/{made['page_id']}.md" in files
    assert "- Team/\n  - Prefs/\n    - [Languages]" in files["index.md"]
    coffee = next(c for p, c in files.items() if "espresso" in c)
    assert 'type: "howto"' in coffee

    # Hindsight's PATCH: a new question refreshes the page; parent_id null moves it to the top
    r = await rest.patch(
        f"/v1/default/banks/{bank}/knowledge-base/nodes/{made['page_id']}",
        json={"source_query": "Which language does Mira prefer?", "parent_id": None},
    )
    assert (
        r.status_code == 200 and r.json()["parent_id"] is None and r.json()["description"].startswith("Which language")
    )
    # deleting a folder deletes its subtree, and a generated page's model with it
    r = await rest.delete(f"/v1/default/banks/{bank}/knowledge-base/nodes/{top['id']}")
    assert r.json() == {"status": "deleted"}
    assert (await rest.get(f"/v1/banks/{bank}/mental-models/languages")).status_code == 200  # moved out first
    await rest.delete(f"/v1/default/banks/{bank}/knowledge-base/nodes/{made['page_id']}")
    assert (await rest.get(f"/v1/banks/{bank}/mental-models/languages")).status_code == 404


async def test_what_the_tree_refuses(rest, bank):
    base = f"/v1/banks/{bank}/knowledge-base"
    folder = (await rest.post(f"{base}/folders", json={"name": "A"})).json()["node_id"]
    inner = (await rest.post(f"{base}/folders", json={"name": "B", "parent_id": folder})).json()["node_id"]
    page = (await rest.post(f"{base}/pages", json={"name": "P", "content": "text", "parent_id": folder})).json()
    bad = [
        ("POST", f"{base}/pages", {"name": "X"}, 422, "content"),
        ("POST", f"{base}/pages", {"name": "X", "content": "a", "source_query": "b"}, 422, "content"),
        ("POST", f"{base}/pages", {"name": "p", "content": "again", "parent_id": folder}, 409, "name"),
        ("POST", f"{base}/pages", {"name": "Y", "content": "y", "parent_id": page["page_id"]}, 422, "parent_id"),
        ("POST", f"{base}/folders", {"name": "Z", "parent_id": "kf-000000000000"}, 404, "parent_id"),
        ("POST", f"{base}/folders", {"name": "Z", "parent_id": "../etc"}, 422, "parent_id"),
        ("POST", f"{base}/folders", {"name": " "}, 422, "name"),
        ("PATCH", f"{base}/nodes/{folder}", {"parent_id": inner}, 422, "itself"),
        ("PATCH", f"{base}/nodes/{folder}", {"content": "x"}, 422, "folder"),
        ("PATCH", f"{base}/nodes/{page['page_id']}", {"source_query": "q?"}, 422, "written"),
        ("GET", f"{base}/pages/{folder}", None, 422, "page_id"),
        ("GET", f"{base}/pages/kp-000000000000", None, 404, "page_id"),
        ("DELETE", f"{base}/nodes/nonsense", None, 422, "node_id"),
    ]
    for method, path, body, status, word in bad:
        r = await rest.request(method, path, json=body)
        assert r.status_code == status and word in r.json()["message"], (method, path, body, r.text)
    parent = folder
    for depth in range(2, 18):  # "A" is at depth 1
        r = await rest.post(f"{base}/folders", json={"name": f"d{depth}", "parent_id": parent})
        if depth <= 16:
            assert r.status_code == 201, (depth, r.text)
            parent = r.json()["node_id"]
        else:
            assert r.status_code == 422 and "16 deep" in r.json()["message"]


async def test_knowledge_tools_and_another_banks_nodes(app, rest, bank):
    mine, theirs = bank + "_a", bank + "_b"
    async with mcp_local(app, bank=mine) as client:
        folder = (await client.call_tool("create_knowledge_folder", {"name": "Notes"})).structured_content
        made = (
            await client.call_tool(
                "create_knowledge_page",
                {
                    "name": "Wi-Fi",
                    "content": "The guest Wi-Fi password is on the fridge.",
                    "parent_id": folder["node_id"],
                },
            )
        ).structured_content
        tree = (await client.call_tool("get_knowledge_base_tree", {})).structured_content
        assert tree["roots"][0]["children"][0]["node_id"] == made["page_id"]
        hits = (await client.call_tool("search_knowledge_base", {"query": "wifi password"})).structured_content
        assert hits["results"][0]["page_id"] == made["page_id"]
        page = (await client.call_tool("get_knowledge_page", {"page_id": made["page_id"]})).structured_content
        assert "fridge" in page["content"]
        moved = await client.call_tool("update_knowledge_node", {"node_id": made["page_id"], "parent_id": "root"})
        assert moved.structured_content["parent_id"] is None
        assert "content" in await tool_error(client, "create_knowledge_page", {"name": "Empty"})
        gone = await client.call_tool("delete_knowledge_node", {"node_id": folder["node_id"]})
        assert gone.structured_content["nodes"] == 1
    their_folder = (await rest.post(f"/v1/banks/{theirs}/knowledge-base/folders", json={"name": "Theirs"})).json()
    their_page = (
        await rest.post(f"/v1/banks/{theirs}/knowledge-base/pages", json={"name": "Secret", "content": "Hidden text."})
    ).json()
    f, p = their_folder["node_id"], their_page["page_id"]
    for method, path, body in [
        ("GET", f"/v1/banks/{mine}/knowledge-base/pages/{p}", None),
        ("PATCH", f"/v1/banks/{mine}/knowledge-base/nodes/{p}", {"content": "hijacked"}),
        ("DELETE", f"/v1/banks/{mine}/knowledge-base/nodes/{f}", None),
        ("POST", f"/v1/banks/{mine}/knowledge-base/pages", {"name": "In theirs", "content": "x", "parent_id": f}),
        ("GET", f"/v1/default/banks/{mine}/knowledge-base/pages/{p}", None),
        ("PATCH", f"/v1/default/banks/{mine}/knowledge-base/nodes/{p}", {"name": "hijacked"}),
        ("DELETE", f"/v1/default/banks/{mine}/knowledge-base/nodes/{p}", None),
    ]:
        r = await rest.request(method, path, json=body)
        assert r.status_code == 404, (method, path, r.text)
    scoped = Principal("bank", key_id="k", banks=frozenset({mine}))
    reader = Principal("bank", key_id="r", banks=frozenset({theirs}), read_only=True)
    async with mcp_local(app, bank=mine, who=scoped) as client:
        assert "does not exist" in await tool_error(client, "get_knowledge_page", {"page_id": p})
        assert "does not exist" in await tool_error(client, "delete_knowledge_node", {"node_id": f})
        # moving one of mine under their folder: their folder is not found in mine
        mine_page = (await client.call_tool("create_knowledge_page", {"name": "M", "content": "m"})).structured_content
        assert "does not exist" in await tool_error(
            client, "update_knowledge_node", {"node_id": mine_page["page_id"], "parent_id": f}
        )
    async with mcp_local(app, bank=theirs, who=reader) as client:
        assert (await client.call_tool("get_knowledge_page", {"page_id": p})).structured_content["name"] == "Secret"
        for tool, args in [
            ("create_knowledge_folder", {"name": "x"}),
            ("create_knowledge_page", {"name": "x", "content": "y"}),
            ("update_knowledge_node", {"node_id": p, "name": "x"}),
            ("delete_knowledge_node", {"node_id": p}),
        ]:
            assert "only read" in await tool_error(client, tool, args)
    page = (await rest.get(f"/v1/banks/{theirs}/knowledge-base/pages/{p}")).json()
    assert page["content"] == "Hidden text." and page["name"] == "Secret"
