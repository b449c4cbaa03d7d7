"""Search modes, relevance thresholds and the filter language, on recall and on documents,
through REST and the official MCP client."""

from __future__ import annotations

import uuid

import pytest

from conftest import mcp_session
from support import b64, import_docs, pdf_bytes, tool_error

MEMORIES = [
    {
        "content": "Melanie adopted a beagle named Biscuit from the shelter.",
        "metadata": {"speaker": "Melanie", "session": 1},
        "tags": ["pets"],
        "timestamp": "2023-05-08T10:00:00Z",
    },
    {
        "content": "Caroline started a pottery class on Tuesday evenings.",
        "metadata": {"speaker": "Caroline", "session": 2},
        "tags": ["hobbies"],
        "timestamp": "2023-06-01T10:00:00Z",
    },
    {
        "content": "The quarterly ERR-4012 outage was traced to a failing power supply.",
        "metadata": {"speaker": "Ops", "session": 3},
        "tags": ["work", "incidents"],
        "timestamp": "2023-07-01T10:00:00Z",
    },
]


@pytest.fixture
def memory_bank(api, bank):
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": MEMORIES})
    assert r.status_code == 200, r.text
    return bank


def recall(api, bank, **body):
    r = api.post(f"/v1/banks/{bank}/recall", json=body)
    assert r.status_code == 200, r.text
    return r.json()["results"]


def test_recall_modes_arms_and_relevance(api, memory_bank):
    vector = recall(api, memory_bank, query="dog adoption", mode="vector")
    assert vector[0]["text"].startswith("Melanie") and all(m["arms"] == ["semantic"] for m in vector)
    keyword = recall(api, memory_bank, query="ERR-4012", mode="keyword")
    assert [m["text"][:13] for m in keyword] == ["The quarterly"] and keyword[0]["arms"] == ["keyword"]
    assert keyword[0]["relevance"] == 1.0  # every content word of the query is in it
    # The share counts the query's own lexemes (stemmed, stop words dropped): "pottery", "class"
    # and "zebra" (in no memory), of which Caroline's note holds two.
    partial = recall(api, memory_bank, query="the pottery classes zebra", mode="keyword")
    assert [m["text"][:8] for m in partial] == ["Caroline"] and partial[0]["relevance"] == round(2 / 3, 4)
    assert recall(api, memory_bank, query="zebra", mode="keyword") == []
    hybrid = recall(api, memory_bank, query="the beagle Melanie adopted")
    assert hybrid[0]["text"].startswith("Melanie") and {"semantic", "keyword"} <= set(hybrid[0]["arms"])
    assert all(0 <= m["relevance"] <= 1 for m in hybrid)


def test_recall_threshold_and_top_k(api, memory_bank):
    everything = recall(api, memory_bank, query="beagle dog", strictness=0)
    assert len(everything) == 3
    strict = recall(api, memory_bank, query="beagle dog", strictness=4)
    assert [m["text"][:7] for m in strict] == ["Melanie"]
    assert all(m["relevance"] >= 0.5 for m in strict)
    assert len(recall(api, memory_bank, query="beagle dog", min_score=0.99)) == 0
    assert len(recall(api, memory_bank, query="beagle dog", top_k=1)) == 1
    r = api.post(f"/v1/banks/{memory_bank}/recall", json={"query": "x", "strictness": 2, "min_score": 0.3})
    assert r.status_code == 422 and "strictness or min_score" in r.json()["message"]
    for bad in ({"top_k": 0}, {"top_k": 51}, {"strictness": 6}, {"mode": "fuzzy"}, {"min_score": 2}):
        r = api.post(f"/v1/banks/{memory_bank}/recall", json={"query": "x", **bad})
        assert r.status_code == 422 and next(iter(bad)) in r.json()["message"], (bad, r.text)


@pytest.mark.parametrize(
    "expr,expected",
    [
        ('metadata.speaker = "Caroline"', {"Caroline"}),
        ('tags contains "work"', {"The"}),
        ('tags in ["pets", "hobbies"]', {"Melanie", "Caroline"}),
        ('metadata.session >= 2 and not tags contains "work"', {"Caroline"}),
        ('entities contains "melanie" or text contains "pottery"', {"Melanie", "Caroline"}),
        ('mentioned_at < "2023-06-15" and (type = "world" or type = "experience")', {"Melanie", "Caroline"}),
        ('metadata.speaker like "C%"', {"Caroline"}),
        ('metadata.speaker in ["Ops", "Nobody"]', {"The"}),
        ('context = "general" and metadata.missing = "x"', set()),
    ],
)
def test_recall_filters(api, memory_bank, expr, expected):
    got = recall(api, memory_bank, query="what happened", filter=expr, strictness=0)
    assert {m["text"].split()[0] for m in got} == expected


