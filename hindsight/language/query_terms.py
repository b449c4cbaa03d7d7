"""A query read into the terms recall looks up: content words and CJK pairs for the keyword arm."""

from __future__ import annotations

import re
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from hindsight.language import cjk
from hindsight.language.time_expressions import find_time_windows

if TYPE_CHECKING:
    pass


# Words of any alphabet (café, Zoë, Straße, Москва) and numbers; CJK runs are set aside first
# (cjk.py makes their lexemes). ASCII-only, "café" was looked up as "caf" and matched nothing.
_WORD = re.compile(r"[^\W_]+")


_QUERY_STOP = frozenset(
    """
    what when where who whom which why how did does do is are was were the a an of to in on for and
    or with has have had be been at by from about as it its that this there their they he she his
    her him you your i me my we our us can could would should will some any kind
    """.split()
)


def content_words(query: str) -> list[str]:
    """The query's keyword-arm terms: its content words (letters and digits of any alphabet
    written with spaces), and its CJK character pairs (language/cjk.py), each a lexeme of the index
    as it stands. The characters of a CJK date (5月4日, 上周三) are left to the temporal arm: as
    pairs they would match every memory naming any month or weekday."""
    # As written: PostgreSQL lowercases them as it did the index (Python's lower() differs for
    # some letters: "İstanbul", a final "Σ"); compared and deduplicated here in lower case.
    spaced: dict[str, str] = {}
    for w in _WORD.findall(cjk.CJK_RUN.sub(" ", query)):
        low = w.lower()
        if low not in _QUERY_STOP and len(w) > 1:
            spaced.setdefault(low, w)
    latin = list(spaced.values())
    if not cjk.has_cjk(query):
        return latin
    for window in find_time_windows(query, datetime.now(UTC)):
        query = query.replace(window.text, " ")
    return latin + cjk.query_grams(query)
