"""A Chinese question finds the memory that answers it in other words, with the default English
model: Chinese is embedded as its English gloss (language/gloss.py), so "who has a pet" meets "I
adopted a kitten" though they share no word, over REST and MCP alike."""

from __future__ import annotations

from hindsight.language.cjk import query_grams

from conftest import mcp_local

LINES = [
    "赵磊：我上个月从收容所领养了一只小猫。",
    "孙丽：我在一所中学教数学。",
    "周强：明天可能会下大雨。",
    "吴静：我刚换了一份新工作，在银行上班。",
    "郑浩：我周末去海边钓鱼了。",
    "钱芳：我最近在学做蛋糕。",
    "冯伟：我爷爷以前是渔民。",
    "陈晨：医生说我的血压太高了。",
]
PET = "谁家里有宠物？"  # who has a pet at home?
HEALTH = "谁的健康出了问题？"  # whose health is in trouble?


async def test_a_chinese_question_finds_its_answer_in_other_words(rest, bank):
    r = await rest.post(f"/v1/banks/{bank}/memories", json={"items": [{"content": t} for t in LINES]})
    assert r.status_code == 200, r.text
    # No word in common: the keyword arm has nothing to match them by.
    for question, answer in ((PET, LINES[0]), (HEALTH, LINES[7])):
        assert not set(query_grams(question)) & set(query_grams(answer))

    async def recall(query: str, **kw) -> list[dict]:
        r = await rest.post(f"/v1/banks/{bank}/recall", json={"query": query, **kw})
        assert r.status_code == 200, r.text
        return r.json()["results"]

    for mode in ("hybrid", "vector"):
        assert (await recall(PET, mode=mode))[0]["text"] == LINES[0]
        assert (await recall(HEALTH, mode=mode))[0]["text"] == LINES[7]
    assert LINES[0] not in [m["text"] for m in await recall(PET, mode="keyword")]
    # Found by meaning alone, and the memory is returned as it was written.
    [top] = await recall(PET, top_k=1)
    assert top["arms"] == ["semantic"] and top["text"] == LINES[0]


async def test_through_mcp(app, bank):
    async with mcp_local(app, bank) as c:
        for line in LINES:
            r = await c.call_tool("retain", {"content": line})
            assert not r.is_error, r.content
        r = await c.call_tool("recall", {"query": PET})
        assert not r.is_error and r.structured_content["results"][0]["text"] == LINES[0]
