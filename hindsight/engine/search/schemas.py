"""What recall takes and gives back."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field, field_validator

from hindsight.engine.memory.schemas import Memory, MemoryType
from hindsight.engine.rules.fields import clean_tags, not_blank
from hindsight.engine.rules.tags import TagsMatch
from hindsight.engine.search.relevance import SearchOptions
from hindsight.engine.search.trace import RecallTrace


class RecallRequest(SearchOptions):
    model_config = ConfigDict(extra="forbid")

    query: str = Field(min_length=1, max_length=4_000, description="Natural language search query.")
    max_tokens: int = Field(
        4096,
        ge=1,
        description="Most tokens of memories to return (the server caps it: HINDSIGHT_API_MAX_RECALL_TOKENS).",
    )
    tags: list[str] | None = Field(None, description="Only memories with these labels (as tags_match says).")
    tags_match: TagsMatch = Field(
        "any",
        description="any / all (untagged memories too), any_strict / all_strict "
        "(tagged only), exact (the same tag set).",
    )
    types: list[MemoryType] | None = Field(None, description="Only world facts or experiences.")
    query_timestamp: datetime | None = Field(
        None, description='ISO 8601 time that relative times in the query ("last May") are resolved against.'
    )
    as_of: datetime | None = Field(
        None,
        description="ISO 8601 time: recall what was true then (memories valid at that time, superseded ones "
        "included if they were still true); default: what is true now.",
    )
    include_superseded: bool = Field(
        False, description="Also memories a newer one superseded (each says superseded_by and valid_to)."
    )
    trace: bool = Field(
        False,
        description="Also say why each result came back: its score from each arm, its context and the score it is "
        "ranked by (trace).",
    )

    _tags = field_validator("tags", mode="before")(clean_tags)

    _query = field_validator("query")(lambda v: not_blank(v, "query"))


class RecallResult(BaseModel):
    bank_id: str
    query: str
    results: list[Memory]
    total_tokens: int
    trace: RecallTrace | None = Field(None, description="With trace: each result's scores, in the same order.")
