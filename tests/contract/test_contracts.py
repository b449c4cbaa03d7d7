"""One contract per operation: the MCP tool and the REST route of an operation take the same
arguments with the same defaults and limits, and word the same mistake the same way, because
both are the engine's request model (hindsight/mcp/tools.py, hindsight/api/)."""

from __future__ import annotations

import pytest

from hindsight.mcp.catalog import TOOLS

from conftest import mcp_local
from support import tool_error


async def test_tool_arguments_are_the_request_models_fields(app, bank):
    async with mcp_local(app, bank) as single, mcp_local(app, multi=True) as multi:
        one = {t.name: t for t in (await single.list_tools()).tools}
        many = {t.name: t for t in (await multi.list_tools()).tools}
    for td in TOOLS:
        fields = {f.alias or n: f for n, f in td.request.model_fields.items()} if td.request else {}
        required = {n for n, f in fields.items() if f.is_required()}
        tool = one.get(td.name) or many[td.name]
        props = tool.input_schema.get("properties", {})
        assert set(props) == set(fields), td.name
        assert set(tool.input_schema.get("required", [])) == required, td.name
        if td.name in one:
            assert not {"bank_id", "collection_id"} & set(one[td.name].input_schema.get("properties", {}))
            assert "bank_id" in many[td.name].input_schema["properties"]
    # limits and descriptions travel with the fields
    recall = one["recall"].input_schema["properties"]
    assert recall["query"]["maxLength"] == 4000 and recall["query"]["description"]
    assert one["rag_search"].input_schema["properties"]["top_k"]["maximum"] == 20
    nested = one["retain_batch"].input_schema["properties"]["items"]["items"]
    assert "content" in nested["properties"]  # the item model inlined, no dangling $ref


@pytest.mark.parametrize(
    "tool,args,method,path,params",
    [
        ("recall", {"query": "x", "top_k": 99}, "POST", "/recall", None),
        ("recall", {"query": "   "}, "POST", "/recall", None),
        ("retain", {"content": "x", "tags": [1]}, "POST", "/memories", None),
        ("rag_search", {"search_phrases": []}, "POST", "/documents/search", None),
        ("rag_search", {"search_phrases": ["ok", " "], "top_k": 21}, "POST", "/documents/search", None),
        ("search_documents", {"query": "x", "strictness": 1, "min_score": 0.5}, "POST", "/documents/query", None),
        ("search_documents", {"query": "x", "filter": "colour = 'red'"}, "POST", "/documents/query", None),
        ("create_mental_model", {"name": "", "source_query": "q"}, "POST", "/mental-models", None),
        ("list_operations", {"limit": 0}, "GET", "/operations", {"limit": 0}),
        ("list_operations", {"status": "sleeping"}, "GET", "/operations", {"status": "sleeping"}),
        ("list_documents", {"limit": 5000}, "GET", "/documents", {"limit": 5000}),
        ("get_mental_model", {"mental_model_id": "Not An Id"}, "GET", "/mental-models/Not An Id", None),
        ("get_mental_model", {"mental_model_id": "missing"}, "GET", "/mental-models/missing", None),
    ],
)
async def test_the_same_mistake_is_worded_the_same_on_both_faces(app, rest, bank, tool, args, method, path, params):
    await rest.post(f"/v1/banks/{bank}/memories", json={"content": "The bank exists."})
    async with mcp_local(app, bank) as c:
        e = tool_error(await c.call_tool(tool, args))
    body = None if method == "GET" else args
    r = await rest.request(method, f"/v1/banks/{bank}{path}", json=body, params=params)
    assert r.status_code in (404, 422), r.text
    assert r.json() == e  # the same body: code, message, argument


async def test_defaults_and_cleaning_are_the_same_on_both_faces(app, rest, bank):
    docs = [
        {"name": f"note{i}.md", "text": f"# Note {i}\n\nThe harbour ferry leaves at {i} o'clock."} for i in range(8)
    ]
    r = await rest.post(f"/v1/banks/{bank}/documents", params={"wait": True}, json={"files": docs})
    assert r.json()["status"] == "succeeded", r.text
    async with mcp_local(app, bank) as c:
        by_tool = (
            await c.call_tool("search_documents", {"query": "harbour ferry", "strictness": 0})
        ).structured_content
        segments = (await c.call_tool("rag_search", {"search_phrases": ["harbour ferry"]})).structured_content
        stored = await c.call_tool("retain", {"content": "Tagged by a tool.", "tags": [" b", "a", "a"]})
    by_route = (
        await rest.post(f"/v1/banks/{bank}/documents/query", json={"query": "harbour ferry", "strictness": 0})
    ).json()
    assert len(by_tool["results"]) == len(by_route["results"]) == 5  # search_documents' default top_k
    assert len(segments["segments"]) == 8  # rag_search's default top_k is 10: all eight notes
    r = await rest.post(f"/v1/banks/{bank}/memories", json={"content": "Tagged by a route.", "tags": [" b", "a", "a"]})
    ids = [stored.structured_content["memory_ids"][0], r.json()["memory_ids"][0]]
    for mid in ids:
        assert (await rest.get(f"/v1/banks/{bank}/memories/{mid}")).json()["tags"] == ["a", "b"]
