"""The filter language (engine/search/filters.py) compiles to parameterised SQL: field names from a
fixed table, every value bound, limits enforced, errors naming the position."""

from __future__ import annotations

import pytest

from hindsight.db.binder import Binder, Fragment
from hindsight.engine.errors import InvalidArgument
from hindsight.engine.search.filters import CHUNK_FIELDS, MEMORY_FIELDS, compile_filter


def test_values_are_bound_after_the_statements_own_parameters():
    p = Binder("bank", "query vector", 60)  # a statement's $1..$3
    sql = compile_filter(
        'metadata.speaker = "Melanie" and (mentioned_at >= "2023-05-01" or tags in ["work", "travel"])',
        MEMORY_FIELDS,
        p,
    )
    assert sql is not None and "$4" in sql and "$7" in sql and "$8" not in sql
    assert p.values[3:5] == ["speaker", "Melanie"] and p.values[6] == ["work", "travel"]
    assert "Melanie" not in sql and "work" not in sql  # values never in the SQL text


def test_document_fields_and_list_membership():
    p = Binder()
    sql = compile_filter('source_type = "pdf" and tags contains "manual" and page = 3', CHUNK_FIELDS, p)
    assert sql is not None and "d.source_type" in sql and "d.tags @>" in sql and "c.page_start" in sql
    assert p.values == ["pdf", "manual", 3]


def test_no_filter_is_none():
    assert compile_filter(None, MEMORY_FIELDS, Binder()) is None
    assert compile_filter("   ", MEMORY_FIELDS, Binder()) is None


@pytest.mark.parametrize(
    "text,needle",
    [
        ('colour = "red"', "unknown field 'colour'"),
        ("type = ", "position 7"),
        ('type = "world" and', "position 18"),
        ("tags contains 3", "tags takes a quoted string"),
        ("(" * 25 + 'type = "x"' + ")" * 25, "deeper than 20"),
        (" or ".join(['type = "x"'] * 51), "more than 50 comparisons"),
        ("x" * 2001, "longer than 2000"),
        ('text like "%a%"; DROP TABLE memories', "unexpected character ';'"),
    ],
)
def test_errors_name_the_problem(text, needle):
    with pytest.raises(InvalidArgument) as e:
        compile_filter(text, MEMORY_FIELDS, Binder())
    assert e.value.message.startswith("filter: ") and needle in e.value.message and e.value.field == "filter"


def test_a_fragment_binds_into_each_statement_with_its_own_numbers():
    """A recall's filters are built once and go into every arm, each numbering its own parameters."""
    f = Fragment()
    f.sql = " AND " + str(compile_filter('type = "world" and tags contains "work"', MEMORY_FIELDS, f))
    semantic, entity = Binder("bank", "vec", 60), Binder("bank", ["alice"], 60, "vec")
    assert "$4" in f.into(semantic) and "$5" in f.into(entity)
    assert semantic.values[3:] == ["world", "work"] and entity.values[4:] == ["world", "work"]
    assert "\x00" not in f.into(Binder())
