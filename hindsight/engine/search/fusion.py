"""The arms' hits and their neighbours ranked by one score: score-level fusion of what each arm
measures, then the context of each memory in its source (a conversation's session, a document).

A memory's own score (`base`) adds its cosine similarity to the query, its keyword score as a
share of the best keyword score among the rows (the summed rarity of the query words it holds),
and TIME when it falls in a time window the query names. Its rank score then adds NEIGHBOUR times
the better base of the memories just before and after it in its source (in a conversation the
answer is often the turn after the question) and SOURCE times the best base in its source (a
session that holds a strong match is where the rest of the answer is). Raw scores, not ranks: a
rank gives the same credit for being third by a hair as third by a mile. The weights and what each part gains are in bench/README.md, "Recall that finds what
matters". Of equal scores, the memory holding more distinct words goes first (a longer turn with
the same query words says more: the keyword arm's own rule), then the lower id, which sorts in the
order memories were retained (engine/memory/ids.py): the same bank and query rank the same way
every time.

Pure functions: recall.py reads the rows (details.py) and cuts the ranking to the caller's limits.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass

# Each arm hands fusion its best ARM_LIMIT hits.
ARM_LIMIT = 60

SEMANTIC = 1.0
KEYWORD = 0.15
TIME = 0.15
NEIGHBOUR = 0.3
SOURCE = 0.4
# The semantic weight for a query in a script the embedding model does not read (Japanese or
# Korean with the English MiniLM; Chinese too when the gloss is off, recall.reads): its
# similarities there are mostly noise, and at full weight they outranked the keyword arm's exact
# matches.
SEMANTIC_UNREAD = 0.25


@dataclass(frozen=True, slots=True)
class Weights:
    """How much each part of a memory's score counts; `context` off ranks by base alone (the
    single-arm modes, vector and keyword)."""

    semantic: float = SEMANTIC
    keyword: float = KEYWORD
    time: float = TIME
    neighbour: float = NEIGHBOUR
    source: float = SOURCE
    context: bool = True


@dataclass(frozen=True, slots=True)
class Row:
    """What ranking needs of one memory (recall_scores): its place in its source, its similarity
    to the query, its keyword score (0 when it holds no query word), whether it falls in the
    query's time window (None when the query names none) and how many distinct words it holds."""

    id: Hashable
    source_id: str
    position: int
    similarity: float
    keyword: float
    in_window: bool | None
    terms: int = 0


@dataclass(frozen=True, slots=True)
class Ranked:
    """One memory's scores: its own (`base`), the context it gained (`neighbour`: the best base
    of the adjacent memories; `source`: the best base in its source; None when not counted) and
    the `score` it is ranked by."""

    id: Hashable
    semantic: float
    keyword: float
    time: float | None
    base: float
    neighbour: float | None
    source: float | None
    score: float


def weights_for(mode: str, reads_query: bool) -> Weights:
    """The weights of a recall in `mode`: in hybrid mode every part, the semantic one lowered when
    the model does not read the query's script (`reads_query`); vector and keyword rank by that
    arm's own score."""
    if mode == "vector":
        return Weights(semantic=1.0, keyword=0.0, time=0.0, context=False)
    if mode == "keyword":
        return Weights(semantic=0.0, keyword=1.0, time=0.0, context=False)
    return Weights() if reads_query else Weights(semantic=SEMANTIC_UNREAD)


def rank(rows: Iterable[Row], w: Weights) -> list[Ranked]:
    """`rows` scored and in rank order: best score first, then more distinct words, then id."""
    rows = list(rows)
    if not rows:
        return []
    best_keyword = max(r.keyword for r in rows)
    scale = w.keyword / best_keyword if best_keyword > 0 else 0.0
    base = {r.id: w.semantic * r.similarity + scale * r.keyword + (w.time if r.in_window else 0.0) for r in rows}
    at: dict[tuple[str, int], float] = {}
    best_in_source: dict[str, float] = {}
    for r in rows:
        at[(r.source_id, r.position)] = base[r.id]
        best_in_source[r.source_id] = max(best_in_source.get(r.source_id, base[r.id]), base[r.id])
    out = []
    for r in rows:
        b = base[r.id]
        neighbour = source = None
        score = b
        if w.context:
            beside = [at[k] for k in ((r.source_id, r.position - 1), (r.source_id, r.position + 1)) if k in at]
            neighbour = max(beside) if beside else 0.0
            source = best_in_source[r.source_id]
            score = b + w.neighbour * neighbour + w.source * source
        time = None if r.in_window is None else float(r.in_window)
        out.append(Ranked(r.id, r.similarity, r.keyword, time, b, neighbour, source, score))
    terms = {r.id: r.terms for r in rows}
    out.sort(key=lambda x: (-x.score, -terms[x.id], x.id))
    return out


def candidates(hits: dict[str, Sequence]) -> tuple[list, dict[Hashable, list[str]]]:
    """The ids the arms found, each once in the order first found (arms in the order given), and
    which arms found each."""
    found_by: dict[Hashable, list[str]] = {}
    for arm, ids in hits.items():
        for mid in ids:
            found_by.setdefault(mid, []).append(arm)
    return list(found_by), found_by