def test_filter_errors_name_the_problem_and_change_nothing(api, memory_bank):
    before = api.get(f"/v1/banks/{memory_bank}/memories").json()["total"]
    for expr, words in [
        ("speaker = 'x'", "unknown field 'speaker'"),
        ('tags = "work"', "use `contains`"),
        ('type = "a" and', "expected a field name"),
        ('(type = "a"', "missing `)`"),
        ("type = 'a'; DROP TABLE memories", "unexpected character ';'"),
        ('created_at > "last week"', "not an ISO 8601"),
        ("metadata.n >", "expected a quoted string"),
        ("x" * 2001, "at most 2000 characters"),
    ]:
        r = api.post(f"/v1/banks/{memory_bank}/recall", json={"query": "x", "filter": expr})
        assert r.status_code == 422, r.text
        body = r.json()
        assert words in body["message"] and body["message"].startswith("filter"), body
    assert api.get(f"/v1/banks/{memory_bank}/memories").json()["total"] == before


@pytest.fixture
def doc_bank(api, bank):
    import_docs(
        api,
        bank,
        files=[
            {"name": "guide.pdf", "content_base64": b64(pdf_bytes())},
            {"name": "manual.txt", "text": "Error code ERR-4012 means the power supply failed; replace the unit."},
            {"name": "party.md", "text": "# Launch party\n\nCake and music for the Falcon X launch."},
        ],
        tags=[],
    )
    import_docs(
        api,
        bank,
        files=[
            {"name": "faq.html", "text": "<h1>FAQ</h1><p>Reset the Falcon X by holding the button.</p>", "type": "html"}
        ],
        tags=["manual"],
    )
    return bank


def query_docs(api, bank, headers=None, **body):
    r = api.post(f"/v1/banks/{bank}/documents/query", json=body, headers=headers or {})
    assert r.status_code == 200, r.text
    return r.json()


def test_document_search_modes_filters_and_fields(api, doc_bank):
    res = query_docs(api, doc_bank, query="LED blinks red", mode="vector", strictness=0)
    top = res["results"][0]
    assert res["metadata"] == {
        "results_number": len(res["results"]),
        "search_type": "vector_search",
        "collection": doc_bank,
    }
    assert top["file_path"] == "guide.pdf" and top["page_numbers"] == [1, 2] and top["vector_type"] == "dense"
    assert top["arms"] == ["semantic"] and 0 < top["score"] <= 1 and top["chunk_index"] == 0
    kw = query_docs(api, doc_bank, query="ERR-4012", mode="keyword", strictness=0)
    assert [r["file_path"] for r in kw["results"]] == ["manual.txt"]
    assert kw["results"][0]["vector_type"] == "sparse" and kw["metadata"]["search_type"] == "full_text_search"
    pdf_only = query_docs(api, doc_bank, query="Falcon X", strictness=0, filter='source_type = "pdf" and page = 2')
    assert {r["file_path"] for r in pdf_only["results"]} == {"guide.pdf"}
    manual = query_docs(api, doc_bank, query="Falcon X", strictness=0, filter='tags contains "manual"')
    assert manual["results"] == []  # the filter narrows; it never widens access
    manual = query_docs(
        api, doc_bank, {"x-session-tags": '["manual"]'}, query="Falcon X", strictness=0, filter='tags contains "manual"'
    )
    assert {r["file_path"] for r in manual["results"]} == {"faq.html"}
    like = query_docs(api, doc_bank, query="Falcon X", strictness=0, filter='file_path like "%.md"')
    assert {r["file_path"] for r in like["results"]} == {"party.md"}
    strict = query_docs(api, doc_bank, query="power supply failed error code", strictness=5)
    assert [r["file_path"] for r in strict["results"]] == ["manual.txt"]
    assert len(query_docs(api, doc_bank, query="Falcon X", strictness=0, top_k=1)["results"]) == 1
    r = api.post(f"/v1/banks/{doc_bank}/documents/query", json={"query": "x", "filter": "page = 'two'"})
    assert r.status_code == 422 and "page takes a whole number" in r.json()["message"]


