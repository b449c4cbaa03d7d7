"""Time expressions in text, resolved to windows against a reference time.

Retain uses it to give a unit an occurred window ("yesterday" in a message sent on 8 May 2023 is
7 May 2023); recall uses it on the query ("what did she do last May?") for the temporal arm.
Relative and absolute expressions alike are resolved here because they denote windows (a day, a
week, a month, a year), not the instants a date parser returns. A cheap regex gate runs first so
that text without a time word costs almost nothing on the retain path.
"""

from __future__ import annotations

import calendar
import re
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

MONTHS = {m.lower(): i for i, m in enumerate(calendar.month_name) if m}
MONTHS.update({m.lower(): i for i, m in enumerate(calendar.month_abbr) if m})
MONTHS.pop("may", None)
MONTHS["may"] = 5
WEEKDAYS = {d.lower(): i for i, d in enumerate(calendar.day_name)}
_MONTH_RE = r"(january|february|march|april|may|june|july|august|september|october|november|december|jan|feb|mar|apr|jun|jul|aug|sep|sept|oct|nov|dec)"
_WEEKDAY_RE = r"(monday|tuesday|wednesday|thursday|friday|saturday|sunday)"
_NUM_WORDS = {
    "a": 1,
    "an": 1,
    "one": 1,
    "two": 2,
    "three": 3,
    "four": 4,
    "five": 5,
    "six": 6,
    "seven": 7,
    "eight": 8,
    "nine": 9,
    "ten": 10,
    "couple of": 2,
    "few": 3,
    "several": 3,
}

_GATE = re.compile(
    r"\b(yesterday|today|tonight|tomorrow|ago|last|next|this|in|\d{4}|"
    + _MONTH_RE[1:-1]
    + "|"
    + _WEEKDAY_RE[1:-1]
    + r")\b|[年月日号天周]|星期|礼拜",
    re.I,
)
# Chinese numbers as dates and counts write them: 一 to 九, 十, 两, 二十一, 三十, and digits.
_ZH_NUM = r"(\d{1,4}|[零一二两三四五六七八九十]{1,3})"
_ZH_DIGITS = {"零": 0, "一": 1, "二": 2, "两": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9}
_ZH_WEEKDAY = r"(?:星期|礼拜|周)([一二三四五六日天])"
_ZH_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6}
_ZH_DAY_OFFSET = {
    "大前天": -3,
    "前天": -2,
    "昨天": -1,
    "昨日": -1,
    "昨晚": -1,
    "今天": 0,
    "今日": 0,
    "今晚": 0,
    "明天": 1,
    "明日": 1,
    "明晚": 1,
    "后天": 2,
    "大后天": 3,
}
_ZH_YEAR_OFFSET = {"前年": -2, "去年": -1, "今年": 0, "明年": 1, "后年": 2}
_ZH_STEP = {"上": -1, "这": 0, "本": 0, "下": 1}


def zh_number(text: str) -> int:
    """A number written in digits or Chinese numerals, as dates use them (up to 99)."""
    if text.isdigit():
        return int(text)
    if "十" in text:
        tens, _, units = text.partition("十")
        return (_ZH_DIGITS[tens] if tens else 1) * 10 + (_ZH_DIGITS[units] if units else 0)
    return _ZH_DIGITS[text]


