"""What a recall can say about its ranking (`trace`): the weights it used and, for each result,
the score of every part (engine/search/fusion.py) and which arms found it, so that a user can see
why a memory came back and recompute its score."""

from __future__ import annotations

from collections.abc import Hashable, Sequence

from pydantic import BaseModel, Field

from hindsight.engine.search.fusion import Ranked, Weights


class ResultTrace(BaseModel):
    id: str
    arms: list[str] = Field(
        description="The arms whose hits held it (semantic, keyword, temporal); neighbour: read as the memory "
        "beside a hit."
    )
    semantic: float = Field(description="Cosine similarity of its vector to the query's.")
    keyword: float = Field(description="The summed rarity (BM25 idf) in the bank of the query words it holds.")
    time: float | None = Field(
        None, description="1 inside the time window the query names, 0 outside; null: the query names none."
    )
    base: float = Field(
        description="Its own score: semantic x weights.semantic + keyword / keyword_best x weights.keyword "
        "+ time x weights.time."
    )
    neighbour: float | None = Field(
        None, description="The better base of the memories just before and after it in its source (null: not counted)."
    )
    source: float | None = Field(
        None, description="The best base in its source, a conversation's session or a document (null: not counted)."
    )
    score: float = Field(
        description="What results are ranked by: base + neighbour x weights.neighbour + source x weights.source."
    )


class RecallTrace(BaseModel):
    weights: dict[str, float] = Field(description="How much each part counted in this recall.")
    keyword_best: float = Field(description="The best keyword score among the memories ranked.")
    results: list[ResultTrace] = Field(description="One per result, in the same order.")


def recall_trace(
    w: Weights, ranked: Sequence[Ranked], arms: dict[Hashable, list[str]], keyword_best: float
) -> RecallTrace:
    """The trace of the results `ranked`, in their order, each with the arms that found it."""
    weights = {"semantic": w.semantic, "keyword": w.keyword, "time": w.time}
    if w.context:
        weights |= {"neighbour": w.neighbour, "source": w.source}
    return RecallTrace(
        weights=weights,
        keyword_best=_r(keyword_best),
        results=[
            ResultTrace(
                id=str(r.id),
                arms=arms[r.id],
                semantic=_r(r.semantic),
                keyword=_r(r.keyword),
                time=r.time,
                base=_r(r.base),
                neighbour=None if r.neighbour is None else _r(r.neighbour),
                source=None if r.source is None else _r(r.source),
                score=_r(r.score),
            )
            for r in ranked
        ],
    )


def _r(x: float) -> float:
    return round(float(x), 6)
