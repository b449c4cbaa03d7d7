"""Chinese person, place and organisation names, found with jieba's part-of-speech tagger, at a
cost bounded by the text's length whatever the text.

jieba reads a run of Han characters in two steps: its dictionary's most likely segmentation, then
a hidden Markov model over each run of two or more single characters the dictionary could not
join (a "buffer": most often a name it lacks, such as 王小明). That model is pure Python and holds
the GIL: its Viterbi step tries each of a character's states against each of its predecessor's,
~0.3 us a pair. Prose hands it ~50-100 pairs a character (~20-40 us all told), but a character the
model has no states for (anything outside the 6,648 of its training text) has all 256, so random
Han text cost ~2.4 ms a character (an item of max_content_chars, four minutes), Traditional
Chinese ~1 ms, and the characters with the most states in a chosen order ~0.3-0.7 ms.

So the dictionary step is run here (jieba's own code, ~2 us a character), each buffer's work is
counted exactly before the model sees it (_pairs), and a buffer the request's allowance (Budget)
cannot pay for is left to the dictionary's reading, which names nobody. One allowance covers a
whole request (a retain's items, an extraction's facts): many short texts cannot each take a
fresh one. Within it the names are exactly those jieba.posseg.cut finds over the whole text.

Traditional Chinese is read through its Simplified characters: jieba's dictionary and model were
made from Simplified text, and ~40% of a Traditional paragraph's characters (陳, 廣, 灣) have no
states in the model, which made it cost ~1 ms a character and mostly tagged nothing. A character
the model never saw is replaced, for the reading only, by its Simplified form when the model
knows that (OpenCC's character table, one character for one); a name keeps the text's own
characters (陳建華, as written).
"""

from __future__ import annotations

import functools
import logging
import re
from collections.abc import Iterator

from hindsight.language.cjk import HAN_RUN

# jieba's tags for names: person (nr, nrfg, nrt), place (ns), organisation (nt); others (nz) are
# too loose to be worth an entity.
_KINDS = {"nr": "person", "nrfg": "person", "nrt": "person", "ns": "place", "nt": "organization"}
# Days of the week jieba tags as names when a step precedes them (上周三 "last Wednesday").
_WEEKDAY_WORD = re.compile("[上下这本]?个?(?:周|星期|礼拜)[一二三四五六日天末]")

# The model's allowance in counted work (_pairs): per request, and per character of the request's
# text. Prose needs 3-223 a character, dense Traditional Chinese ~290 (bench/README.md, "Chinese
# names: the tagger's cost bounded"); text built to spend it all costs ~70-125 us a character.
PAIRS_FLOOR = 100_000
PAIRS_PER_CHAR = 400


class Budget:
    """The state pairs the tagger's model may still try for one request."""

    def __init__(self, chars: int) -> None:
        self.left = PAIRS_FLOOR + PAIRS_PER_CHAR * chars

    def spend(self, pairs: int) -> bool:
        if pairs > self.left:
            return False
        self.left -= pairs
        return True


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
def _simplified() -> dict[int, str]:
    """str.translate's table: each Traditional character the model has no states for, to its
    Simplified form where the model has states for that (OpenCC's TSCharacters, first reading).
    Empty if the table is not there (another package named opencc installed in its place)."""
    from importlib.resources import files

    states = _tagger().char_state_tab_P
    try:
        lines = files("opencc").joinpath("dictionary/TSCharacters.txt").read_text("utf-8").splitlines()
    except Exception:  # noqa: BLE001 - a module of that name that is not OpenCC's package
        return {}
    table = {}
    for line in lines:
        traditional, _, simplified = line.partition("\t")
        simplified = simplified.split(" ")[0]
        if len(traditional) == len(simplified) == 1 and traditional not in states and simplified in states:
            table[ord(traditional)] = simplified
    return table


