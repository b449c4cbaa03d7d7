"""Chinese, Japanese and Korean text for the recall arms, which were written for words between
spaces.

- Keyword arm: a run of CJK characters is indexed as its characters and overlapping character
  pairs (migration 010, the SQL function cjk_grams); a query is split the same way here, so
  `上周三去了黄山` finds a memory holding 黄山 whatever stands around it. Pairs that only make
  questions (什么, 哪里) are left out of the query.
- Entities: Chinese person, place and organisation names are found with jieba's part-of-speech
  tagger (language/chinese_names.py).
Japanese and Korean get the keyword arm; their names are not tagged (jieba reads Chinese only).
"""

from __future__ import annotations

import re

# Hiragana and katakana, CJK extension A, unified ideographs, compatibility ideographs, Hangul
# syllables: the same ranges as migration 010's cjk_grams.
CJK_RUN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
HAN_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
KANA = re.compile("[\u3040-\u30ff]")
# Character pairs that ask rather than say: never worth matching in a memory. Any pair holding a
# question character (what, who, the question particles), and these.
QUESTION_CHARS = frozenset("什么谁吗呢")
QUESTION_GRAMS = frozenset("哪里 哪儿 哪个 哪些 哪部 哪家 哪天 怎样 为何 时候 多少 是否 有没 没有".split())


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


def has_cjk_beyond_han(text: str) -> bool:
    """Whether `text` holds kana or hangul (CJK that is not Han characters)."""
    return has_cjk(HAN_RUN.sub("", text))


def query_grams(text: str) -> list[str]:
    """The query's CJK lexemes as the index holds them: each run's character pairs (a lone
    character when the run is one), question pairs left out."""
    grams: list[str] = []
    for run in CJK_RUN.findall(text):
        if len(run) == 1 and run not in QUESTION_CHARS:
            grams.append(run)
        pairs = (run[i : i + 2] for i in range(len(run) - 1))
        grams += [p for p in pairs if p not in QUESTION_GRAMS and not QUESTION_CHARS.intersection(p)]
    return list(dict.fromkeys(grams))
