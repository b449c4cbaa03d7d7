"""The caller's limits on what recall returns: the cut of the ranked rows to the relevance floor,
top_k and the token budget. Pure functions."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any


def cut(
    rows: Iterable[tuple[Any, float, float]],
    max_tokens: int,
    top_k: int | None,
    floor: float,
    tokens: Callable[[Any], int],
) -> tuple[list[tuple[Any, float, float]], int]:
    """The (row, score, relevance) triples, best first, that pass the relevance `floor`, the first
    `top_k` of them, and of those the first that fit in `max_tokens` together (`tokens`: a row's
    estimate); with their tokens. The cut stops at the first row that does not fit: a shorter one
    after it is not taken, so the results stay in rank order."""
    kept: list[tuple[Any, float, float]] = []
    total = 0
    for row in rows:
        if floor > 0 and row[2] < floor:
            continue
        if top_k is not None and len(kept) >= top_k:
            break
        n = tokens(row[0])
        if total + n > max_tokens:
            break
        kept.append(row)
        total += n
    return kept, total