_PATTERNS: list[tuple[str, re.Pattern]] = [
    ("iso", re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")),
    ("day_month_year", re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH_RE + r",?\s+(\d{4})\b", re.I)),
    ("month_day_year", re.compile(r"\b" + _MONTH_RE + r"\.?\s+(\d{1,2})(?:st|nd|rd|th)?,?\s+(\d{4})\b", re.I)),
    ("month_year", re.compile(r"\b" + _MONTH_RE + r"\.?,?\s+(?:of\s+)?(\d{4})\b", re.I)),
    ("month_day", re.compile(r"\b" + _MONTH_RE + r"\.?\s+(\d{1,2})(?:st|nd|rd|th)?\b(?![,.]?\s*\d{4})", re.I)),
    ("day_month", re.compile(r"\b(\d{1,2})(?:st|nd|rd|th)?\s+(?:of\s+)?" + _MONTH_RE + r"\b(?![,.]?\s*\d{4})", re.I)),
    ("rel_day2", re.compile(r"\b(?:the\s+)?day\s+(before\s+yesterday|after\s+tomorrow)\b", re.I)),
    ("rel_day", re.compile(r"\b(yesterday|today|tonight|tomorrow)\b", re.I)),
    # Chinese, most specific first
    ("zh_ymd", re.compile(r"(\d{4})\s*年\s*" + _ZH_NUM + r"\s*月\s*" + _ZH_NUM + r"\s*[日号]")),
    ("zh_rel_ymd", re.compile(r"(前年|去年|今年|明年|后年)" + _ZH_NUM + r"月" + _ZH_NUM + r"[日号]")),
    ("zh_md", re.compile(_ZH_NUM + r"\s*月\s*" + _ZH_NUM + r"\s*[日号]")),
    ("zh_ym", re.compile(r"(\d{4})\s*年\s*" + _ZH_NUM + r"\s*月")),
    ("zh_rel_ym", re.compile(r"(前年|去年|今年|明年|后年)" + _ZH_NUM + r"月")),
    ("zh_rel_year", re.compile(r"(前年|去年|今年|明年|后年)")),
    ("zh_year", re.compile(r"(\d{4})\s*年(?!\s*\d|\s*[零一二两三四五六七八九十])")),
    ("zh_rel_day", re.compile(r"(大前天|前天|昨天|昨日|昨晚|今天|今日|今晚|明天|明日|明晚|大后天|后天)")),
    ("zh_ago", re.compile(_ZH_NUM + r"\s*(天|个?星期|个?礼拜|周|个月|年)前")),
    ("zh_rel_weekday", re.compile(r"(上|这|本|下)(?:个)?" + _ZH_WEEKDAY)),
    ("zh_rel_weekend", re.compile(r"(上|这|本|下)?(?:个)?周末")),
    ("zh_rel_week", re.compile(r"(上|这|本|下)(?:个)?(?:星期|礼拜|周)(?![一二三四五六日天末])")),
    ("zh_rel_month", re.compile(r"(上|这|本|下)(?:个)?月")),
    # a month alone (六月, 6月份): as English "in June", the latest such month
    ("zh_month", re.compile(r"(?<![\d零一二两三四五六七八九十年个])" + _ZH_NUM + r"\s*月份?")),
    ("zh_weekday", re.compile(_ZH_WEEKDAY)),
    (
        "ago",
        re.compile(
            r"\b(\d+|a|an|one|two|three|four|five|six|seven|eight|nine|ten|couple of|few|several)\s+(day|week|month|year)s?\s+ago\b",
            re.I,
        ),
    ),
    ("rel_unit", re.compile(r"\b(last|this|next|past)\s+(week|weekend|month|year)\b", re.I)),
    ("rel_weekday", re.compile(r"\b(last|this|next|on)\s+" + _WEEKDAY_RE + r"\b", re.I)),
    ("rel_month", re.compile(r"\b(last|this|next|in|since|during)\s+" + _MONTH_RE + r"\b(?!\s+\d)", re.I)),
    ("year", re.compile(r"\b(?:in|since|during|of)\s+((?:19|20)\d{2})\b", re.I)),
]


@dataclass(frozen=True)
class TimeWindow:
    start: datetime
    end: datetime
    text: str


def _day(d: datetime) -> tuple[datetime, datetime]:
    s = d.replace(hour=0, minute=0, second=0, microsecond=0)
    return s, s + timedelta(days=1)


def _month(year: int, month: int, tz) -> tuple[datetime, datetime]:
    s = datetime(year, month, 1, tzinfo=tz)
    e = datetime(year + (month == 12), month % 12 + 1, 1, tzinfo=tz)
    return s, e


def _year(year: int, tz) -> tuple[datetime, datetime]:
    return datetime(year, 1, 1, tzinfo=tz), datetime(year + 1, 1, 1, tzinfo=tz)


def _week(d: datetime) -> tuple[datetime, datetime]:
    s, _ = _day(d - timedelta(days=d.weekday()))
    return s, s + timedelta(days=7)


