"""Who says a memory: a chat line opens with its speaker's name and a colon ("Caroline: I went
...", "李伟：我...").

Recall leans such a memory's vector toward its speaker's name (engine/memory/vectors.py): the
embedding model averages over every token, so the name said once at the start of a long turn
weighs little, and a question about that person ranked their long turns below short ones that
are mostly the name.
"""

from __future__ import annotations

import re

# One to four words of letters (a name, "Mary Anne", "Jean-Luc", "O'Brien") or a run of CJK
# characters, then a colon (or a full-width one), then the line.
_SPEAKER = re.compile(
    r"^\s*((?:[^\W\d_][^\W\d_'’\-]*)(?:[ '’\-][^\W\d_][^\W\d_'’\-]*){0,3})\s*[:：]\s*(.*)",
    re.S,
)
_LETTER = re.compile(r"[^\W\d_]")
_MAX_CHARS = 40
# Labels that open a line the way a name does, but say what kind of line it is.
_LABELS = frozenset(
    """
    note notes todo fixme update summary question answer q a re fwd subject tip reminder warning
    error info debug action decision result results status context task goal agenda title topic
    user assistant system human ai bot time date location place from to cc
    """.split()
)


def speaker_of(text: str) -> str | None:
    """The name a chat line opens with, or None: in cased scripts every word capitalised (a word in
    lower case before a colon is a label, "note: ..."), not a known label (Note, TODO, Q), and
    words said after it ("Time: 10:30" says none)."""
    m = _SPEAKER.match(text[: _MAX_CHARS + 8])  # a name and its colon open the line
    if m is None or not _LETTER.search(m.group(2) or text[m.end(1) :]):
        return None
    name = m.group(1)
    if len(name) > _MAX_CHARS or name.lower() in _LABELS:
        return None
    for word in re.split(r"[ \-]", name):
        if word and word[0].lower() != word[0].upper() and not word[0].isupper():
            return None  # a cased script in lower case: a label or a phrase, not a name
    return name
