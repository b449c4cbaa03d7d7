"""Which table the keyword arm reads as `m` (search/arms/keyword.keyword_rows): memory_terms, its
narrow copy of each memory, when the request's filters name only its columns; memories when one
names another."""

from __future__ import annotations

import re

import pytest

from hindsight.engine.search.arms.keyword import keyword_rows
from hindsight.engine.search.conditions import request_filters
from hindsight.engine.search.filters import MEMORY_FIELDS
from hindsight.engine.search.schemas import RecallRequest


@pytest.mark.parametrize(
    "request_fields,table",
    [
        ({}, "memory_terms"),
        ({"include_superseded": True}, "memory_terms"),
        ({"as_of": "2024-01-01T00:00:00Z"}, "memory_terms"),
        ({"tags": ["a"], "tags_match": "all_strict", "types": ["world"]}, "memory_terms"),
        ({"filter": 'entities contains "anna" and mentioned_at < "2024-01-01"'}, "memory_terms"),
        ({"filter": 'occurred_start > "2024-01-01" or created_at < "2020-01-01"'}, "memory_terms"),
        ({"filter": 'context = "general"'}, "memories"),
        ({"filter": 'metadata.speaker = "Anna"'}, "memories"),
        ({"filter": 'text contains "pond"'}, "memories"),
        ({"filter": 'document_id = "d1" or tags contains "a"'}, "memories"),
    ],
)
def test_keyword_arm_reads_the_narrow_table_when_the_filters_allow(request_fields, table):
    assert keyword_rows(request_filters(RecallRequest(query="pond heron", **request_fields))) == table


def test_every_memory_filter_field_is_a_column_of_m():
    """keyword_rows reads the filter's columns as `m.<column>`: a field written another way could
    send a filter to memory_terms that names a column it lacks."""
    assert all(re.fullmatch(r"m\.[a-z_]+", f.sql) for f in MEMORY_FIELDS.values())
