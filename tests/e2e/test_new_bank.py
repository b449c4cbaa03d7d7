"""A bank that was never written answers reads as an empty bank.

The seed document tells agents to call recall "at the start of conversation"; on a new user's
bank URL that is the very first call, before any retain has created the bank. Reads must answer
empty (not an error, and without creating the bank); a key still reaches only its own banks.
"""

from __future__ import annotations

from conftest import ADMIN_KEY, mcp_session
from support import tool_error

READS = {
    "recall": ({"query": "what does the user like?"}, lambda r: r["results"] == []),
    "reflect": (
        {"query": "what should I know?"},
        lambda r: r["based_on"] == {"memories": [], "mental_models": []} and "no memories" in r["answer"],
    ),
    "list_mental_models": ({}, lambda r: r["mental_models"] == []),
    "list_documents": ({}, lambda r: r["documents"] == [] and r["count"] == 0),
    "rag_search": ({"search_phrases": ["router reset"]}, lambda r: r["segments"] == []),
    "search_documents": ({"query": "router reset"}, lambda r: r["results"] == []),
    "list_operations": ({}, lambda r: r["operations"] == []),
}


async def _read_everything(client, extra: dict | None = None) -> None:
    for name, (args, ok) in READS.items():
        r = await client.call_tool(name, {**args, **(extra or {})})
        assert not r.is_error and ok(r.structured_content), (name, r.structured_content)
    e = tool_error(
        await client.call_tool("get_mental_model", {"mental_model_id": "team", **(extra or {})})
    )  # looked up by id: simply not found
    assert e["error"] == "not_found" and "team" in e["message"]


async def test_first_call_on_a_new_bank_url_is_an_empty_read(server, api, bank):
    async with mcp_session(f"{server.url}/mcp/{bank}/") as c:
        await _read_everything(c)
        assert api.get(f"/v1/banks/{bank}").status_code == 404  # reads created nothing
        await c.call_tool("retain", {"content": "The user likes green tea."})
        r = await c.call_tool("recall", {"query": "what does the user like?"})
        assert r.structured_content["results"][0]["text"] == "The user likes green tea."
    assert api.get(f"/v1/banks/{bank}").status_code == 200
    # REST reads of a bank never written: empty as well; only the bank itself is a 404
    other = bank + "_rest"
    assert api.post(f"/v1/banks/{other}/recall", json={"query": "x"}).json()["results"] == []
    assert api.get(f"/v1/banks/{other}/memories").json()["total"] == 0
    assert api.get(f"/v1/banks/{other}/mental-models").json() == {"mental_models": [], "total": 0}
    assert api.get(f"/v1/banks/{other}/documents").status_code == 200
    assert api.get(f"/v1/banks/{other}").status_code == 404
    assert api.get(f"/v1/banks/{other}/export").status_code == 404


async def test_multi_bank_mode_reads_a_new_bank_the_key_may_use(auth_server, bank):
    with auth_server.http(ADMIN_KEY) as admin:
        key = admin.post("/v1/keys", json={"name": "new-bank", "role": "bank", "banks": [bank]}).json()["key"]
        hdr = {"Authorization": f"Bearer {key}"}
        async with mcp_session(f"{auth_server.url}/mcp", {**hdr, "X-Bank-Id": bank}) as c:
            await _read_everything(c)
        async with mcp_session(f"{auth_server.url}/mcp", hdr) as c:
            await _read_everything(c, {"bank_id": bank})
            # a new bank the key may not use is still refused, not read as empty
            e = tool_error(await c.call_tool("recall", {"query": "x", "bank_id": bank + "_other"}))
            assert e["error"] == "forbidden"
        assert admin.get(f"/v1/banks/{bank}").status_code == 404