async def test_search_tools_over_mcp(server, memory_bank, doc_bank):
    async with mcp_session(f"{server.url}/mcp/{doc_bank}/", {"x-session-tags": '["manual"]'}) as c:
        res = (
            await c.call_tool("search_documents", {"query": "reset", "filter": 'source_type = "html"', "strictness": 0})
        ).structured_content
        assert [r["file_path"] for r in res["results"]] == ["faq.html"]
        e = tool_error(await c.call_tool("search_documents", {"query": "reset", "top_k": 99}))
        assert e["error"] == "invalid_argument" and "top_k" in e["message"]
        e = tool_error(await c.call_tool("search_documents", {"query": "reset", "filter": "bogus ~ 1"}))
        assert e["error"] == "invalid_argument" and "filter" in e["message"]
    async with mcp_session(f"{server.url}/mcp/{memory_bank}/") as c:
        res = (
            await c.call_tool(
                "recall", {"query": "pets", "filter": 'metadata.speaker = "Melanie"', "mode": "vector", "top_k": 5}
            )
        ).structured_content
        assert [m["metadata"]["speaker"] for m in res["results"]] == ["Melanie"]
        e = tool_error(await c.call_tool("recall", {"query": "pets", "strictness": 9}))
        assert e["error"] == "invalid_argument" and "strictness" in e["message"]


def test_keyword_arm_weighs_rare_words(api, bank):
    """The one memory with the query's rare word outranks twelve that share two of its common
    words (ts_rank_cd, which ignores rarity, ranked it last)."""
    items = [{"content": f"Caroline talked with friends about day {i}."} for i in range(12)]
    items.append({"content": "Melanie restored an old astrolabe."})
    assert api.post(f"/v1/banks/{bank}/memories", json={"items": items}).status_code == 200
    top = recall(api, bank, query="What did Caroline tell friends about the astrolabe?", mode="keyword")
    assert top[0]["text"] == "Melanie restored an old astrolabe."
    assert len(top) == 13  # the common words still bring the rest, ranked below


def test_document_keyword_arm_ranks_pages_holding_more_of_the_words(api, bank):
    """A page holding the words asked about outranks pages where one of the query's words (a
    speaker's name) comes many times: ts_rank_cd, which counts every occurrence of any word of an
    OR query, ranked the chatty pages first."""
    chatty = [
        {"name": f"chat-{i}.txt", "text": "\n".join(f"Caroline: line {j} about the weather." for j in range(12))}
        for i in range(3)
    ]
    asked = {"name": "group.txt", "text": "Caroline went to the LGBTQ support group on 7 May."}
    import_docs(api, bank, files=[*chatty, asked])
    res = query_docs(api, bank, query="When did Caroline go to the LGBTQ support group?", mode="keyword", strictness=0)
    assert [r["file_path"] for r in res["results"]][:1] == ["group.txt"]
    assert len(res["results"]) == 4  # the name alone still finds the others, ranked below


async def _lexeme_counts(pg_url, bank, rows="memories", counts="bank_lexemes"):
    import asyncpg

    conn = await asyncpg.connect(pg_url)
    try:
        kept = {
            r["lexeme"]: r["n"]
            for r in await conn.fetch(f"SELECT lexeme, n FROM {counts} WHERE bank_id = $1 AND n > 0", bank)
        }
        recount = {
            r["l"]: r["n"]
            for r in await conn.fetch(
                f"SELECT l, count(*) AS n FROM {rows} m, unnest(tsvector_to_array(m.tsv)) l WHERE m.bank_id = $1"
                f" GROUP BY l UNION ALL SELECT '', count(*) FROM {rows} WHERE bank_id = $1 HAVING count(*) > 0",
                bank,
            )
        }
        return kept, recount
    finally:
        await conn.close()


async def test_word_frequencies_follow_every_write(pg_url, server, bank):
    """bank_lexemes (the keyword arm's document frequencies) stays equal to a recount through
    batch retains, concurrent document replacements, memory deletion and bank deletion."""
    import asyncio

    import httpx

    async with httpx.AsyncClient(base_url=server.url, timeout=60) as c:

        async def put(i):
            body = {
                "items": [
                    {"content": f"Round {i}: the heron nested by pond {j} near the mill.", "document_id": f"d{j % 3}"}
                    for j in range(6)
                ]
                + [{"content": f"Loose note {i} about herons."}]
            }
            r = await c.post(f"/v1/banks/{bank}/memories", json=body)
            assert r.status_code == 200, r.text

        await asyncio.gather(*(put(i) for i in range(8)))
        kept, recount = await _lexeme_counts(pg_url, bank)
        assert kept == recount and kept[""] == 3 * 2 + 8  # 3 documents of 2 units, 8 loose notes
        mid = (await c.get(f"/v1/banks/{bank}/memories")).json()["memories"][0]["id"]
        assert (await c.delete(f"/v1/banks/{bank}/memories/{mid}")).status_code == 200
        kept, recount = await _lexeme_counts(pg_url, bank)
        assert kept == recount and kept[""] == 13
        assert (await c.delete(f"/v1/banks/{bank}")).status_code == 200
        assert await _lexeme_counts(pg_url, bank) == ({}, {})


