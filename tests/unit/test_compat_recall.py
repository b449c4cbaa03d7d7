"""The Hindsight-compatible recall answer, written in one pass (api/compat/convert.recall_answer),
is exactly what its response model would give: every field, nulls too, metadata as strings."""

from __future__ import annotations

import json
from datetime import UTC, datetime

from hindsight.api.compat import convert
from hindsight.api.compat import schemas as M
from hindsight.engine.memory.schemas import Memory
from hindsight.engine.search.schemas import RecallResult
from hindsight.engine.search.trace import RecallTrace, ResultTrace

MEMORIES = [
    Memory(
        id="m1",
        text="Caroline: I went to a support group.",
        type="experience",
        context="chat",
        mentioned_at=datetime(2023, 5, 8, 13, 56, tzinfo=UTC),
        occurred_start=datetime(2023, 5, 7, tzinfo=UTC),
        occurred_end=datetime(2023, 5, 8, tzinfo=UTC),
        entities=["Caroline"],
        document_id="conv:session_1",
        metadata={"turn_id": "D1:3", "n": 3, "nested": {"a": [1, None]}, "flag": True, "none": None},
        tags=["people"],
        score=1.5,
        relevance=0.4,
        arms=["semantic", "keyword"],
    ),
    Memory(id="m2", text="The lamp was replaced.", type="world", context="general", score=0.9, arms=["neighbour"]),
]


def expected(result: RecallResult) -> dict:
    out = [convert.recall_result(m) for m in result.results]
    trace = None
    if result.trace is not None:
        for r, t in zip(out, result.trace.results):
            r.scores = convert.recall_scores(t)
        trace = result.trace.model_dump() | {"total_tokens": result.total_tokens}
    return M.RecallOut(results=out, trace=trace).model_dump(mode="json")


def test_the_answer_is_the_response_models_with_and_without_trace():
    plain = RecallResult(bank_id="b", query="q", results=MEMORIES, total_tokens=20)
    assert json.loads(convert.recall_answer(plain)) == expected(plain)
    trace = RecallTrace(
        weights={"semantic": 1.0, "keyword": 0.15, "time": 0.15, "neighbour": 0.3, "source": 0.4},
        keyword_best=3.2,
        results=[
            ResultTrace(id="m1", arms=["semantic", "keyword"], semantic=0.6, keyword=3.2, base=0.75, score=1.5),
            ResultTrace(id="m2", arms=["neighbour"], semantic=0.2, keyword=0.0, base=0.2, score=0.9),
        ],
    )
    traced = RecallResult(bank_id="b", query="q", results=MEMORIES, total_tokens=20, trace=trace)
    got = json.loads(convert.recall_answer(traced))
    assert got == expected(traced)
    assert got["results"][0]["scores"] == {"final": 1.5, "reranker": None, "semantic": 0.6, "keyword": 3.2}
    assert got["results"][1]["scores"]["semantic"] is None  # not surfaced by the semantic arm
