"""When each item was said: its own timestamp, or a date line that says so.

A fact keeps the day it was said on, so that "when did ..." survives its item, and a
"yesterday" in it still means something once that day is gone. Days come from:

* **the items' own timestamps** (UTC days): the day changes when the timestamps do;
* **a date line** in a DECISION item (``New conversation session on 8 May 2023.``,
  :func:`memstore.core.dates.session_date`), the convention of histories imported from
  elsewhere, whose timestamps say when they were imported, not when they were said: once a
  session has one, date lines alone set its days (*marked* days).

A summary dates its facts only when the session spans more than one day (or is marked);
in a single day it writes the day once (:mod:`memstore.extraction.digest`). Relative days
in a statement are pinned to the calendar (``yesterday (7 May 2023)``).

Pure: no I/O.
"""

from __future__ import annotations

from datetime import date, timedelta

from memstore.core.dates import format_date, parse_formatted, pin_relative, session_date
from memstore.core.values import MemoryItem, MemoryKind, MemoryRole
from memstore.extraction.language import relative_days


class Calendar:
    """The day in force as a fold reads its items, oldest first.

    Args:
        day: The day in force before the first item (the previous summary's), if known.
        marked: The previous summary's days came from date lines.
    """

    def __init__(self, day: date | None, *, marked: bool) -> None:
        self.day = day
        self.marked = marked
        self.days: set[date] = set() if day is None else {day}

    def marker(self, item: MemoryItem) -> date | None:
        """The day a date line sets, if ``item`` is one (it then moves the day in force)."""
        if item.kind is not MemoryKind.DECISION or item.role is not MemoryRole.DEVELOPER:
            return None
        found = session_date(item.content)
        if found is not None:
            self.day, self.marked = found, True
            self.days.add(found)
        return found

    def read(self, item: MemoryItem) -> date | None:
        """The day ``item`` was said on (its timestamp's, unless date lines set the days)."""
        if not self.marked:
            self.day = item.timestamp.date()
            self.days.add(self.day)
        return self.day

    @property
    def spans_days(self) -> bool:
        """Whether the facts must carry their days: several days, or marked ones."""
        return self.marked or len(self.days) > 1


def said_on(day: date | None) -> str | None:
    """A day as facts carry it (``8 May 2023``)."""
    return None if day is None else format_date(day)


def pin_days(text: str, day: date | None) -> str:
    """``text`` with the calendar date after each relative day in it (``yesterday (7 May
    2023)``, ``вчера (7 May 2023)``), said on ``day``; unchanged without a day."""
    if day is None:
        return text
    pinned = pin_relative(text, day)
    if pinned != text:
        return pinned  # English phrases, the richer set ("last week", "3 days ago")
    out = []
    last = 0
    for _start, end, offset in relative_days(text):
        if text[end : end + 2] == " (":
            continue  # pinned already
        out.append(text[last:end] + f" ({format_date(day + timedelta(days=offset))})")
        last = end
    return "".join(out) + text[last:] if out else text


def parse_day(text: str | None) -> date | None:
    """The inverse of :func:`said_on`."""
    return None if not text else parse_formatted(text)
