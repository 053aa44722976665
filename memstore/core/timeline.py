"""A session's history as a picture: its total after every version, and each compaction.

:func:`session_timeline` turns replay's events (:mod:`memstore.core.replay`) into the series that
``memstore show SESSION --timeline`` draws, at most ``max_points`` of them: a long session is
sampled evenly, but every compaction keeps its point and the one just before it, so each drop
shows. Pure code: the CLI draws it (:mod:`memstore.cli.timeline`) or prints it as JSON.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from memstore.core.replay import ReplayEvent

#: Points a terminal picture can show apart; more would only blur into each other.
DEFAULT_MAX_POINTS = 400


@dataclass(frozen=True)
class Point:
    """The session right after one version."""

    version: int
    tokens: int
    summary_tokens: int


@dataclass(frozen=True)
class Mark:
    """One compaction: when, from what to what, and what it removed."""

    version: int
    number: int
    before_tokens: int
    after_tokens: int
    dropped: int
    summarized: int
    evicted: int


@dataclass(frozen=True)
class Timeline:
    """What the picture shows: the sampled series, every compaction, and the limits."""

    points: list[Point] = field(default_factory=list)
    compactions: list[Mark] = field(default_factory=list)
    hard: int = 0
    target: int = 0
    versions: int = 0  # how many versions the series stands for, before sampling


def session_timeline(
    events: Iterable[ReplayEvent],
    hard: int,
    target: int,
    *,
    start: Point | None = None,
    max_points: int = DEFAULT_MAX_POINTS,
) -> Timeline:
    """The timeline of a replayed session (see the module docstring).

    Args:
        start: Where the recorded history starts, for a pruned session (its base version,
            total and summary): the series begins there, not at an empty session.
    """
    points: list[Point] = [] if start is None else [start]
    marks: list[Mark] = []
    summary_tokens = 0 if start is None else start.summary_tokens
    for event in events:
        if event.report is not None:
            report = event.report
            summary_tokens = report.summary_tokens or 0
            marks.append(
                Mark(
                    version=event.version,
                    number=report.compaction_count,
                    before_tokens=report.before_tokens,
                    after_tokens=event.tokens,
                    dropped=report.items_dropped,
                    summarized=report.items_summarized,
                    evicted=report.items_evicted,
                )
            )
        points.append(Point(event.version, event.tokens, summary_tokens))
    versions = len(points) - (start is not None)
    return Timeline(_sampled(points, marks, max_points), marks, hard, target, versions)


def _sampled(points: list[Point], marks: list[Mark], max_points: int) -> list[Point]:
    if len(points) <= max_points:
        return points
    index = {point.version: n for n, point in enumerate(points)}
    keep = {0, len(points) - 1}
    for mark in marks:  # each compaction and the point before it: the drop must show
        at = index[mark.version]
        keep |= {at, max(at - 1, 0)}
    room = max(max_points - len(keep), 0)
    step = len(points) / room if room else len(points)
    keep |= {int(n * step) for n in range(room)}
    return [points[n] for n in sorted(keep)]
