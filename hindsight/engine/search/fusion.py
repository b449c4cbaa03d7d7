"""How recall ranks the arms' hits and their neighbours: score-level fusion of what each arm
measures, then the context of each memory in its source (a conversation's session, a document).
The weights live here; the statement that ranks by them is recall_ranked (hindsight/sql/recall.sql),
which scores, ranks and cuts in one round trip (engine/search/details.py).

A memory's own score (`base`) adds SEMANTIC times its cosine similarity to the query, KEYWORD times
its keyword score as a share of the best keyword score among the rows (the summed rarity of the
query words it holds), and TIME when it falls in a time window the query names. Its rank score then
adds NEIGHBOUR times the better base of the memories just before and after it in its source (in a
conversation the answer is often the turn after the question) and SOURCE times the best base in
its source (a session that holds a strong match is where the rest of the answer is), among the
rows ranked: the hits, and the memories beside the best of them (the leads). Raw scores,
not ranks: a rank gives the same credit for being third by a hair as third by a mile. The weights
and what each part gains are in bench/README.md, "Recall that finds what matters". Of equal
scores, the memory holding more distinct words goes first (a longer turn with the same query words
says more: the keyword arm's own rule), then the lower id, which sorts in the order memories were
retained (engine/memory/ids.py): the same bank and query rank the same way every time.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass

# Each arm hands fusion its best ARM_LIMIT hits.
ARM_LIMIT = 60
# The memories beside the leads are read and ranked with the hits: the best CONTEXT_LEADS hits by
# their own score and the best KEYWORD_LEADS by keyword score alone (a rare word the memory holds,
# where many memories much like the query crowd the first); the rest of the hits still gain from
# any lead beside them. Beside all ~120 hits the ranking read twice the rows for the same evidence
# recall (bench/README.md, "Neighbours of the best hits").
CONTEXT_LEADS = 15
KEYWORD_LEADS = 5

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


def candidates(hits: dict[str, Sequence]) -> tuple[list, dict[Hashable, list[str]]]:
    """The ids the arms found, each once in the order first found (arms in the order given), and
    which arms found each."""
    found_by: dict[Hashable, list[str]] = {}
    for arm, ids in hits.items():
        for mid in ids:
            found_by.setdefault(mid, []).append(arm)
    return list(found_by), found_by
