"""Date windows in questions ("last month", "so far this year", "in Q1 2025") relative to as_of.

Two readings of a relative period, chosen by the ``date_windows`` knob: *calendar* ("last
month" is the previous calendar month) and *rolling* ("last month" is the 30 days up to as_of).
Periods that name their dates ("in 2024", "Q1 2025") and trailing day counts ("the last 90
days") read the same either way. A window is ``[start, end)``; ``end`` is None when it runs up
to as_of (a pinned snapshot holds nothing later).
"""

from __future__ import annotations

import datetime as dt
import re
from dataclasses import dataclass

# Phrases, not SQL: regular expressions are the tool for reading words.
_SPAN_DAYS = {"month": 30, "quarter": 90, "year": 365, "week": 7}
_MONTHS = [
    "january",
    "february",
    "march",
    "april",
    "may",
    "june",
    "july",
    "august",
    "september",
    "october",
    "november",
    "december",
]
_MONTH_NAMES = "|".join(_MONTHS)
_ORDINALS = {
    "first": 1,
    "second": 2,
    "third": 3,
    "fourth": 4,
    "1st": 1,
    "2nd": 2,
    "3rd": 3,
    "4th": 4,
}
_PATTERNS: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (name, re.compile(pattern))
    for name, pattern in (
        ("quarter_of_year", r"\b(?:in |during |for )?q([1-4])\s+(\d{4})\b"),
        (
            "trailing_days",
            r"\b(?:in |during |over |for )?(?:each of )?(?:the )?(?:last|past|previous|recent"
            r"|most recent) (\d+) (day|week|month)s\b",
        ),
        (
            "this_period",
            r"\b(?:so far )?this (month|quarter|year)(?: so far)?\b"
            r"|\b(?:year|month|quarter) to date\b|\bytd\b",
        ),
        (
            "last_period",
            r"\b(?:in |during |for )?(?:the )?(?:last|previous|prior) (?:calendar )?(month|quarter|year|week)\b",
        ),
        ("past_period", r"\b(?:in |during |over |for )?(?:the )?past (week|month|quarter|year)\b"),
        (
            "since_new_year",
            r"\bsince (?:january 1(?:st)?|jan 1(?:st)?|the (?:start|beginning) of (?:the|this) "
            r"year|new year)\b",
        ),
        ("day", r"\b(today|yesterday)(?:'s)?\b"),
        (
            "ordinal_quarter",
            r"\b(?:the )?(first|second|third|fourth|1st|2nd|3rd|4th) quarter (?:of )?(\d{4})\b",
        ),
        (
            "month_range",
            rf"\b(?:between|from) ({_MONTH_NAMES}) (?:and|to|until) ({_MONTH_NAMES}) (\d{{4}})\b",
        ),
        ("named_month", rf"\b(?:in )?({_MONTH_NAMES}) (\d{{4}})\b"),
        ("quarter_before", r"\b(?:the )?(quarter|month|year) before this one\b"),
        ("named_year", r"\b(?:in|during|for|of|dated in|since|from|year) (\d{4})\b"),
    )
)
_GRAINS = re.compile(
    r"\b(?:per|by|each|every|for each|in each|on each)\s+(?:of the last \d+ )?(day|week|month|quarter|year)s?\b"
    r"|\b(daily|weekly|monthly|quarterly|yearly|annual)\b"
)
_GRAIN_WORDS = {"daily": "day", "weekly": "week", "monthly": "month", "quarterly": "quarter"}


@dataclass(frozen=True)
class Period:
    """A date window found in a question, and where in the text it was said."""

    start: dt.date | None
    end: dt.date | None
    label: str
    span: tuple[int, int]


def find_period(text: str, as_of: dt.date, mode: str = "calendar") -> Period | None:
    """The first date window a question names, read in ``mode`` (calendar or rolling).

    >>> as_of = dt.date(2025, 6, 30)
    >>> find_period("net revenue last month", as_of)
    Period(start=datetime.date(2025, 5, 1), end=datetime.date(2025, 6, 1), label='last month', span=(12, 22))
    >>> find_period("net revenue last month", as_of, "rolling").start
    datetime.date(2025, 6, 1)
    >>> find_period("orders in Q1 2025", as_of).end
    datetime.date(2025, 4, 1)
    """
    lower = text.lower()
    found: list[tuple[int, Period]] = []
    for name, pattern in _PATTERNS:
        for match in pattern.finditer(lower):
            period = _READERS[name](match, as_of, mode)
            if period is not None:
                found.append((match.start(), period))
    if not found:
        return None
    return min(found, key=lambda pair: pair[0])[1]


def find_grain(text: str) -> tuple[str, tuple[int, int]] | None:
    """A time grain to group by: "per month", "each of the last 7 days", "monthly".

    >>> find_grain("orders on each of the last 7 days")
    ('day', (7, 33))
    """
    match = _GRAINS.search(text.lower())
    if match is None:
        return None
    grain = match[1] or _GRAIN_WORDS.get(match[2], "year")
    return grain, match.span()


