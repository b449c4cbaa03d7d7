"""Search modes and the relevance threshold shared by recall and document search.

Ranking and thresholding use different numbers on purpose. Results are *ordered* by reciprocal
rank fusion over the arms (robust across arms whose raw scores are not comparable); each result
also carries a *relevance* in 0..1 that means the same thing in every query, so a threshold can be
set once: the cosine similarity to the query for `vector`, the share of the query's content words
the text contains for `keyword`, and 0.7 x similarity + 0.3 x word share for `hybrid`.
`strictness` 0-5 picks a threshold from STRICTNESS; `min_score` sets it directly.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Literal

from pydantic import ConfigDict, Field, model_validator

from hindsight.engine.rules.text import Strict

Mode = Literal["hybrid", "vector", "keyword"]
STRICTNESS = {0: 0.0, 1: 0.2, 2: 0.3, 3: 0.4, 4: 0.5, 5: 0.6}
WEIGHTS = {"hybrid": (0.7, 0.3), "vector": (1.0, 0.0), "keyword": (0.0, 1.0)}
MAX_TOP_K = 50


class SearchOptions(Strict):
    """Options every search takes; a model of its own so recall, document search and the
    collection aliases validate them identically."""

    model_config = ConfigDict(extra="forbid")

    mode: Mode = Field(
        "hybrid", description="hybrid (all arms, fused), vector (semantic only) or keyword (full text only)."
    )
    top_k: int | None = Field(None, ge=1, le=MAX_TOP_K, description="At most this many results (1-50).")
    strictness: int | None = Field(
        None, ge=0, le=5, description="Relevance threshold 0-5 (0: none; 1: 0.2 ... 5: 0.6)."
    )
    min_score: float | None = Field(None, ge=0.0, le=1.0, description="Relevance threshold 0-1; instead of strictness.")
    filter: str | None = Field(
        None, max_length=2_000, description='Filter expression, e.g. tags contains "work" and type = "world".'
    )

    @model_validator(mode="after")
    def _one_threshold(self):
        if self.strictness is not None and self.min_score is not None:
            raise ValueError("give strictness or min_score, not both")
        return self

    def threshold(self, default_strictness: int = 0) -> float:
        if self.min_score is not None:
            return self.min_score
        return STRICTNESS[self.strictness if self.strictness is not None else default_strictness]


def relevance_sql(
    mode: str, embedding: str, tsv: str, bind: Callable[..., str], vectors: list, phrases: list[str]
) -> str:
    """SQL for a row's relevance, its values bound with `bind` (engine/binder.Binder): the best
    similarity over the query vectors and the best word share over the phrases. Words are the
    phrase's own lexemes from PostgreSQL's parser (the one that indexed the text), so codes such
    as "ERR-4012" and stemmed forms match exactly as the full-text index sees them."""
    w_sim, w_kw = WEIGHTS[mode]
    parts = []
    if w_sim:
        sims = ", ".join(f"1 - ({embedding} <=> {bind(v)})" for v in vectors)
        # Cosine similarity can be negative (unrelated texts); relevance is documented as 0..1.
        parts.append(f"{w_sim} * greatest(0, {sims})")
    if w_kw:
        parts.append(f"{w_kw} * {word_share_sql(tsv, bind, phrases)}")
    return " + ".join(parts)


def word_share_sql(tsv: str, bind: Callable[..., str], phrases: list[str]) -> str:
    """SQL for the best share, over the phrases, of a phrase's lexemes that the row's `tsv` holds
    (0 without phrases)."""
    if not phrases:
        return "0"
    p = bind(list(phrases))
    # A phrase's lexemes are parsed once per statement (uncorrelated sub-selects run as init
    # plans), not once per row. The share is counted with ts_delete: the lexemes a row holds are
    # those deleting them removes. A per-row sub-select matching each lexeme as a tsquery gave
    # the same figures and cost more (bench/README.md, "Recall's PostgreSQL statements").
    shares = []
    for i in range(1, len(phrases) + 1):
        lex = f"(SELECT tsvector_to_array(to_tsvector('english', ({p}::text[])[{i}])))"
        shares.append(f"(length({tsv}) - length(ts_delete({tsv}, {lex})))::float8 / greatest(1, cardinality({lex}))")
    return f"greatest({', '.join(shares)})"


def relevance_from(mode: str, similarity: float, share: float) -> float:
    """A row's relevance (as relevance_sql would give it) from its similarity and word share,
    read once for ranking as well."""
    w_sim, w_kw = WEIGHTS[mode]
    return relevance_of(w_sim * max(0.0, similarity) + w_kw * share)


def relevance_of(value: float) -> float:
    """A row's relevance as results carry it. A stored vector of zeros (an import can hold one)
    has no direction: its cosine distance to any query is NaN, which JSON cannot carry, so it
    counts as no similarity."""
    x = float(value)
    return round(x, 4) if math.isfinite(x) else 0.0
