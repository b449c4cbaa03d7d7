"""Splitting content into memory units and estimating tokens.

Units are bounded so one embedding describes one thing: content is split at paragraph
boundaries first, then sentences, and only a single over-long sentence is cut at whitespace.
"""

from __future__ import annotations

import re

_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[\"'(\[]?[A-Z0-9])")
_PARAGRAPH = re.compile(r"\n\s*\n")


def estimate_tokens(text: str) -> int:
    """About four characters a token for English; cheap enough for the hot path."""
    return tokens_of_chars(len(text))


def tokens_of_chars(chars: int) -> int:
    """estimate_tokens of a text `chars` characters long (recall counts them in the database)."""
    return max(1, (chars + 3) // 4)


def _hard_cut(text: str, limit: int) -> list[str]:
    out, rest = [], text
    while len(rest) > limit:
        cut = rest.rfind(" ", 0, limit)
        cut = cut if cut > limit // 2 else limit
        out.append(rest[:cut].strip())
        rest = rest[cut:].strip()
    if rest:
        out.append(rest)
    return out


def split_units(text: str, limit: int) -> list[str]:
    text = text.strip()
    if len(text) <= limit:
        return [text]
    pieces: list[str] = []
    for para in _PARAGRAPH.split(text):
        para = para.strip()
        if not para:
            continue
        if len(para) <= limit:
            pieces.append(para)
            continue
        for sent in _SENTENCE_END.split(para):
            pieces.extend(_hard_cut(sent.strip(), limit) if len(sent) > limit else [sent.strip()])
    units: list[str] = []
    current = ""
    for piece in pieces:
        if not piece:
            continue
        joined = f"{current}\n\n{piece}" if current else piece
        if len(joined) <= limit:
            current = joined
        else:
            units.append(current)
            current = piece
    if current:
        units.append(current)
    return units
