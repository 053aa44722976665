"""``memstore replay SESSION``: history in commit order, verified; ``--at``; what-if."""

from __future__ import annotations

import json
from dataclasses import asdict
from typing import Any

import click
from rich.table import Table
from rich.text import Text

from memstore.cli.inspect import print_items
from memstore.cli.output import (
    console,
    limit_option,
    newest,
    plain,
    preview,
    print_json,
    run_with_store,
    with_progress,
)
from memstore.core.records import SessionHistory
from memstore.core.replay import (
    Outcome,
    ReplayEvent,
    actual_outcome,
    replay,
    simulate,
    state_at,
    verify,
)
from memstore.core.tokens import estimator_from_name
from memstore.core.values import MemoryLimits
from memstore.errors import ValidationError
from memstore.extraction.summarizer import ExtractiveSummarizer
from memstore.render.input import build_input


def _event_json(event: ReplayEvent) -> dict[str, Any]:
    out: dict[str, Any] = {
        "event": event.kind,
        "version": event.version,
        "tokens": event.tokens,
        "active_items": event.items,
    }
    if event.item is not None:
        out["item"] = event.item.to_dict()
    if event.report is not None:
        out["report"] = event.report.to_dict()
        out["summary"] = event.summary
    if event.problems:
        out["problems"] = list(event.problems)
    return out


#: Histories longer than this print as aligned lines, not a table: rich lays a table out
#: whole before its first row, at about a millisecond a row (200k events: minutes).
MAX_TABLE_ROWS = 2000


def _detail(event: ReplayEvent) -> Text:
    if event.item is not None:
        item = event.item
        detail = Text(f"+#{item.seq} {item.kind.value} {item.priority.name}: ")
        detail.append(preview(item.content))
        return detail
    r = event.report
    assert r is not None
    taken_back = [f for f in r.removed.values() if f in ("popped", "cleared")]
    counts = (
        f"{taken_back[0]} {len(taken_back)}"  # pop_item / clear: the app's own removal
        if taken_back
        else f"dropped {r.items_dropped}, summarized {r.items_summarized}, "
        f"evicted {r.items_evicted}"
    )
    return Text(
        f"compaction #{r.compaction_count} ({r.trigger}): {counts}, summary {r.summary_action}"
    )


def _print_history(events: list[ReplayEvent]) -> None:
    if len(events) > MAX_TABLE_ROWS:
        _print_history_lines(events)
        return
    table = Table(title="history (commit order)", title_justify="left")
    for name in ("version", "event", "detail", "tokens", "items"):
        table.add_column(name)
    for event in events:
        table.add_row(
            str(event.version), event.kind, _detail(event), str(event.tokens), str(event.items)
        )
    console().print(table)


def _print_history_lines(events: list[ReplayEvent]) -> None:
    """The history as one aligned line per event (detail last): linear, streamed."""
    width = max(len("version"), len(str(events[-1].version)))
    numbers = max(len("tokens"), *(len(str(e.tokens)) for e in events))
    click.echo("history (commit order)")
    click.echo(f"{'version':>{width}}  {'event':<10}  {'tokens':>{numbers}}  {'items':>7}  detail")
    for event in with_progress(events, "replaying"):
        click.echo(
            f"{event.version:>{width}}  {event.kind:<10}  {event.tokens:>{numbers}}  "
            f"{event.items:>7}  {_detail(event).plain}"
        )


def _what_if(
    history: SessionHistory, hard: int | None, target: int | None, keep: int | None, summarizer: str
) -> tuple[Outcome, Outcome, MemoryLimits]:
    recorded = history.info.limits
    if hard is not None and target is None and recorded.target >= hard:
        raise click.BadParameter(
            f"the session's target ({recorded.target}) is not below a hard limit of {hard}: "
            "give --target-limit too",
            param_hint="'--target-limit'",
        )
    limits = MemoryLimits(
        hard=recorded.hard if hard is None else hard,
        target=recorded.target if target is None else target,
        keep_recent=recorded.keep_recent if keep is None else keep,
    )
    estimator = estimator_from_name(history.info.estimator)
    summarize = (
        ExtractiveSummarizer(estimator=estimator).summarize if summarizer == "extractive" else None
    )
    return actual_outcome(history), simulate(history, limits, estimator.count, summarize), limits


def _outcome_table(actual: Outcome, simulated: Outcome, limits: MemoryLimits) -> Table:
    table = Table(
        title=f"what-if: hard {limits.hard}, target {limits.target}, "
        f"keep recent {limits.keep_recent}",
        title_justify="left",
    )
    table.add_column("")
    table.add_column("actual")
    table.add_column("simulated")
    for name in ("tokens", "items_kept", "compactions", "dropped", "summarized", "evicted"):
        table.add_row(
            name.replace("_", " "), str(getattr(actual, name)), str(getattr(simulated, name))
        )
    table.add_row(
        "summary", plain(actual.summary or "(none)"), plain(simulated.summary or "(none)")
    )
    return table


