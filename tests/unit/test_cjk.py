"""Chinese, Japanese and Korean text for the keyword arm and entity names (language/cjk.py, language/chinese_names.py)."""

from __future__ import annotations

from hindsight.language.chinese_names import chinese_names
from hindsight.language.cjk import query_grams
from hindsight.language.entities import extract_entities
from hindsight.language.query_terms import content_words


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


def test_chinese_names_with_their_kind():
    found = chinese_names("王芳上周三和李明在北京见面，然后去了上海。")
    assert found == [("王芳", "person"), ("李明", "person"), ("北京", "place"), ("上海", "place")]
    assert chinese_names("no Chinese here") == []
    mixed = extract_entities("Alice met 张伟 in 杭州.")
    assert ("Alice", "person") in mixed and ("张伟", "person") in mixed and ("杭州", "place") in mixed


def test_content_words_of_any_alphabet():
    assert content_words("Was the café in Montréal nice? The CAFÉ!") == ["café", "Montréal", "nice"]
    assert content_words("Олег 在北京 Straße") == ["Олег", "Straße", "在北", "北京"]