# What jieba hands its model: the Han runs of a buffer (posseg's re_han_detail; letters and
# digits between them are tagged without it).
_MODEL_RUN = re.compile("[\u4e00-\u9fd5]+")


def _pairs(buffer: str) -> int:
    """The work jieba's Viterbi step does over `buffer`, counted exactly before it runs: the state
    pairs it tries and the successor sets it builds. Which states it tries does not depend on the
    probabilities, only on the characters: a character's own states that can follow the previous
    ones, or, when none can, every state that can (up to ~160, for a character with one state
    after a chosen one: 年煜 repeated cost ~1.5 ms a character, though each has few states)."""
    states, every = _tagger().char_state_tab_P, _every()
    total = 0
    for run in _MODEL_RUN.findall(buffer):
        current = frozenset(states.get(run[0], every))
        total += len(current)
        for c in run[1:]:
            current, work = _step(current, c)
            total += work
    return total


@functools.cache
def _every() -> frozenset:
    return frozenset(_tagger().trans_P)


@functools.lru_cache(maxsize=65_536)
def _step(current: frozenset, c: str) -> tuple[frozenset, int]:
    """One character of jieba's Viterbi loop (jieba/posseg/viterbi.py), without the numbers: the
    states it will hold after `c`, and the work of getting there."""
    trans, states, every = _tagger().trans_P, _tagger().char_state_tab_P, _every()
    prev = [x for x in current if trans[x]]
    expected = frozenset(y for x in prev for y in trans[x])
    held = frozenset(states.get(c, every)) & expected or expected or every
    return held, len(held) * len(prev) + sum(len(trans[x]) for x in prev)


def _words(block: str) -> Iterator[tuple[int, int, bool]]:
    """(start, end, is_buffer) along the dictionary's segmentation of one block (jieba's own
    route, as its tagger computes it): dictionary words of two or more characters, and the
    buffers the model would read. Single characters, which name nobody, are left out."""
    tokenizer = _tagger().dt.tokenizer
    route: dict = {}
    tokenizer.calc(block, tokenizer.get_DAG(block), route)

    def buffer(start: int, end: int) -> Iterator[tuple[int, int, bool]]:
        if end - start > 1 and not tokenizer.FREQ.get(block[start:end]):
            yield start, end, True

    x = start = 0
    while x < len(block):
        y = route[x][1] + 1
        if y - x > 1:
            yield from buffer(start, x)
            yield x, y, False
            start = y
        x = y
    yield from buffer(start, len(block))


def chinese_names(text: str, budget: Budget | None = None) -> list[tuple[str, str]]:
    """[(name, kind)] of the Chinese names in `text`, in order of first mention; `budget` is the
    request's (one of the text's own length if not given)."""
    if HAN_RUN.search(text) is None:
        return []
    tagger = _tagger()
    tags, budget = tagger.dt.word_tag_tab, budget or Budget(len(text))
    found: dict[str, str] = {}
    for block in tagger.re_han_internal.findall(text):
        if HAN_RUN.search(block) is None:
            continue
        read = block.translate(_simplified())  # as long as the block: positions carry over
        for start, end, buffer in _words(read):
            if not buffer:
                words = [(start, read[start:end], tags.get(read[start:end], "x"))]
            elif budget.spend(_pairs(read[start:end])):
                words, at = [], start
                for p in tagger.cut(read[start:end]):
                    words.append((at, p.word, p.flag))
                    at += len(p.word)
            else:
                continue
            for at, word, flag in words:
                if (kind := _kind(word, flag)) is not None:
                    found.setdefault(block[at : at + len(word)], kind)  # as written, not as read
    return list(found.items())


def _kind(word: str, flag: str) -> str | None:
    """What name `word`, tagged `flag`, is (person, place, organization), or None if none."""
    kind = _KINDS.get(flag)
    if kind and len(word) > 1 and HAN_RUN.fullmatch(word) and not _WEEKDAY_WORD.fullmatch(word):
        return kind
    return None
