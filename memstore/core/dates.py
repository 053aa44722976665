"""Dates in conversation text: find one, write it one way, and pin relative ones down.

A summary keeps a statement with the day it was said, so that "when did ..." survives the
statement's turn. Three small jobs, all pure:

* :func:`find_date` reads the first calendar date in a text, in the forms people and
  applications write (``8 May 2023``, ``8 May, 2023``, ``May 8, 2023``, ``2023-05-08``,
  with or without a time of day before it);
* :func:`session_date` recognises a *session marker*: a developer note whose only content is
  a date (``New conversation session on 8 May 2023.``). It dates the items after it and is
  not itself a fact;
* :func:`pin_relative` adds the calendar date after a relative expression said on a known
  day (``yesterday`` said on 8 May 2023 becomes ``yesterday (7 May 2023)``), since
  "yesterday" means nothing once the day it was said is gone.
"""

from __future__ import annotations

import re
from datetime import date, timedelta

_MONTH_NAMES = (
    "january february march april may june july august september october november december"
)
MONTHS = tuple(_MONTH_NAMES.split())
_WEEKDAY_NAMES = "monday tuesday wednesday thursday friday saturday sunday"
WEEKDAYS = tuple(_WEEKDAY_NAMES.split())
_MONTH = r"(jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|" \
    r"sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?)"  # fmt: skip
_DAY_MONTH_YEAR = re.compile(
    rf"\b(\d{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?{_MONTH}\.?,?\s+(\d{{4}})\b", re.I
)
_MONTH_DAY_YEAR = re.compile(rf"\b{_MONTH}\.?\s+(\d{{1,2}})(?:st|nd|rd|th)?,?\s+(\d{{4}})\b", re.I)
_ISO = re.compile(r"\b(\d{4})-(\d{2})-(\d{2})\b")
_TIME = re.compile(r"\b\d{1,2}(?::\d{2})?\s*(?:am|pm)\b|\b\d{1,2}:\d{2}\b", re.I)
#: The words a session marker may hold besides its date and time: it announces a session
#: and its day, nothing else (``Session date: 8 May 2023``, ``New chat started on ...``).
_MARKER_TEXT = (
    "new conversation session chat talk meeting call date day started starts start began "
    "begins today now current time is on at of the a this it"
)
MARKER_WORDS = frozenset(_MARKER_TEXT.split())
_WORD = re.compile(r"[a-z]+")


def _month_number(name: str) -> int:
    return next(i for i, month in enumerate(MONTHS, 1) if month.startswith(name.lower()[:3]))


def _safe_date(year: int, month: int, day: int) -> date | None:
    try:
        return date(year, month, day)
    except ValueError:
        return None


def find_date(text: str) -> date | None:
    """The first calendar date written in ``text``, or ``None``."""
    found: list[tuple[int, date]] = []
    for match in _DAY_MONTH_YEAR.finditer(text):
        day = _safe_date(int(match[3]), _month_number(match[2]), int(match[1]))
        if day is not None:
            found.append((match.start(), day))
    for match in _MONTH_DAY_YEAR.finditer(text):
        day = _safe_date(int(match[3]), _month_number(match[1]), int(match[2]))
        if day is not None:
            found.append((match.start(), day))
    for match in _ISO.finditer(text):
        day = _safe_date(int(match[1]), int(match[2]), int(match[3]))
        if day is not None:
            found.append((match.start(), day))
    return min(found, key=lambda pair: pair[0])[1] if found else None


def format_date(day: date) -> str:
    """``8 May 2023``: one form, whatever form the date came in."""
    return f"{day.day} {MONTHS[day.month - 1].capitalize()} {day.year}"


def parse_formatted(text: str) -> date | None:
    """The inverse of :func:`format_date` (``None`` if ``text`` is not such a date)."""
    match = _DAY_MONTH_YEAR.fullmatch(text.strip())
    return None if match is None else _safe_date(
        int(match[3]), _month_number(match[2]), int(match[1])
    )  # fmt: skip


def session_date(text: str) -> date | None:
    """The date of a session marker (module docstring), or ``None`` if ``text`` says more."""
    day = find_date(text)
    if day is None:
        return None
    rest = _ISO.sub(" ", _MONTH_DAY_YEAR.sub(" ", _DAY_MONTH_YEAR.sub(" ", text)))
    words = _WORD.findall(_TIME.sub(" ", rest).lower())
    return day if all(word in MARKER_WORDS for word in words) else None


def _shift_month(day: date, months: int) -> tuple[int, int]:
    index = day.year * 12 + day.month - 1 + months
    return index // 12, index % 12 + 1


def _last_weekday(day: date, weekday: int) -> date:
    back = (day.weekday() - weekday) % 7 or 7
    return day - timedelta(days=back)


_NUMBER_WORDS = {"a": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5, "six": 6}
_AGO = re.compile(r"\b(\d+|a|one|two|three|four|five|six)\s+(day|week|month|year)s?\s+ago\b", re.I)
_RELATIVE = re.compile(
    r"\b(yesterday|tomorrow|last night|tonight|"
    r"(?:last|next|this) (?:week|weekend|month|year)|"
    r"last (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday))\b",
    re.I,
)


def _resolve(phrase: str, said: date) -> str | None:
    phrase = phrase.lower()
    if phrase in ("yesterday", "last night"):
        return format_date(said - timedelta(days=1))
    if phrase == "tomorrow":
        return format_date(said + timedelta(days=1))
    if phrase == "tonight":
        return format_date(said)
    which, unit = phrase.split(" ", 1)
    if unit in WEEKDAYS:
        return format_date(_last_weekday(said, WEEKDAYS.index(unit)))
    if unit in ("week", "weekend"):
        if which == "this":
            return None
        return f"the {unit} {'before' if which == 'last' else 'after'} {format_date(said)}"
    if unit == "month":
        year, month = _shift_month(said, {"last": -1, "next": 1, "this": 0}[which])
        return f"{MONTHS[month - 1].capitalize()} {year}"
    return str(said.year + {"last": -1, "next": 1, "this": 0}[which])


def _ago(match: re.Match[str], said: date) -> str:
    count = int(match[1]) if match[1].isdigit() else _NUMBER_WORDS[match[1].lower()]
    unit = match[2].lower()
    if unit == "day":
        return format_date(said - timedelta(days=count))
    if unit == "week":
        return f"the week of {format_date(said - timedelta(weeks=count))}"
    if unit == "month":
        year, month = _shift_month(said, -count)
        return f"{MONTHS[month - 1].capitalize()} {year}"
    return str(said.year - count)


def pin_relative(text: str, said: date) -> str:
    """``text`` with the calendar date after each relative expression it holds."""

    def pin(match: re.Match[str], resolved: str | None) -> str:
        return match[0] if resolved is None else f"{match[0]} ({resolved})"

    text = _RELATIVE.sub(lambda m: pin(m, _resolve(m[0], said)), text)
    return _AGO.sub(lambda m: pin(m, _ago(m, said)), text)
