"""Chinese, Japanese and Korean text for the recall arms, which were written for words between
spaces.

- Keyword arm: a run of CJK characters is indexed as its characters and overlapping character
  pairs (migration 010, the SQL function cjk_grams); a query is split the same way here, so
  `上周三去了黄山` finds a memory holding 黄山 whatever stands around it. Pairs that only make
  questions (什么, 哪里) are left out of the query.
- Entity arm: Chinese person, place and organisation names are found with jieba's part-of-speech
  tagger (its dictionary is loaded the first time Chinese text comes, about a second and ~130 MB,
  never for text without it). A query's candidates are its runs' substrings of two to four
  characters, which the entity arm looks up like English n-grams.
Japanese and Korean get the keyword arm; their names are not tagged (jieba reads Chinese only).
"""

from __future__ import annotations

import functools
import logging
import re
import time

# Hiragana and katakana, CJK extension A, unified ideographs, compatibility ideographs, Hangul
# syllables: the same ranges as migration 010's cjk_grams.
CJK_RUN = re.compile("[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\uac00-\ud7af]+")
HAN_RUN = re.compile("[\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff]+")
# Character pairs that ask rather than say: never worth matching in a memory. Any pair holding a
# question character (what, who, the question particles), and these.
QUESTION_CHARS = frozenset("什么谁吗呢")
QUESTION_GRAMS = frozenset("哪里 哪儿 哪个 哪些 哪部 哪家 哪天 怎样 为何 时候 多少 是否 有没 没有".split())
# jieba's tags for names: person (nr, nrfg, nrt), place (ns), organisation (nt); others (nz) are
# too loose to be worth an entity.
_KINDS = {"nr": "person", "nrfg": "person", "nrt": "person", "ns": "place", "nt": "organization"}

# Days of the week jieba tags as names when a step precedes them (上周三 "last Wednesday").
_WEEKDAY_WORD = re.compile("[上下这本]?个?(?:周|星期|礼拜)[一二三四五六日天末]")


# Characters the tagger's model never saw that a text may keep; the rest become spaces (_bounded).
UNSEEN_KEPT = 4
# The tagger's work on one text (chinese_names): the longest block handed to it at once, and the
# thread CPU after which its hidden Markov model is left out (prose takes ~17 us a character).
PIECE_CHARS = 64
TAG_CPU_SECONDS = 0.02
TAG_CPU_PER_CHAR = 50e-6


@functools.cache
def _tagger():
    """jieba's part-of-speech tagger, imported the first time Chinese text comes: importing it
    costs ~70 MB of memory (its probability tables), which a server that never sees Chinese
    should not pay (imported here rather than at the top for that reason alone)."""
    import jieba
    import jieba.posseg

    jieba.setLogLevel(logging.WARNING)  # it announces its dictionary on stderr at INFO
    return jieba.posseg


@functools.cache
def _unseen() -> re.Pattern[str]:
    """The Han characters (in the range jieba's tagger reads as Chinese) that its hidden Markov
    model has no states for. For each of them its Viterbi step tries every state against every
    state: ~6 ms a character in pure Python, holding the GIL, where prose costs ~17 us. 1,200
    random Han characters took 2.9 s to tag, an item of max_content_chars minutes. Prose has few
    such characters (the model's table holds the 6,648 of its training text), and the dictionary
    names holding one are 212 of 349,045, mostly idioms tagged as names."""
    known = _tagger().char_state_tab_P
    return re.compile("[" + "".join(chr(c) for c in range(0x4E00, 0x9FD6) if chr(c) not in known) + "]")


def has_cjk(text: str) -> bool:
    return CJK_RUN.search(text) is not None


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


def entity_candidates(text: str) -> list[str]:
    """What in a query may be a CJK name: every substring of two to four characters of each run
    (the entity arm keeps those that are entities of the bank)."""
    out: set[str] = set()
    for run in CJK_RUN.findall(text):
        for n in (2, 3, 4):
            out.update(run[i : i + n] for i in range(len(run) - n + 1))
    return sorted(out)


def _bounded(text: str) -> str:
    """`text` with the characters the tagger's model never saw kept up to UNSEEN_KEPT and the
    rest made spaces, which end a word: a name with a rare character in ordinary text is still
    found, and random Han text is tagged at the cost of prose."""
    spans = [m.start() for m in _unseen().finditer(text)]
    if len(spans) <= UNSEEN_KEPT:
        return text
    chars = list(text)
    for i in spans[UNSEEN_KEPT:]:
        chars[i] = " "
    return "".join(chars)


def chinese_names(text: str) -> list[tuple[str, str]]:
    """[(name, kind)] of the Chinese names in `text`, in order of first mention.

    The text is tagged a block of at most PIECE_CHARS at a time (the tagger's blocks are runs of
    Han characters and letters; the hard cut only falls inside a run without punctuation), with
    the tagger's hidden Markov model (which finds the people the dictionary lacks) until the text
    has taken its CPU budget; the rest is tagged from the dictionary alone (~3 us a character).
    Characters with the most states in a chosen order reach ~270 us a character under the model,
    16 times prose; with the budget no text costs more than ~80 us a character, and prose stays
    well inside it and is tagged as before."""
    if HAN_RUN.search(text) is None:
        return []
    tagger = _tagger()
    found: dict[str, str] = {}
    hmm = True
    start = time.thread_time()
    budget = TAG_CPU_SECONDS + TAG_CPU_PER_CHAR * len(text)
    for block in tagger.re_han_internal.finditer(_bounded(text)):
        run = block.group()
        if HAN_RUN.search(run) is None:
            continue
        for i in range(0, len(run), PIECE_CHARS):
            for pair in tagger.cut(run[i : i + PIECE_CHARS], HMM=hmm):
                kind = _KINDS.get(pair.flag)
                if kind is None or len(pair.word) < 2 or _WEEKDAY_WORD.fullmatch(pair.word):
                    continue
                if HAN_RUN.fullmatch(pair.word):
                    found.setdefault(pair.word, kind)
            hmm = hmm and time.thread_time() - start < budget
    return list(found.items())
