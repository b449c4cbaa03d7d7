"""Time expressions become windows resolved against the item's timestamp (language/time_expressions.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from hindsight.language.time_expressions import find_time_windows

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


@pytest.mark.parametrize(
    "text,start,end",
    [
        # a month and day without a year: the nearest occurrence
        ("We hiked on May 4.", day(2023, 5, 4), day(2023, 5, 5)),
        ("on the 4th of May", day(2023, 5, 4), day(2023, 5, 5)),
        ("Her birthday party was December 25th.", day(2022, 12, 25), day(2022, 12, 26)),
        ("the day before yesterday", day(2023, 5, 6), day(2023, 5, 7)),
        ("the day after tomorrow", day(2023, 5, 10), day(2023, 5, 11)),
    ],
)
def test_english_days_without_a_year(text, start, end):
    [w] = find_time_windows(text, BASE)
    assert (w.start, w.end) == (start, end)


@pytest.mark.parametrize(
    "text,start,end",
    [
        ("2023年5月4日我们去了公园", day(2023, 5, 4), day(2023, 5, 5)),
        ("5月4日见", day(2023, 5, 4), day(2023, 5, 5)),
        ("4月27号开会", day(2023, 4, 27), day(2023, 4, 28)),
        ("十二月二十五日是圣诞节", day(2022, 12, 25), day(2022, 12, 26)),
        ("去年12月", day(2022, 12, 1), day(2023, 1, 1)),
        ("去年五月搬家", day(2022, 5, 1), day(2022, 6, 1)),
        ("今年三月八日", day(2023, 3, 8), day(2023, 3, 9)),
        ("2022年我在北京", day(2022, 1, 1), day(2023, 1, 1)),
        ("2021年6月", day(2021, 6, 1), day(2021, 7, 1)),
        ("前天下雨了", day(2023, 5, 6), day(2023, 5, 7)),
        ("大前天", day(2023, 5, 5), day(2023, 5, 6)),
        ("昨天", day(2023, 5, 7), day(2023, 5, 8)),
        ("明天见", day(2023, 5, 9), day(2023, 5, 10)),
        ("三天前", day(2023, 5, 5), day(2023, 5, 6)),
        ("两周前", day(2023, 4, 24), day(2023, 5, 1)),
        ("3个月前", day(2023, 2, 1), day(2023, 3, 1)),
        # 上周三: Wednesday of last calendar week (Monday 8 May is in this one)
        ("上周三开会", day(2023, 5, 3), day(2023, 5, 4)),
        ("上星期五", day(2023, 5, 5), day(2023, 5, 6)),
        ("下周五出发", day(2023, 5, 19), day(2023, 5, 20)),
        ("这个周末", day(2023, 5, 13), day(2023, 5, 15)),
        ("上周", day(2023, 5, 1), day(2023, 5, 8)),
        ("上个月", day(2023, 4, 1), day(2023, 5, 1)),
        ("周六", day(2023, 5, 6), day(2023, 5, 7)),
        ("准备六月的考试", day(2022, 6, 1), day(2022, 7, 1)),
        ("3月份", day(2023, 3, 1), day(2023, 4, 1)),
    ],
)
def test_chinese_expressions_resolve_like_english_ones(text, start, end):
    [w] = find_time_windows(text, BASE)
    assert (w.start, w.end) == (start, end), w
    assert w.text in text


def test_chinese_text_without_a_date_has_no_window():
    for text in ("我喜欢月亮", "一个月很长", "他在周家吃饭了吗", "十三月", "星巴克"):
        assert find_time_windows(text, BASE) == [], text
    # timeless content keeps only the absolute dates
    windows = find_time_windows("昨天，还有2022年", None, anchored=False)
    assert [(w.start, w.end) for w in windows] == [(day(2022, 1, 1), day(2023, 1, 1))]