def _shift_months(d: datetime, n: int) -> datetime:
    m = d.month - 1 + n
    y = d.year + m // 12
    m = m % 12 + 1
    return d.replace(year=y, month=m, day=min(d.day, calendar.monthrange(y, m)[1]))


def _resolve(kind: str, m: re.Match, base: datetime) -> tuple[datetime, datetime] | None:
    tz = base.tzinfo
    g = [x.lower() if isinstance(x, str) else x for x in m.groups()]
    try:
        if kind == "iso":
            return _day(datetime(int(g[0]), int(g[1]), int(g[2]), tzinfo=tz))
        if kind == "day_month_year":
            return _day(datetime(int(g[2]), MONTHS[g[1]], int(g[0]), tzinfo=tz))
        if kind == "month_day_year":
            return _day(datetime(int(g[2]), MONTHS[g[0]], int(g[1]), tzinfo=tz))
        if kind == "month_year":
            return _month(int(g[1]), MONTHS[g[0]], tz)
    except (ValueError, KeyError):
        return None
    if kind in ("month_day", "day_month"):
        month, day = (MONTHS[g[0]], int(g[1])) if kind == "month_day" else (MONTHS[g[1]], int(g[0]))
        return _nearest_day(base, month, day)
    if kind == "rel_day2":
        return _day(base + timedelta(days=-2 if g[0].startswith("before") else 2))
    if kind == "rel_day":
        offset = {"yesterday": -1, "today": 0, "tonight": 0, "tomorrow": 1}[g[0]]
        return _day(base + timedelta(days=offset))
    if kind.startswith("zh_"):
        return _resolve_zh(kind, g, base)
    if kind == "ago":
        n = int(g[0]) if g[0].isdigit() else _NUM_WORDS.get(g[0], 1)
        unit = g[1]
        if unit == "day":
            return _day(base - timedelta(days=n))
        if unit == "week":
            return _week(base - timedelta(weeks=n))
        if unit == "month":
            d = _shift_months(base, -n)
            return _month(d.year, d.month, tz)
        return _year(base.year - n, tz)
    if kind == "rel_unit":
        which, unit = g
        step = {"last": -1, "past": -1, "this": 0, "next": 1}[which]
        if unit in ("week", "weekend"):
            s, e = _week(base + timedelta(weeks=step))
            return (s + timedelta(days=5), e) if unit == "weekend" else (s, e)
        if unit == "month":
            d = _shift_months(base, step)
            return _month(d.year, d.month, tz)
        return _year(base.year + step, tz)
    if kind == "rel_weekday":
        which, wd = g
        target = WEEKDAYS[wd]
        delta = (base.weekday() - target) % 7
        if which == "next":
            ahead = (target - base.weekday()) % 7 or 7
            return _day(base + timedelta(days=ahead))
        if which == "last":
            delta = delta or 7
        return _day(base - timedelta(days=delta))
    if kind == "rel_month":
        which, mon = g[0], MONTHS[g[1]]
        if which == "next":
            year = base.year if mon > base.month else base.year + 1
        elif which == "this":
            year = base.year
        elif which == "last":
            year = base.year if mon < base.month else base.year - 1
        else:  # in / since / during: the most recent such month, this one included
            year = base.year if mon <= base.month else base.year - 1
        return _month(year, mon, tz)
    if kind == "year":
        return _year(int(g[0]), tz)
    return None


def _nearest_day(base: datetime, month: int, day: int) -> tuple[datetime, datetime] | None:
    """A month and day without a year: the occurrence nearest the reference time ("May 8" said
    on May 10 is two days ago; "December 25" said in February is last Christmas)."""
    options = []
    for year in (base.year - 1, base.year, base.year + 1):
        try:
            options.append(datetime(year, month, day, tzinfo=base.tzinfo))
        except ValueError:
            continue
    if not options:
        return None
    return _day(min(options, key=lambda d: abs(d - base)))