@click.command("replay")
@click.argument("session_id", metavar="SESSION")
@click.option(
    "--at",
    "at_version",
    type=int,
    default=None,
    help="Show the working memory and model input as they were at VERSION.",
)
@click.option(
    "--hard-limit", type=click.IntRange(min=1), default=None, help="What-if: another hard limit."
)
@click.option(
    "--target-limit",
    type=click.IntRange(min=1),
    default=None,
    help="What-if: another target limit.",
)
@click.option(
    "--keep-recent", type=click.IntRange(min=0), default=None, help="What-if: another keep-recent."
)
@click.option(
    "--summarizer",
    type=click.Choice(["extractive", "none"]),
    default=None,
    help="What-if: re-summarize with this summarizer ('none': evict instead).",
)
@limit_option
@click.option("--json", "as_json", is_flag=True, help="Stream events as JSON lines.")
@click.pass_context
def replay_session(
    ctx: click.Context,
    session_id: str,
    at_version: int | None,
    hard_limit: int | None,
    target_limit: int | None,
    keep_recent: int | None,
    summarizer: str | None,
    limit: int | None,
    as_json: bool,
) -> None:
    """Replay SESSION's history in commit order and verify it equals the stored state.

    Exit 1 with the differences if it does not. With --at, show the past; with what-if
    options, re-run the policy over the recorded items and compare.
    """
    what_if = any(v is not None for v in (hard_limit, target_limit, keep_recent, summarizer))
    if at_version is not None and what_if:
        raise click.UsageError(
            "--at shows the session as it was; it does not combine with the what-if options "
            "(--hard-limit, --target-limit, --keep-recent, --summarizer)"
        )
    history = run_with_store(ctx, lambda store: store.history(session_id), read_only=True)
    forked_from = _forked_from(history)
    if forked_from is not None and not as_json:
        click.echo(forked_from)
    if at_version is not None:
        _show_at(history, at_version, limit, as_json)
        return
    if what_if:
        actual, simulated, limits = _what_if(
            history, hard_limit, target_limit, keep_recent, summarizer or "extractive"
        )
        if as_json:
            print_json(
                {
                    "event": "what-if",
                    "limits": asdict(limits),
                    "actual": asdict(actual),
                    "simulated": asdict(simulated),
                }
            )
        else:
            console().print(_outcome_table(actual, simulated, limits))
        return
    events = list(replay(history))
    problems = verify(history, events)
    if as_json:
        if history.info.parent_id is not None:
            click.echo(json.dumps(_fork_json(history)))
        for event in events:
            click.echo(json.dumps(_event_json(event), default=str))
        click.echo(
            json.dumps({"event": "verified" if not problems else "mismatch", "problems": problems})
        )
    else:
        _print_history(events)
        for problem in problems:
            click.echo(f"mismatch: {problem}", err=True)
        click.echo(
            "replay verified: the rebuilt working memory equals the stored state"
            if not problems
            else f"replay found {len(problems)} difference(s)"
        )
    if problems:
        ctx.exit(1)


def _forked_from(history: SessionHistory) -> str | None:
    info = history.info
    if info.parent_id is None:
        return None
    return (
        f"forked from {info.parent_id} at version {info.parent_version}: versions up to "
        f"{info.parent_version} are a copy of {info.parent_id}'s history"
    )


def _fork_json(history: SessionHistory) -> dict[str, Any]:
    info = history.info
    return {"event": "forked", "parent": info.parent_id, "parent_version": info.parent_version}


def _show_at(history: SessionHistory, version: int, limit: int | None, as_json: bool) -> None:
    if not history.base_version <= version <= history.info.version:
        raise ValidationError(
            "at",
            f"version must be within {history.base_version}..{history.info.version}, got {version}",
        )
    state = state_at(history, version)
    if as_json:
        items, hidden = newest(state.items, limit, as_json=True)
        print_json(
            {
                "parent": history.info.parent_id,
                "parent_version": history.info.parent_version,
                "version": version,
                "tokens": state.total_tokens,
                "summary": state.summary,
                "items": [i.to_dict() for i in items],
                "input": build_input(items, state.summary),
            }
            | ({"items_hidden": hidden} if hidden else {})
        )
        return
    out = console()
    out.print(
        f"[bold]{history.info.id} at version {version}[/bold]: {state.total_tokens} "
        f"tokens, {len(state.items)} active items, {state.compaction_count} compactions"
    )
    out.print(Text(f"summary: {state.summary or '(none)'}"))
    print_items(out, "active items", state.items, limit, full=False)
    items, hidden = newest(state.items, limit)
    # The input of the items listed: with items left out, its last messages, not all of it.
    out.print("model input:" if not hidden else "model input (the items listed):")
    print_json(build_input(items, state.summary))
