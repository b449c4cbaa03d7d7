"""Time expressions become windows resolved against the item's timestamp (engine/temporal.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight.engine.temporal import find_time_windows

BASE = datetime(2023, 5, 8, 13, 56, tzinfo=UTC)  # a Monday


def day(y, m, d):
    return datetime(y, m, d, tzinfo=UTC)


@pytest.mark.parametrize(
    "text,start,end",
    [
        ("Caroline went to the support group yesterday.", day(2023, 5, 7), day(2023, 5, 8)),
        ("We met last May.", day(2022, 5, 1), day(2022, 6, 1)),
        ("We moved 2 weeks ago.", day(2023, 4, 24), day(2023, 5, 1)),
        ("On 20 May, 2023 she sang.", day(2023, 5, 20), day(2023, 5, 21)),
        ("She visited May 7, 2023.", day(2023, 5, 7), day(2023, 5, 8)),
        ("In 2022 I lived in Paris.", day(2022, 1, 1), day(2023, 1, 1)),
        ("What did we do last week?", day(2023, 5, 1), day(2023, 5, 8)),
        ("See you next Friday.", day(2023, 5, 12), day(2023, 5, 13)),
    ],
)
def test_expressions_resolve_against_the_timestamp(text, start, end):
    [w] = find_time_windows(text, BASE)
    assert (w.start, w.end) == (start, end)
    assert w.text.lower() in text.lower()


def test_no_time_expression_no_window():
    assert find_time_windows("The 2022 World Cup final was thrilling.", BASE) == []
    assert find_time_windows("", BASE) == []


def test_timeless_content_keeps_only_absolute_dates():
    """Content retained with timestamp "unset" has no day to count "yesterday" back from."""
    windows = find_time_windows("yesterday, and in 2022", None, anchored=False)
    assert [(w.start, w.end) for w in windows] == [(day(2022, 1, 1), day(2023, 1, 1))]


def test_windows_come_in_order_of_appearance():
    texts = [w.text for w in find_time_windows("In 2022 we met, and yesterday we married.", BASE)]
    assert texts == ["In 2022", "yesterday"]