def _resolve_zh(kind: str, g: list, base: datetime) -> tuple[datetime, datetime] | None:
    tz = base.tzinfo
    if kind == "zh_ymd":
        return _day(datetime(int(g[0]), zh_number(g[1]), zh_number(g[2]), tzinfo=tz))
    if kind == "zh_rel_ymd":
        return _day(datetime(base.year + _ZH_YEAR_OFFSET[g[0]], zh_number(g[1]), zh_number(g[2]), tzinfo=tz))
    if kind == "zh_md":
        return _nearest_day(base, zh_number(g[0]), zh_number(g[1]))
    if kind == "zh_ym":
        return _month(int(g[0]), zh_number(g[1]), tz)
    if kind == "zh_rel_ym":
        return _month(base.year + _ZH_YEAR_OFFSET[g[0]], zh_number(g[1]), tz)
    if kind == "zh_rel_year":
        return _year(base.year + _ZH_YEAR_OFFSET[g[0]], tz)
    if kind == "zh_year":
        return _year(int(g[0]), tz)
    if kind == "zh_rel_day":
        return _day(base + timedelta(days=_ZH_DAY_OFFSET[g[0]]))
    if kind == "zh_ago":
        n, unit = zh_number(g[0]), g[1]
        if unit == "天":
            return _day(base - timedelta(days=n))
        if unit == "年":
            return _year(base.year - n, tz)
        if unit.endswith("月"):
            d = _shift_months(base, -n)
            return _month(d.year, d.month, tz)
        return _week(base - timedelta(weeks=n))
    if kind == "zh_rel_weekday":
        # 上周三 is the Wednesday of last week (the calendar week), unlike English "last Wednesday".
        start, _ = _week(base + timedelta(weeks=_ZH_STEP[g[0]]))
        return _day(start + timedelta(days=_ZH_WEEKDAYS[g[1]]))
    if kind == "zh_rel_weekend":
        s, e = _week(base + timedelta(weeks=_ZH_STEP.get(g[0] or "这", 0)))
        return s + timedelta(days=5), e
    if kind == "zh_rel_week":
        return _week(base + timedelta(weeks=_ZH_STEP[g[0]]))
    if kind == "zh_rel_month":
        d = _shift_months(base, _ZH_STEP[g[0]])
        return _month(d.year, d.month, tz)
    if kind == "zh_month":
        mon = zh_number(g[0])
        return _month(base.year if mon <= base.month else base.year - 1, mon, tz)
    if kind == "zh_weekday":
        # a weekday alone: this week's, or the last one if it is still to come (as "on Wednesday")
        return _day(base - timedelta(days=(base.weekday() - _ZH_WEEKDAYS[g[0]]) % 7))
    return None


ABSOLUTE = {"iso", "day_month_year", "month_day_year", "month_year", "year", "zh_ymd", "zh_ym", "zh_year"}


def find_time_windows(text: str, base: datetime | None, anchored: bool = True) -> list[TimeWindow]:
    """Windows for every time expression in `text`, in order of appearance. `anchored=False`
    (timeless content, retained with timestamp "unset"): only absolute dates, since "yesterday"
    has no day to count back from."""
    if not text or not _GATE.search(text):
        return []
    base = base or datetime.now(UTC)
    if base.tzinfo is None:
        base = base.replace(tzinfo=UTC)
    # Characters already read as a time: a match overlapping them is skipped. A mask, so that the
    # check is as long as the match, not as the windows found so far (2,000 of them in a 4,000-
    # character query of 一月一月... made it quadratic, on the event loop).
    taken = bytearray(len(text))
    out: list[tuple[int, TimeWindow]] = []
    for kind, rx in _PATTERNS:
        if not anchored and kind not in ABSOLUTE:
            continue
        for m in rx.finditer(text):
            if taken.find(1, m.start(), m.end()) != -1:
                continue
            try:
                win = _resolve(kind, m, base)
                # in UTC, as stored: a window off either end of the calendar does not exist
                win = win and (win[0].astimezone(UTC), win[1].astimezone(UTC))
            except (ValueError, OverflowError, KeyError):  # no such day, or numerals that are no number
                win = None
            if win is None:
                continue
            taken[m.start() : m.end()] = b"\x01" * (m.end() - m.start())
            out.append((m.start(), TimeWindow(win[0], win[1], m.group(0))))
    return [w for _, w in sorted(out, key=lambda x: x[0])]
