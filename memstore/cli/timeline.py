"""``memstore show SESSION --timeline``: the session's history drawn in the terminal.

The total after every version (sampled for long sessions, every compaction kept), the hard
and target limits as lines, the summary's size, and each compaction marked; drawn with
plotext, a plotting library for terminals. ``--json`` prints the same series.
"""

from __future__ import annotations

import dataclasses
import shutil

import click

from memstore.cli.output import print_json, run_with_store
from memstore.core.replay import initial_state, replay
from memstore.core.timeline import Point, Timeline, session_timeline

#: The picture's height in rows: room for the limits to stand apart from the series.
HEIGHT = 24
#: Its width when the output is not a terminal (a file, a pipe).
PIPED_WIDTH = 120


def show_timeline(ctx: click.Context, session_id: str, as_json: bool) -> None:
    """Print SESSION's timeline, as a picture or (``as_json``) as its series."""
    history = run_with_store(ctx, lambda store: store.history(session_id), read_only=True)
    limits = history.info.limits
    start = None
    if history.base_version:  # pruned: the history starts from what prune kept
        base = initial_state(history)
        start = Point(base.version, base.total_tokens, base.summary_tokens)
    timeline = session_timeline(replay(history), limits.hard, limits.target, start=start)
    if as_json:
        print_json({"session": session_id, **dataclasses.asdict(timeline)})
        return
    click.echo(draw(timeline, session_id))


def draw(timeline: Timeline, title: str) -> str:
    """The picture as text (plotext, no colour codes)."""
    import plotext as plt  # only this command draws: not on every CLI start-up

    plt.clear_figure()
    width = shutil.get_terminal_size((PIPED_WIDTH, HEIGHT)).columns
    plt.plotsize(width, HEIGHT)
    plt.theme("clear")
    versions = [point.version for point in timeline.points] or [0]
    plt.plot(versions, [point.tokens for point in timeline.points] or [0], label="total tokens")
    plt.plot(versions, [p.summary_tokens for p in timeline.points] or [0], label="summary")
    plt.hline(timeline.hard)
    plt.hline(timeline.target)
    for mark in timeline.compactions:
        plt.scatter([mark.version], [mark.after_tokens], marker="x")
    plt.title(
        f"{title}: {timeline.versions} versions, {len(timeline.compactions)} compactions "
        f"(hard {timeline.hard}, target {timeline.target})"
    )
    plt.xlabel("version")
    picture = plt.build()
    legend = "\n".join(
        f"  compaction #{m.number} at v{m.version}: {m.before_tokens} -> {m.after_tokens} tokens "
        f"(dropped {m.dropped}, summarized {m.summarized}, evicted {m.evicted})"
        for m in timeline.compactions
    )
    return f"{picture}\n{legend}" if legend else picture
