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

So the dictionary step is run here (jieba's own code, ~2 us a character), each buffer's pairs are
counted before the model sees it (Budget), and a buffer the call's allowance cannot pay for is
left to the dictionary's reading, which names nobody. One allowance covers a whole request (a
retain's items, an extraction's facts): many short texts cannot each take a fresh one. Within it
the names are exactly those jieba.posseg.cut finds over the whole text.

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

from .cjk import HAN_RUN

# jieba's tags for names: person (nr, nrfg, nrt), place (ns), organisation (nt); others (nz) are
# too loose to be worth an entity.
_KINDS = {"nr": "person", "nrfg": "person", "nrt": "person", "ns": "place", "nt": "organization"}
# Days of the week jieba tags as names when a step precedes them (上周三 "last Wednesday").
_WEEKDAY_WORD = re.compile("[上下这本]?个?(?:周|星期|礼拜)[一二三四五六日天末]")

# The model's allowance in state pairs: per request, and per character of the request's text.
# Prose needs 2-173 a character (bench/README.md, "Chinese names: the tagger's cost bounded");
# 300 a character is at most ~90 us of model time, the floor ~30 ms.
PAIRS_FLOOR = 100_000
PAIRS_PER_CHAR = 300


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
    except (ImportError, OSError):
        return {}
    table = {}
    for line in lines:
        traditional, _, simplified = line.partition("\t")
        simplified = simplified.split(" ")[0]
        if len(traditional) == len(simplified) == 1 and traditional not in states and simplified in states:
            table[ord(traditional)] = simplified
    return table


def _pairs(buffer: str) -> int:
    """The state pairs the model's Viterbi step tries over `buffer` at most: each Han character's
    states times its predecessor's (a letter or digit is split out before the model)."""
    states, every = _tagger().char_state_tab_P, 256
    total = prev = 0
    for c in buffer:
        n = len(states.get(c, ())) or (every if HAN_RUN.match(c) else 0)
        total += n * prev if prev else n
        prev = n
    return total


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
                kind = _KINDS.get(flag)
                name = block[at : at + len(word)]
                if kind and len(name) > 1 and HAN_RUN.fullmatch(name) and not _WEEKDAY_WORD.fullmatch(word):
                    found.setdefault(name, kind)
    return list(found.items())
