"""The arms' ranked hits fused into one order: weighted reciprocal rank fusion.

Each arm adds `weight / (RRF_K + rank + 1)` for every hit; a memory found by several arms adds
up. The keyword arm weighs most: ranking words by rarity was the largest single gain on LoCoMo
(bench/README.md, "Keyword arm: rarity ranking"). Pure functions, no database.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence

# Each arm hands fusion its best ARM_LIMIT hits.
ARM_LIMIT = 60
RRF_K = 20
ARM_WEIGHTS = {"semantic": 1.0, "keyword": 2.0, "entity": 0.6, "temporal": 0.8}


def ranks(hits: Sequence) -> list[tuple[float, Hashable]]:
    """(rank, id) for an arm's hits: their position, or for (id, score) pairs the mean position of
    the hits with that score, so that tied hits rank alike, neither above nor below the others (a
    speaker's name ties all their turns; bench/README.md, "Memory in every language")."""
    if not hits or not isinstance(hits[0], tuple):
        return [(float(i), mid) for i, mid in enumerate(hits)]
    span: dict = {}
    for i, (_, score) in enumerate(hits):
        first, _ = span.get(score, (i, i))
        span[score] = (first, i)
    return [(sum(span[score]) / 2, mid) for mid, score in hits]


def fuse(ranked: Mapping[str, Sequence]) -> tuple[dict, dict[Hashable, list[str]]]:
    """Each memory's fused score, and which arms found it, from each arm's hits in rank order
    (ids, or (id, score) pairs). Arms are read in ARM_WEIGHTS' order, so ties between memories fuse
    the same way whatever order the arms finished in."""
    scores: dict = {}
    found_by: dict[Hashable, list[str]] = {}
    for arm in ARM_WEIGHTS:
        if arm not in ranked:
            continue
        weight = ARM_WEIGHTS[arm]
        for rank, mid in ranks(ranked[arm]):
            scores[mid] = scores.get(mid, 0.0) + weight / (RRF_K + rank + 1)
            found_by.setdefault(mid, []).append(arm)
    return scores, found_by


def best_first(scores: Mapping) -> list:
    """Ids by fused score, best first (ties keep the order they were fused in)."""
    return sorted(scores, key=scores.__getitem__, reverse=True)