def is_date_text(text: str) -> bool:
    """Whether a string (a SQL literal's value, say) starts with an ISO ``YYYY-MM-DD`` date.

    >>> is_date_text("2025-06-30"), is_date_text("2025-06-30 12:00:00"), is_date_text("placed")
    (True, True, False)
    >>> is_date_text("2025-13-01")
    False
    """
    head = text[:10]
    if len(head) != 10 or head[4] != "-" or head[7] != "-":
        return False
    try:
        dt.date.fromisoformat(head)
    except ValueError:
        return False
    return True


def _quarter_of_year(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    quarter, year = int(match[1]), int(match[2])
    start = dt.date(year, 3 * quarter - 2, 1)
    return Period(start, _add_months(start, 3), f"Q{quarter} {year}", match.span())


def _trailing_days(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    # "the last 7 days" are today and the six before it.
    days = int(match[1]) * {"day": 1, "week": 7, "month": 30}[match[2]]
    label = f"last {match[1]} {match[2]}s"
    return Period(as_of - dt.timedelta(days=days - 1), None, label, match.span())


def _this_period(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    unit = match[1] or next((u for u in ("month", "quarter") if u in match[0]), "year")
    if mode == "rolling":
        start = as_of - dt.timedelta(days=_SPAN_DAYS[unit] - 1)
        return Period(start, None, f"this {unit}", match.span())
    return Period(_period_start(as_of, unit), None, f"this {unit}", match.span())


def _last_period(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    unit = match[1]
    if mode == "rolling":
        start = as_of - dt.timedelta(days=_SPAN_DAYS[unit] - 1)
        return Period(start, None, f"last {unit}", match.span())
    end = _period_start(as_of, unit)
    start = end - dt.timedelta(days=7) if unit == "week" else _add_months(end, -_months(unit))
    return Period(start, end, f"last {unit}", match.span())


def _named_year(match: re.Match[str], as_of: dt.date, mode: str) -> Period | None:
    year = int(match[1])
    if not 1900 < year < 2200:
        return None
    if match[0].startswith(("since", "from")):
        return Period(dt.date(year, 1, 1), None, f"since {year}", match.span())
    return Period(dt.date(year, 1, 1), dt.date(year + 1, 1, 1), str(year), match.span())


def _past_period(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    start = as_of - dt.timedelta(days=_SPAN_DAYS[match[1]] - 1)
    return Period(start, None, f"past {match[1]}", match.span())


def _since_new_year(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    return Period(dt.date(as_of.year, 1, 1), None, "this year", match.span())


def _day(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    day = as_of if match[1] == "today" else as_of - dt.timedelta(days=1)
    return Period(day, day + dt.timedelta(days=1), match[1], match.span())


def _ordinal_quarter(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    quarter, year = _ORDINALS[match[1]], int(match[2])
    start = dt.date(year, 3 * quarter - 2, 1)
    return Period(start, _add_months(start, 3), f"Q{quarter} {year}", match.span())


def _month_range(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    year = int(match[3])
    first, last = _MONTHS.index(match[1]) + 1, _MONTHS.index(match[2]) + 1
    start = dt.date(year, first, 1)
    return Period(start, _add_months(dt.date(year, last, 1), 1), match[0], match.span())


def _named_month(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    start = dt.date(int(match[2]), _MONTHS.index(match[1]) + 1, 1)
    return Period(start, _add_months(start, 1), f"{match[1]} {match[2]}", match.span())


def _quarter_before(match: re.Match[str], as_of: dt.date, mode: str) -> Period:
    return _last_period(match, as_of, mode)


_READERS = {
    "quarter_of_year": _quarter_of_year,
    "trailing_days": _trailing_days,
    "this_period": _this_period,
    "last_period": _last_period,
    "named_year": _named_year,
    "past_period": _past_period,
    "since_new_year": _since_new_year,
    "day": _day,
    "ordinal_quarter": _ordinal_quarter,
    "month_range": _month_range,
    "named_month": _named_month,
    "quarter_before": _quarter_before,
}


def _months(unit: str) -> int:
    return {"month": 1, "quarter": 3, "year": 12}[unit]


def _period_start(day: dt.date, unit: str) -> dt.date:
    if unit == "week":
        return day - dt.timedelta(days=day.weekday())
    if unit == "month":
        return day.replace(day=1)
    if unit == "quarter":
        return dt.date(day.year, 3 * ((day.month - 1) // 3) + 1, 1)
    return dt.date(day.year, 1, 1)


def _add_months(day: dt.date, months: int) -> dt.date:
    index = day.year * 12 + day.month - 1 + months
    return dt.date(index // 12, index % 12 + 1, 1)
