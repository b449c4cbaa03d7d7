"""memories.to_memory builds a Memory without pydantic's constructor: it must be the very Memory
that validating the same values gives, in every field, in what is serialised, and in which fields
count as set."""

from __future__ import annotations

import json
import uuid
from datetime import UTC, datetime, timedelta

import pytest

from hindsight.engine.memory.records import TOO_DEEP, memory_values, to_memory
from hindsight.engine.memory.schemas import Memory
from hindsight.engine.search.schemas import RecallResult

NOW = datetime(2024, 5, 7, 12, 30, tzinfo=UTC)


def row(**changes):
    """One row as asyncpg returns COLUMNS (uuids as UUID, metadata as JSON text, arrays as lists)."""
    r = {
        "id": uuid.uuid4(),
        "text": "Caroline: I went to a LGBTQ support group yesterday.",
        "kind": "experience",
        "context": "general",
        "occurred_start": NOW - timedelta(days=1),
        "occurred_end": NOW,
        "mentioned_at": NOW,
        "entities": ["Caroline", "LGBTQ"],
        "document_id": "conv-26:session_1",
        "metadata": json.dumps({"turn_id": "D1:3", "nested": {"k": [1, 2.5, None]}}),
        "tags": ["user:caroline"],
        "created_at": NOW,
        "superseded": False,
        "valid_from": NOW - timedelta(days=1),
        "valid_to": None,
        "superseded_by": None,
        "invalidated_at": None,
        "invalidation_reason": None,
        "source_id": uuid.uuid4(),
        "position": 3,
    }
    r.update(changes)
    return r


def validated(r, **extra) -> Memory:
    return Memory.model_validate({**memory_values(r), **extra})


ROWS = [
    row(),
    row(
        superseded=True,
        superseded_by=uuid.uuid4(),
        valid_to=NOW,
        invalidated_at=NOW,
        invalidation_reason="wrong",
        document_id=None,
        occurred_start=None,
        occurred_end=None,
        mentioned_at=None,
        entities=[],
        tags=[],
        metadata="{}",
        text="名前は田中です \U0001f600",
    ),
]


@pytest.mark.parametrize("r", ROWS)
def test_a_plain_row_is_the_validated_memory(r):
    fast, slow = to_memory(r), validated(r)
    assert fast == slow
    assert fast.model_dump_json() == slow.model_dump_json()
    assert fast.model_dump(exclude_unset=True) == slow.model_dump(exclude_unset=True)
    assert fast.model_fields_set == slow.model_fields_set
    assert set(vars(fast)) == set(Memory.model_fields)  # a field added to Memory must be filled here


@pytest.mark.parametrize("r", ROWS)
def test_a_ranked_row_is_the_validated_memory(r):
    extra = {"score": 0.0417, "arms": ["keyword", "semantic"], "relevance": 0.8125}
    fast, slow = to_memory(r, **extra), validated(r, **extra)
    assert fast == slow
    assert fast.model_fields_set == slow.model_fields_set
    result = RecallResult(bank_id="b", query="q", results=[fast], total_tokens=12)
    assert (
        result.model_dump_json()
        == RecallResult(bank_id="b", query="q", results=[slow], total_tokens=12).model_dump_json()
    )


def test_memories_are_independent():
    """Each Memory owns its lists: changing one result's entities changes no other."""
    r = row()
    a, b = to_memory(r), to_memory(r)
    a.entities.append("x")
    a.metadata["k"] = 1
    assert b.entities == ["Caroline", "LGBTQ"] and "k" not in b.metadata
    assert r["entities"] == ["Caroline", "LGBTQ"]


def test_assigning_a_field_later_marks_only_that_memory():
    a, b = to_memory(row()), to_memory(row())
    a.score = 1.0
    assert "score" in a.model_fields_set and "score" not in b.model_fields_set


def test_ranking_values_given_as_none_count_as_set():
    """As with model_construct: a field passed is set, whatever its value."""
    r = row()
    extra = {"score": None, "arms": None, "relevance": None}
    assert to_memory(r, **extra).model_fields_set == validated(r, **extra).model_fields_set


def test_only_ranking_values_may_be_added():
    with pytest.raises(TypeError):
        to_memory(row(), text="another")


@pytest.mark.parametrize(
    "stored",
    [
        "{}",
        '{"turn_id": "D1:3"}',
        '{"big": 123456789012345678901234567890, "neg": -7, "f": 1.5e-300, "e": 2.5E+10}',
        '{"s": "caf\\u00e9 \\ud83d\\ude00 \\"q\\" \\\\ \\n", "\\u00fc": true, "n": null, "l": [[], {}]}',
        '{"a": ' * 32 + "1" + "}" * 32,  # as deep as the metadata validator allows
    ],
)
def test_metadata_read_as_the_standard_json_reader_reads_it(stored):
    assert memory_values(row(metadata=stored))["metadata"] == json.loads(stored)


@pytest.mark.parametrize("depth", [230, 300, 5000])
def test_metadata_too_deep_to_answer_reads_as_a_note(depth):
    """Only an archive imported before imports checked depth could have stored it; it used to make
    every recall and listing of its bank fail."""
    stored = '{"a": ' * depth + "1" + "}" * depth
    m = to_memory(row(metadata=stored))
    assert m.metadata == TOO_DEEP
    assert RecallResult(bank_id="b", query="q", results=[m], total_tokens=1).model_dump_json()
