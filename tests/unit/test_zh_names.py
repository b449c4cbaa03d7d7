"""Chinese names at a bounded cost (language/chinese_names.py): whatever the text, jieba's hidden Markov
model only sees what the request's allowance pays for, and within it the names are those
jieba.posseg.cut finds over the whole text."""

from __future__ import annotations

import jieba.posseg as posseg
import pytest

from hindsight.engine.memory.retain import prepare_units
from hindsight.engine.memory.schemas import RetainItem
from hindsight.language import chinese_names as zh_names
from hindsight.language.chinese_names import Budget, chinese_names

PROSE = "。王芳和李明在北京见面，张伟去了上海的华为公司。"
NAMES = [
    ("王芳", "person"), ("李明", "person"), ("北京", "place"), ("张伟", "person"), ("上海", "place"),
    ("华为公司", "organization"),
]  # fmt: skip
# Without punctuation for 134 characters: names fall wherever a cut of the text would.
UNBROKEN = (
    "昨天下午三点钟在上海浦东新区的一个会议中心里举行了一场关于新能源汽车发展前景的论坛参加论坛的有来自"
    "比亚迪蔚来汽车和小鹏汽车的高管还有清华大学的欧阳明远教授和复旦大学的司马静怡副教授他们分别就电池技术"
    "充电基础设施和智能驾驶等话题发表了演讲论坛结束后主办方还安排了试驾活动"
)


@pytest.fixture
def model(monkeypatch):
    """The state pairs jieba's model tries, one count per sequence it is handed, taken inside its
    own Viterbi loop (each pair reads one transition probability): the expensive part of tagging,
    the rest being dictionary lookups."""
    handed: list[int] = []
    real = posseg.viterbi

    class Counted(dict):
        def get(self, key, default=None):
            handed[-1] += 1
            return dict.get(self, key, default)

    counted = {state: Counted(after) for state, after in posseg.trans_P.items()}

    def counting(obs, states, start_p, trans_p, emit_p):
        handed.append(0)
        return real(obs, states, start_p, counted, emit_p)

    monkeypatch.setattr(posseg, "viterbi", counting)
    return handed


def jieba_names(text: str) -> list[tuple[str, str]]:
    found: dict[str, str] = {}
    for p in posseg.cut(text):
        if (kind := zh_names._kind(p.word, p.flag)) is not None:
            found.setdefault(p.word, kind)
    return list(found.items())


def allowance(chars: int) -> int:
    return zh_names.PAIRS_FLOOR + zh_names.PAIRS_PER_CHAR * chars


def test_prose_is_tagged_as_jieba_tags_the_whole_text(model):
    assert chinese_names(PROSE) == NAMES == jieba_names(PROSE)
    for pad in range(0, 80, 9):  # wherever the text starts, no name is cut or made up
        text = "的" * pad + UNBROKEN
        assert chinese_names(text) == jieba_names(text), pad
    model.clear()
    assert {"上海浦东新区", "复旦大学", "清华大学"} <= dict(chinese_names(UNBROKEN)).keys()
    assert 0 < sum(model) <= allowance(len(UNBROKEN))


def test_characters_the_model_never_saw_are_left_to_the_dictionary(model):
    # 2,000 characters the model has no states for: 256 each, tried against each other, took it
    # ~12 s (pure Python holding the GIL). They stay unread; the prose after them is tagged.
    rare = "".join(chr(c) for c in range(0x4E00, 0x9FD6) if chr(c) not in posseg.char_state_tab_P)
    text = rare[:2_000] + PROSE
    assert [n for n in chinese_names(text) if n in NAMES] == NAMES
    assert model and max(model) < 10_000  # only the prose's short buffers reached it


def test_a_request_has_one_allowance_however_many_texts_it_holds(model):
    # Two characters without states cost the model ~6 ms (256 x 256 pairs), within what one text
    # may spend alone: a thousand items of them were 6 s of CPU from a 10 KB request. One
    # allowance covers the request; past it no buffer is read.
    items = [RetainItem(content="丂丄")] * 1_000
    assert zh_names._pairs("丂丄") < zh_names.PAIRS_FLOOR
    assert prepare_units(items, 1_200) and sum(model) <= allowance(2_000)
    # The characters with the most states (60 each, such as 的 and 一) in an order the dictionary
    # cannot join: the model would try them all. It stops at the allowance; the dictionary's
    # places and organisations are still found, a person only the model finds is not.
    model.clear()
    states = posseg.char_state_tab_P
    busiest = sorted((c for c in states if "\u4e00" <= c <= "\u9fd5"), key=lambda c: -len(states[c]))[:50]
    busy = "".join(busiest[(i * 7) % 50] for i in range(3_000)) + PROSE
    found = dict(chinese_names(busy, Budget(len(busy))))
    buffers = [busy[a:b] for a, b, buffer in zh_names._words(busy[:3_000]) if buffer]
    assert sum(model) <= allowance(len(busy)) < sum(map(zh_names._pairs, buffers))
    assert found.get("北京") == found.get("上海") == "place" and found.get("华为公司") == "organization"
    assert "王芳" not in found
    # 煜 has one state, which cannot follow 年's: jieba then tries every state that can (~160),
    # ~1.5 ms a character where each character's own states promise a few. Counted as it runs.
    model.clear()
    chosen = "年煜年煜北京" * 100
    chinese_names(chosen, Budget(10**9))
    unbounded = sum(model)
    model.clear()
    chinese_names(chosen)
    assert sum(model) <= allowance(len(chosen)) < unbounded / 4


def test_traditional_chinese_is_read_through_its_simplified_characters(model):
    # 陳, 廣, 灣...: the model has no states for ~40% of these characters, which cost it ~1 ms a
    # character and tagged few names (陳建華 and 陳茂波 were missed past the allowance). Read
    # through their Simplified forms, the names are found at the cost of prose, as written.
    text = (
        "香港特別行政區行政長官今日在政府總部會見了來自廣州的代表團。團長陳建華說，粵港澳大灣區的發展需要兩地"
        "政府緊密合作。會後，財政司司長陳茂波陪同代表團參觀。輝達執行長黃仁勳下個月將訪問台北。"
    )
    found = dict(chinese_names(text))
    for name in ("陳建華", "陳茂波", "黃仁勳"):
        assert found.get(name) == "person", (name, found)
    assert found.get("廣州") == found.get("台北") == "place" and found.get("財政司") == "organization"
    blocks = posseg.re_han_internal.findall(text)
    as_written = sum(zh_names._pairs(b[x:y]) for b in blocks for x, y, buffer in zh_names._words(b) if buffer)
    assert sum(model) < 200 * len(text) and 10 * sum(model) < as_written  # prose's share, a tenth of as written
    # A character the model knows is read as written, Simplified or Traditional alike.
    assert chinese_names("張偉和王芳在北京见面") == jieba_names("張偉和王芳在北京见面")


def test_without_opencc_s_table_traditional_is_read_as_written(monkeypatch):
    # Another module named opencc (a script, or the C++ binding without the text tables): no
    # table, and names are found within the allowance as before, never an error.
    import sys
    import types

    monkeypatch.setitem(sys.modules, "opencc", types.ModuleType("opencc"))
    zh_names._simplified.cache_clear()
    try:
        assert zh_names._simplified() == {}
        assert ("台北", "place") in chinese_names("輝達執行長黃仁勳下個月將訪問台北。")
    finally:
        zh_names._simplified.cache_clear()
