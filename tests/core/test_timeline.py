"""The session's picture: every version's total, sampled for long sessions with every
compaction kept, drawn in the terminal or given as JSON."""

from __future__ import annotations

import json
from pathlib import Path

from clients import memstore_cli
from conftest import write_worked_example

from memstore.core.records import CompactionReport
from memstore.core.replay import ReplayEvent
from memstore.core.timeline import session_timeline


def events(n: int, every: int) -> list[ReplayEvent]:
    """``n`` versions of a session that compacts every ``every`` versions."""
    out, tokens, number = [], 0, 0
    for version in range(1, n + 1):
        report = None
        if version % every == 0:
            number += 1
            report = CompactionReport(
                "s", number, tokens, tokens // 2, 1, 2, 3, None, {}, summary_tokens=40
            )
            tokens //= 2
        else:
            tokens += 10
        out.append(ReplayEvent(version, "x", None, report, tokens, 0, None))
    return out


def test_a_long_session_is_sampled_and_every_compaction_kept() -> None:
    timeline = session_timeline(events(100_000, 997), hard=1_000, target=500, max_points=400)
    assert timeline.versions == 100_000
    assert len(timeline.compactions) == 100_000 // 997
    kept = {point.version for point in timeline.points}
    assert len(kept) <= 400 + 2 * len(timeline.compactions)
    for mark in timeline.compactions:  # the drop shows: the point and the one before it
        assert {mark.version - 1, mark.version} <= kept
    assert timeline.points[0].version == 1 and timeline.points[-1].version == 100_000


def test_a_short_session_keeps_every_point() -> None:
    timeline = session_timeline(events(50, 20), hard=100, target=60)
    assert [p.version for p in timeline.points] == list(range(1, 51))
    assert [m.after_tokens for m in timeline.compactions] == [
        timeline.points[19].tokens, timeline.points[39].tokens,
    ]  # fmt: skip
    assert timeline.points[25].summary_tokens == 40


def test_the_cli_draws_it_and_gives_its_series(tmp_path: Path) -> None:
    db = tmp_path / "worked.db"
    write_worked_example(db)
    drawn = memstore_cli(db, "show", "incident-42", "--timeline")
    assert drawn.returncode == 0, drawn.stderr
    assert "incident-42: 6 versions, 1 compactions (hard 55, target 52)" in drawn.stdout
    assert "compaction #1 at v6: 65 -> 52 tokens (dropped 1, summarized 2, evicted 0)" in (
        drawn.stdout
    )
    series = json.loads(memstore_cli(db, "show", "incident-42", "--timeline", "--json").stdout)
    assert [p["tokens"] for p in series["points"]][-2:] == [65, 52]
    assert series["compactions"][0]["before_tokens"] == 65
    assert (series["hard"], series["target"]) == (55, 52)
