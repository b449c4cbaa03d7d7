"""The caller's limits on what recall returns: how many fused hits are worth reading, and the cut
of the ranked rows to the relevance floor, top_k and the token budget. Pure functions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from hindsight.text import estimate_tokens

# The rows a token budget can use: the shortest memory estimates to a few tokens, so a budget of
# `max_tokens` never keeps more than max_tokens // 8 hits, plus room for neighbours.
TOKENS_PER_ROW = 8


def rows_worth_reading(found: int, max_tokens: int, neighbours: int) -> int:
    """How many of `found` fused hits to read in full: what `max_tokens` could hold, plus the
    `neighbours` the best hits may bring, at least one."""
    return max(1, min(found, max_tokens // TOKENS_PER_ROW + neighbours))


def cut(
    rows: Iterable[tuple[Any, float, float]],
    max_tokens: int,
    top_k: int | None,
    floor: float,
    text: Callable[[Any], str],
) -> tuple[list[tuple[Any, float, float]], int]:
    """The (row, score, relevance) triples, best first, that pass the relevance `floor`, the first
    `top_k` of them, and of those the first that fit in `max_tokens` together; with their tokens.
    The cut stops at the first row that does not fit: a shorter one after it is not taken, so the
    results stay in rank order."""
    kept: list[tuple[Any, float, float]] = []
    total = 0
    for row in rows:
        if floor > 0 and row[2] < floor:
            continue
        if top_k is not None and len(kept) >= top_k:
            break
        tokens = estimate_tokens(text(row[0]))
        if total + tokens > max_tokens:
            break
        kept.append(row)
        total += tokens
    return kept, total
