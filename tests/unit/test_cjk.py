"""Chinese, Japanese and Korean text for the keyword and entity arms (engine/cjk.py)."""

from __future__ import annotations

from hindsight.engine import cjk
from hindsight.engine.cjk import chinese_names, entity_candidates, query_grams
from hindsight.engine.entities import extract_entities
from hindsight.engine.recall import content_words


def test_query_grams_are_pairs_without_question_words():
    assert query_grams("王芳什么时候去了北京？") == ["王芳", "候去", "去了", "了北", "北京"]
    assert query_grams("猫") == ["猫"]  # a lone character is its own lexeme
    assert query_grams("谁？") == [] and query_grams("你吃饭了吗") == ["你吃", "吃饭", "饭了"]
    assert query_grams("ラーメン") == ["ラー", "ーメ", "メン"]
    assert query_grams("김치찌개") == ["김치", "치찌", "찌개"]
    assert query_grams("no CJK at all") == []


def test_content_words_mix_english_and_cjk_and_leave_dates_out():
    assert content_words("王芳 went to 北京 for the Python conference") == [
        "went", "Python", "conference", "王芳", "北京",
    ]  # fmt: skip
    # 5月4日 is the temporal arm's: its characters would match every memory naming a month
    assert content_words("5月4日谁去爬山了？") == ["去爬", "爬山", "山了"]
    assert content_words("上周三的会议") == ["的会", "会议"]


def test_entity_candidates_are_short_substrings():
    got = entity_candidates("王芳去哪")
    assert "王芳" in got and "王芳去" in got and "王芳去哪" in got and "王" not in got


def test_chinese_names_with_their_kind():
    found = chinese_names("王芳上周三和李明在北京见面，然后去了上海。")
    assert found == [("王芳", "person"), ("李明", "person"), ("北京", "place"), ("上海", "place")]
    assert chinese_names("no Chinese here") == []
    mixed = extract_entities("Alice met 张伟 in 杭州.")
    assert ("Alice", "person") in mixed and ("张伟", "person") in mixed and ("杭州", "place") in mixed


def test_content_words_of_any_alphabet():
    assert content_words("Was the café in Montréal nice? The CAFÉ!") == ["café", "Montréal", "nice"]
    assert content_words("Олег 在北京 Straße") == ["Олег", "Straße", "在北", "北京"]


class Viterbi:
    """Every sequence jieba's tagger hands its hidden Markov model: the expensive part of tagging
    (the rest is dictionary lookups)."""

    def __init__(self, monkeypatch):
        import jieba.posseg as posseg

        self.states, self.calls, real = posseg.char_state_tab_P, [], posseg.viterbi

        def counting(obs, *args):
            self.calls.append(obs)
            return real(obs, *args)

        monkeypatch.setattr(posseg, "viterbi", counting)

    def stateless(self) -> int:
        """Characters handed to the model that it has no states for: each costs ~6 ms."""
        return sum(1 for obs in self.calls for c in obs if c not in self.states)


PROSE = "。王芳和李明在北京见面，张伟去了上海的华为公司。"
NAMES = [
    ("王芳", "person"), ("李明", "person"), ("北京", "place"), ("张伟", "person"), ("上海", "place"),
    ("华为公司", "organization"),
]  # fmt: skip


def test_characters_the_tagger_never_saw_reach_its_model_only_a_few_times(monkeypatch):
    # 2,000 characters the model has no states for took it 12 s to tag (6 ms each, pure Python
    # holding the GIL); past the first few they are read as spaces, and the prose after them is
    # tagged as ever. The CPU budget is lifted to see this rule alone.
    monkeypatch.setattr(cjk, "TAG_CPU_SECONDS", 1e9)
    viterbi = Viterbi(monkeypatch)
    rare = cjk._unseen().pattern[1:-1]  # every Han character the model has no states for
    assert len(rare) > 10_000
    assert [n for n in chinese_names(rare[:2_000] + PROSE) if n in NAMES] == NAMES
    assert 0 < viterbi.stateless() <= 4
    # A name with a rare character in ordinary text keeps it.
    assert cjk._bounded("王" + rare[0] + PROSE) == "王" + rare[0] + PROSE
    assert chinese_names(PROSE) == NAMES


def test_the_model_is_left_out_once_a_text_has_spent_its_cpu(monkeypatch):
    # Characters with the most states (60 each, common ones such as 的 and 一) in a random order
    # are all handed to the model and cost ~270 us each, 16 times prose. With the budget spent at
    # once, only the first block reaches the model and the rest is tagged from the dictionary:
    # places and organisations are still found, people (which only the model finds) are not.
    import jieba.posseg as posseg

    monkeypatch.setattr(cjk, "TAG_CPU_SECONDS", 0.0)
    monkeypatch.setattr(cjk, "TAG_CPU_PER_CHAR", 0.0)
    viterbi = Viterbi(monkeypatch)
    states = posseg.char_state_tab_P
    busiest = sorted((c for c in states if "\u4e00" <= c <= "\u9fd5"), key=lambda c: -len(states[c]))[:50]
    busy = "".join(busiest[(i * 7) % 50] for i in range(2_000))
    found = dict(chinese_names(busy + PROSE))
    assert 0 < sum(len(obs) for obs in viterbi.calls) <= 64
    assert found.get("北京") == found.get("上海") == "place" and found.get("华为公司") == "organization"
    assert "王芳" not in found
