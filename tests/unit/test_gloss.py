"""Chinese glossed into English for the English embedding model (language/gloss.py): what each
kind of word becomes, and that stored text and question meet in the same words."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from hindsight.engine.memory.vectors import gloss_changed_only, glosses
from hindsight.engine.search.recall import reads
from hindsight.language import gloss as zh
from hindsight.language.cjk import HAN_RUN
from hindsight.language.gloss import GLOSS_VERSION, gloss, glossed


def test_text_without_chinese_is_left_as_it_is():
    for text in (
        "What does Wang Fang do for a living?",
        "",
        "Zoë's café, 5 km",
        "東京で美味しいラーメンを食べました。",
    ):
        assert gloss(text) == text
    assert not glossed("東京で美味しいラーメンを食べました。")  # Japanese: its kanji are not Chinese words
    assert glossed("서울에서 三星") and gloss("서울에서 三星").startswith("서울에서 ")  # hangul kept


def test_words_become_their_english():
    said = gloss("王芳：顺便说一下，我是一名老师。")
    assert "teacher" in said and "conveniently" in said
    assert not HAN_RUN.search(said)
    # The words of the question and of its answer now meet in English.
    assert "work" in gloss("王芳是做什么工作的？")
    assert "pet" in gloss("谁家里有宠物？") and "kitten" in gloss("我领养了一只小猫。")


def test_names_become_pinyin_as_english_writes_them():
    assert gloss("王芳：我今天好累。").startswith("Wang Fang : ")
    assert gloss("黄强上周三看了哪部电影？").startswith("Huang Qiang ")  # 强's usual reading, not "jiang"
    # The same name in a question and in a line: the same words.
    assert (
        gloss("李伟的猫叫什么名字？").split()[:2] == gloss("李伟：我的猫又把杯子打翻了。").split()[:2] == ["Li", "Wei"]
    )


def test_senses_that_are_not_meanings_are_left_out():
    entry = zh._entry("貓 猫 [mao1] /cat/CL:隻|只[zhi1]/(dialect) to hide oneself/(coll.) modem/\n")
    assert entry == ("猫", "mao1", "cat; to hide oneself; modem", 4)
    assert zh._entry("王 王 [Wang2] /surname Wang/\n")[2] == ""
    assert zh._entry("# CC-CEDICT\n") is None
    assert zh._entry("not a line of the dictionary\n") is None
    # A sense's first alternatives, up to GLOSS_WORDS words.
    assert zh._shortened("to speak; to talk; to say") == "to speak"
    assert zh._shortened("I; me; my") == "I; me; my"
    assert zh._shortened("(completed action marker)") == ""


def test_a_character_reads_as_its_main_entry():
    words, _ = zh._dictionary()
    assert words["看"].startswith("to see")  # kan4 (12 senses), not kan1 "to look after" (4)
    assert words["累"].startswith("tired")
    assert words["李"] == "plum"  # the entry with a meaning, not "surname Li"


def test_traditional_reads_as_simplified():
    assert gloss("我養了一隻貓，叫咪咪。") == gloss("我养了一只猫，叫咪咪。")
    assert gloss("張偉：我們去電影院。") == gloss("张伟：我们去电影院。")


def test_full_width_punctuation_and_digits_read_as_ascii():
    assert gloss("王芳：５月４日（周四）") == gloss("王芳:5月4日(周四)")


def test_a_phrase_the_dictionary_lacks_is_read_as_its_words():
    # jieba keeps 看了 as one word; CC-CEDICT has 看 and 了 alone.
    assert gloss("看了") == f"{zh._dictionary()[0]['看']} {zh._dictionary()[0]['了']}"


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60))
def test_any_text_glosses_to_text_without_known_han(text):
    said = gloss(text)
    assert said == gloss(text)  # the same every time: the stored vector and the query's agree
    if glossed(text):
        # Only a character the dictionary has no entry for is left as written.
        words, _ = zh._dictionary()
        assert not [c for run in HAN_RUN.findall(said) for c in run if c in words]
    else:
        assert said == text


@given(st.text(alphabet="的了是我你他王李张猫狗看累好工作老师北京上海一二三。，？ab 1", max_size=40))
def test_chinese_text_glosses_to_text_without_han(text):
    assert not HAN_RUN.search(gloss(text))


def test_a_change_of_gloss_alone_is_told_apart():
    model = "all-MiniLM-L6-v2-onnx-int8+int8-dynamic-per-channel-matmul-v1"
    assert gloss_changed_only(model, model + GLOSS_VERSION)
    assert gloss_changed_only(model + GLOSS_VERSION, model)
    assert gloss_changed_only(model + "+zh-gloss-0", model + GLOSS_VERSION)
    assert not gloss_changed_only(model, model)
    assert not gloss_changed_only(model + GLOSS_VERSION, "onnx:tiny")
    assert not gloss_changed_only("all-MiniLM-L6-v2-onnx-int8" + GLOSS_VERSION, model + GLOSS_VERSION)
    # Re-embedded then: every text holding Han characters, also a Japanese line (its speaker's
    # name is glossed for the lean) and nothing else.
    assert glosses("王芳：我是老师") and glosses("田中：こんにちは") and not glosses("Alice: hi")


class Model:
    def __init__(self, reads_cjk: bool, reads_han: bool):
        self.reads_cjk, self.reads_han = reads_cjk, reads_han


@pytest.mark.parametrize(
    ("model", "query", "read"),
    [
        (Model(False, False), "What does Wang Fang do?", True),
        (Model(False, False), "王芳是做什么工作的？", False),
        (Model(False, True), "王芳是做什么工作的？", True),
        (Model(False, True), "Wang Fang 是老师吗", True),
        (Model(False, True), "ラーメンはどこ？", False),
        (Model(False, True), "김치찌개", False),
        (Model(True, False), "ラーメンはどこ？", True),
    ],
)
def test_the_semantic_weight_follows_what_the_model_reads(model, query, read):
    assert reads(model, query) is read