async def test_chunk_word_frequencies_follow_every_write(pg_url, server, bank):
    """chunk_lexemes (document search's word frequencies, migration 014) stays equal to a recount
    through concurrent imports into one bank, a document replaced with new text, a document
    deleted and the bank deleted; and the rare word it counts ranks its page first."""
    import asyncio

    import httpx

    async with httpx.AsyncClient(base_url=server.url, timeout=120) as c:

        async def put(i):
            files = [
                {"name": f"notes-{i}-{j}.txt", "text": f"Page {j} of batch {i}: herons nest by the mill pond {j}."}
                for j in range(3)
            ]
            r = await c.post(f"/v1/banks/{bank}/documents", json={"files": files}, params={"wait": True})
            assert r.status_code == 202 and r.json()["status"] == "succeeded", r.text

        await asyncio.gather(*(put(i) for i in range(6)))
        kept, recount = await _lexeme_counts(pg_url, bank, "chunks", "chunk_lexemes")
        assert kept == recount and kept[""] == 18 and kept["heron"] == 18
        replaced = {"name": "notes-0-0.txt", "text": "The kingfisher came back to the willow."}
        r = await c.post(f"/v1/banks/{bank}/documents", json={"files": [replaced]}, params={"wait": True})
        assert r.json()["result"]["files"][0]["status"] == "replaced", r.text
        kept, recount = await _lexeme_counts(pg_url, bank, "chunks", "chunk_lexemes")
        assert kept == recount and kept[""] == 18 and kept["heron"] == 17 and kept["kingfish"] == 1
        r = await c.post(
            f"/v1/banks/{bank}/documents/query", json={"query": "herons and the kingfisher", "mode": "keyword"}
        )
        assert r.status_code == 200 and r.json()["results"][0]["file_path"] == "notes-0-0.txt", r.text
        doc = r.json()["results"][0]["document_id"]
        assert (await c.delete(f"/v1/banks/{bank}/documents/{doc}")).status_code in (200, 204)
        kept, recount = await _lexeme_counts(pg_url, bank, "chunks", "chunk_lexemes")
        assert kept == recount and kept[""] == 17 and "kingfish" not in kept
        assert (await c.delete(f"/v1/banks/{bank}")).status_code == 200
        assert await _lexeme_counts(pg_url, bank, "chunks", "chunk_lexemes") == ({}, {})


async def test_document_search_embeds_on_the_query_path_and_keyword_mode_not_at_all(app, rest, bank):
    """Phrases go through the embedder's query path (its own threads and cache, as recall's
    queries), never the batch path imports and retains share: through it a search waited for a
    CPU slot behind whole documents being embedded. Keyword search needs no vectors at all."""
    text = "# Falcon X\n\nThe Falcon X router ships with eight ports.\n\n## Reset\n\nHold the button ten seconds."
    r = await rest.post(
        f"/v1/banks/{bank}/documents", params={"wait": True}, json={"files": [{"name": "x.md", "text": text}]}
    )
    assert r.json()["status"] == "succeeded", r.text
    embedder = app.engine.rt.embedder
    calls: list[tuple[str, list]] = []
    batch, query = embedder.embed, embedder.query

    def spy_batch(texts):
        calls.append(("batch", list(texts)))
        return batch(texts)

    async def spy_query(t):
        calls.append(("query", [t]))
        return await query(t)

    embedder.embed, embedder.query = spy_batch, spy_query
    try:
        phrases = ["how many ports does the router have", "reset the router"]
        r = await rest.post(f"/v1/banks/{bank}/documents/query", json={"query": phrases[0], "mode": "keyword"})
        assert r.status_code == 200 and r.json()["results"], r.text
        assert calls == []
        r = await rest.post(f"/v1/banks/{bank}/documents/search", json={"search_phrases": phrases})
        assert r.status_code == 200 and r.json()["segments"], r.text
        assert sorted(calls) == [("query", [p]) for p in sorted(phrases)]
    finally:
        del embedder.embed, embedder.query  # the class's methods again


def test_banks_made_from_the_same_input_recall_alike(api):
    """Equal scores (the same line said in five sessions) are ordered by id, which follows the
    order memories were retained: two banks made from the same input answer every query with the
    same memories in the same order."""
    items = [
        {"content": line, "document_id": f"s{s}", "metadata": {"turn": f"{s}:{i}"}, "timestamp": "2023-05-08T10:00:00Z"}
        for s in range(5)
        for i, line in enumerate(["Ann: Thanks, see you soon!", f"Bob: The parcel {s} arrived.", "Ann: Bye!"])
    ]
    banks = [f"alike_{uuid.uuid4().hex[:8]}" for _ in range(2)]
    for b in banks:
        assert api.post(f"/v1/banks/{b}/memories", json={"items": items}).status_code == 200
    for query in ("see you soon", "bye", "parcel arrived", "Ann"):
        first, second = ([m["metadata"]["turn"] for m in recall(api, b, query=query)] for b in banks)
        assert first == second and len(first) == len(items)


def _explains(body: dict) -> None:
    """Each result's trace recomputes its score from the parts and the weights given."""
    trace, results = body["trace"], body["results"]
    w, best = trace["weights"], trace["keyword_best"]
    assert [t["id"] for t in trace["results"]] == [m["id"] for m in results]
    for m, t in zip(results, trace["results"]):
        assert t["arms"] == m["arms"] and t["score"] == pytest.approx(m["score"], abs=1e-5)
        share = t["keyword"] / best if best else 0.0
        own = w["semantic"] * t["semantic"] + w["keyword"] * share + w["time"] * (t["time"] or 0.0)
        assert t["base"] == pytest.approx(own, abs=1e-5)
        context = w.get("neighbour", 0) * (t["neighbour"] or 0) + w.get("source", 0) * (t["source"] or 0)
        assert t["score"] == pytest.approx(t["base"] + context, abs=1e-5)


async def test_recall_explains_itself_on_rest_mcp_and_the_hindsight_api(server, api, memory_bank):
    """With trace, each result says its score from each arm, its context and its fused score; the
    Hindsight-compatible API gives them as each result's scores (final, and semantic or keyword
    where that arm found it)."""
    body = api.post(
        f"/v1/banks/{memory_bank}/recall",
        json={"query": "What did Melanie adopt in May?", "trace": True, "query_timestamp": "2023-12-01T00:00:00Z"},
    ).json()
    _explains(body)
    first = body["trace"]["results"][0]
    assert body["results"][0]["text"].startswith("Melanie") and first["time"] == 1.0  # "in May": her note's month
    assert set(body["trace"]["weights"]) == {"semantic", "keyword", "time", "neighbour", "source"}
    vector = api.post(f"/v1/banks/{memory_bank}/recall", json={"query": "pets", "mode": "vector", "trace": True}).json()
    _explains(vector)
    assert set(vector["trace"]["weights"]) == {"semantic", "keyword", "time"}  # no context in one arm's mode
    assert all(t["neighbour"] is None and t["time"] is None for t in vector["trace"]["results"])
    assert api.post(f"/v1/banks/{memory_bank}/recall", json={"query": "pets"}).json()["trace"] is None

    async with mcp_session(f"{server.url}/mcp/{memory_bank}/") as c:
        res = (await c.call_tool("recall", {"query": "What did Melanie adopt?", "trace": True})).structured_content
    for m in res["results"]:  # a lean result leaves out null fields
        m.setdefault("arms", [])
    for t in res["trace"]["results"]:
        t.setdefault("time", None)
    _explains(res)

    compat = api.post(
        f"/v1/default/banks/{memory_bank}/memories/recall", json={"query": "the beagle Melanie adopted", "trace": True}
    ).json()
    scores = [r["scores"] for r in compat["results"]]
    traced = compat["trace"]["results"]
    assert [s["final"] for s in scores] == [t["score"] for t in traced] and scores[0]["reranker"] is None
    for s, t in zip(scores, traced):
        assert s["semantic"] == (t["semantic"] if "semantic" in t["arms"] else None)
        assert s["keyword"] == (t["keyword"] if "keyword" in t["arms"] else None)
    plain = api.post(f"/v1/default/banks/{memory_bank}/memories/recall", json={"query": "beagle"}).json()
    assert plain["trace"] is None and all(r.get("scores") is None for r in plain["results"])
