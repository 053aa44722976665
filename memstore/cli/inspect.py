"""Read-only commands: ``sessions``, ``show``, ``reports``, ``input``."""

from __future__ import annotations

import dataclasses
from typing import TYPE_CHECKING, Any

import click
from rich import box
from rich.console import Console
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from memstore import MemoryStore
from memstore.cli.fork import parent_label
from memstore.cli.output import (
    cell,
    console,
    hidden_note,
    is_narrow,
    json_option,
    limit_option,
    lines,
    listing,
    narrow_listing,
    newest,
    preview,
    print_json,
    run_with_store,
)
from memstore.core.records import CompactionReport, SessionInfo
from memstore.core.values import MemoryItem
from memstore.errors import SessionNotFoundError

if TYPE_CHECKING:
    from memstore import LeaseHolder
    from memstore.core.input_counts import CountFit


def items_table(title: str, items: list[MemoryItem], *, full: bool, fates: bool) -> Table:
    """A table of items (seq, kind, priority, tokens, content; fate columns if asked)."""
    if is_narrow():
        return _narrow_items_table(title, items, full=full, fates=fates)
    table = Table(title=title, title_justify="left", expand=False)
    table.add_column("seq", justify="right", overflow="fold")
    table.add_column("kind")
    table.add_column("priority")
    table.add_column("tokens", justify="right")
    if fates:
        table.add_column("fate")
        table.add_column("compaction", justify="right")
    table.add_column("content", overflow="fold")
    for item in items:
        row = [str(item.seq), kind_label(item), item.priority.name, str(item.estimated_tokens)]
        if fates:
            row += [item.fate.value if item.fate else "", f"#{item.removed_by}"]
        table.add_row(*row, cell(item.content, full))
    return table


def print_items(
    out: Console,
    title: str,
    items: list[MemoryItem],
    limit: int | None,
    *,
    full: bool,
    fates: bool = False,
) -> None:
    """:func:`items_table` of the newest ``limit`` items (:func:`~memstore.cli.output.newest`),
    then a line saying how many older ones it left out."""
    listed, hidden = newest(items, limit)
    if hidden:
        title += f" (the newest {len(listed):,} of {len(items):,})"
    out.print(items_table(title, listed, full=full, fates=fates))
    if hidden:
        out.print(Text(hidden_note(hidden, title.split(" (")[0])))


def _narrow_items_table(title: str, items: list[MemoryItem], *, full: bool, fates: bool) -> Table:
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False)
    table.add_column("seq", justify="right", no_wrap=True)
    table.add_column("item", overflow="fold", max_width=24)
    table.add_column("content", overflow="fold", ratio=1, min_width=20)
    for item in items:
        about = f"{kind_label(item)}\n{item.priority.name}, {item.estimated_tokens} tokens"
        if fates and item.fate:
            about += f"\n{item.fate.value} by #{item.removed_by}"
        table.add_row(str(item.seq), Text(about), cell(item.content, full))
    return table


def kind_label(item: MemoryItem) -> str:
    """The kind, and for a carried Responses item what it is: ``TOOL_OBSERVATION
    (function_call_output call_4)``."""
    if item.item_type is None:
        return item.kind.value
    what = item.item_type if item.item_type != "message" else f"{item.role.value} message"
    return f"{item.kind.value} ({what}{' ' + item.call_id if item.call_id else ''})"


def totals_line(info: SessionInfo) -> str:
    """Tokens against limits, items and compactions, on one line."""
    limits = info.limits
    return (
        f"tokens {info.total_tokens} (hard {limits.hard}, target {limits.target}, "
        f"keep recent {limits.keep_recent}) · items {info.active_items} active of "
        f"{info.items_total} · compactions {info.compaction_count} · version {info.version} · "
        f"estimator {info.estimator}" + ("" if info.scope is None else f" · scope {info.scope}")
    )


@click.command("sessions")
@json_option
@click.pass_context
def list_sessions(ctx: click.Context, as_json: bool) -> None:
    """List sessions: active items, tokens against limits, compactions, last update."""
    infos = run_with_store(ctx, lambda store: store.sessions(), read_only=True)
    if as_json:
        print_json([info.to_dict() for info in infos])
        return
    if not infos:
        console().print("no sessions yet")
        return
    console().print(_narrow_sessions_table(infos) if is_narrow() else _sessions_table(infos))


def _sessions_table(infos: list[SessionInfo]) -> Table:
    table = listing(
        "sessions",
        [
            ("session", "left"),
            ("scope", "left"),
            ("active items", "right"),
            ("tokens", "right"),
            ("hard / target", "right"),
            ("compactions", "right"),
            ("updated (UTC)", "left"),
            ("forked from", "left"),
        ],
    )
    for info in infos:
        table.add_row(
            info.id,
            info.scope or "-",
            f"{info.active_items} of {info.items_total}",
            str(info.total_tokens),
            f"{info.limits.hard} / {info.limits.target}",
            str(info.compaction_count),
            info.updated_at.strftime("%Y-%m-%d %H:%M:%S"),
            parent_label(info),
        )
    return table


def _narrow_sessions_table(infos: list[SessionInfo]) -> Table:
    table = narrow_listing("sessions", "session", "state")
    for info in infos:
        forked = f"forked from {parent_label(info)}" if info.parent_id is not None else None
        head = lines(info.id, f"scope {info.scope}" if info.scope else None, forked)
        state = lines(
            f"{info.active_items} of {info.items_total} items active",
            f"{info.total_tokens} tokens (hard {info.limits.hard}, target {info.limits.target})",
            f"{info.compaction_count} compaction{'' if info.compaction_count == 1 else 's'}",
            f"updated {info.updated_at.strftime('%Y-%m-%d %H:%M:%S')} UTC",
        )
        table.add_row(head, state)
    return table


@dataclasses.dataclass(frozen=True)
class _Shown:
    info: SessionInfo
    summary: str | None
    active: list[MemoryItem]
    forgotten: list[MemoryItem]
    holder: LeaseHolder | None
    counts: CountFit | None


async def _load_show(store: MemoryStore, session_id: str, with_forgotten: bool) -> _Shown:
    memory = await store.attach(session_id)
    info = await store.session_info(session_id)
    # One snapshot for the items and the summary: each read of it reads every active item.
    snapshot = await memory.snapshot()
    summary, active = (None, []) if snapshot is None else (snapshot.summary, snapshot.items)
    forgotten = await memory.forgotten_items() if with_forgotten else []
    holder = await store.lease_holder(session_id)
    counts = await store.input_counts(session_id)
    return _Shown(info, summary, list(active), forgotten, holder, counts)


def lease_line(holder: LeaseHolder) -> str:
    """Who holds the compaction lease, and how its time stands."""
    where = f"pid {holder.pid} on {holder.host}" if holder.pid is not None else "unknown process"
    if holder.expires_in > 0:
        return f"compaction lease: held by {holder.owner} ({where}), {holder.expires_in:.1f}s left"
    return (
        f"compaction lease: held by {holder.owner} ({where}), expired {-holder.expires_in:.1f}s "
        "ago and never released (its holder died or stalled; the next compaction takes it)"
    )


@click.command("show")
@click.argument("session_id", metavar="SESSION")
@click.option("--all", "show_all", is_flag=True, help="Also list forgotten items and their fate.")
@click.option("--full", is_flag=True, help="Print whole contents instead of previews.")
@click.option(
    "--timeline", is_flag=True, help="Draw the history: tokens per version, each compaction."
)
@limit_option
@json_option
@click.pass_context
def show_session(
    ctx: click.Context,
    session_id: str,
    show_all: bool,
    full: bool,
    timeline: bool,
    limit: int | None,
    as_json: bool,
) -> None:
    """Show a session's summary, active items and totals.

    Tables list the newest 100 active (and, with --all, forgotten) items and say how many
    older ones they leave out; --limit N|all changes that (--json lists all unless given).
    """
    if timeline:
        from memstore.cli.timeline import show_timeline

        show_timeline(ctx, session_id, as_json)
        return
    shown = run_with_store(
        ctx, lambda store: _load_show(store, session_id, show_all), read_only=True
    )
    info, summary, active, forgotten, holder = (
        shown.info, shown.summary, shown.active, shown.forgotten, shown.holder
    )  # fmt: skip
    if as_json:
        listed, hidden = newest(active, limit, as_json=True)
        out: dict[str, Any] = {
            "session": info.to_dict(),
            "summary": summary,
            "items": [item.to_dict() for item in listed],
            "lease": None if holder is None else dataclasses.asdict(holder),
            "input_counts": None if shown.counts is None else shown.counts.to_dict(),
        }
        if hidden:
            out["items_hidden"] = hidden
        if show_all:
            listed, hidden = newest(forgotten, limit, as_json=True)
            out["forgotten"] = [item.to_dict() for item in listed]
            if hidden:
                out["forgotten_hidden"] = hidden
        print_json(out)
        return
    out_console = console()
    out_console.print(Text(f"Session {info.id}", style="bold"))
    if info.parent_id is not None:
        out_console.print(Text(f"parent: {parent_label(info)}"))
    out_console.print(
        Panel(
            Text(summary or "(no summary yet)"), title="summary", title_align="left", expand=False
        )
    )
    print_items(out_console, "active items", active, limit, full=full)
    if show_all:
        print_items(out_console, "forgotten items", forgotten, limit, full=full, fates=True)
    out_console.print(totals_line(info))
    if shown.counts is not None:
        out_console.print(Text(shown.counts.line()))
    if holder is not None:
        out_console.print(lease_line(holder))


def reports_table(reports: list[CompactionReport]) -> Table:
    """One row per compaction report (``--json`` has every field)."""
    if is_narrow():
        return _narrow_reports_table(reports)
    table = Table(title="compaction reports", title_justify="left")
    for name in ("#", "trigger", "tokens", "dropped", "summarized", "evicted", "summary", "by"):
        table.add_column(name)
    for r in reports:
        table.add_row(
            str(r.compaction_count),
            r.trigger,
            f"{r.before_tokens}->{r.after_tokens}",
            str(r.items_dropped),
            str(r.items_summarized),
            str(r.items_evicted),
            Text(_summary_cell(r)),
            f"{r.summarizer or '-'} @ {r.worker_host}:{r.worker_pid}"
            + (f", took over {r.took_over_from}'s abandoned lease" if r.took_over_from else ""),
        )
    return table


def _summary_cell(r: CompactionReport) -> str:
    summary = f"{r.summary_action} ({r.summary_tokens or 0})"
    if r.summary_error:
        summary += f"; error: {preview(r.summary_error)}"
    return summary


def _narrow_reports_table(reports: list[CompactionReport]) -> Table:
    table = Table(
        title="compaction reports (d/s/e: dropped, summarized, evicted; --json: all fields)",
        title_justify="left",
        box=box.SIMPLE_HEAD,
        pad_edge=False,
    )
    table.add_column("#", justify="right", no_wrap=True)
    table.add_column("tokens", no_wrap=True)
    table.add_column("d/s/e", no_wrap=True)
    table.add_column("trigger, summary", overflow="fold", ratio=1)
    for r in reports:
        table.add_row(
            str(r.compaction_count),
            f"{r.before_tokens}->{r.after_tokens}",
            f"{r.items_dropped}/{r.items_summarized}/{r.items_evicted}",
            Text(f"{r.trigger}; summary {_summary_cell(r)}"),
        )
    return table


@click.command("reports")
@click.argument("session_id", metavar="SESSION")
@json_option
@click.pass_context
def show_reports(ctx: click.Context, session_id: str, as_json: bool) -> None:
    """List a session's compaction reports, oldest first."""

    async def load(store: MemoryStore) -> list[CompactionReport]:
        return await (await store.attach(session_id)).reports()

    reports = run_with_store(ctx, load, read_only=True)
    if as_json:
        print_json([report.to_dict() for report in reports])
        return
    console().print(reports_table(reports) if reports else "no compactions yet")


@click.command("input")
@click.argument("session_id", metavar="SESSION")
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="SCOPE",
    help="Include this scope's long-term entries and recall across its sessions, as a "
    "session of that scope does; a SESSION that does not exist yet gets the input a new "
    "session of the first --scope would start with, and nothing is written (repeatable).",
)
@click.option(
    "--recall",
    metavar="QUERY",
    default=None,
    help="Also recall what left working memory and matches QUERY, as `chat` does.",
)
@click.pass_context
def show_input(
    ctx: click.Context, session_id: str, scopes: tuple[str, ...], recall: str | None
) -> None:
    """Print the exact Responses API input the session would send now, as JSON."""

    async def load(store: MemoryStore) -> list[dict[str, Any]]:
        memory = await store.preview(session_id, scopes)
        return await memory.build_model_input(recall=recall)

    try:
        print_json(run_with_store(ctx, load, read_only=True))
    except SessionNotFoundError as missing:  # without --scope: a preview of nothing
        raise click.ClickException(
            f"session {missing.session_id!r} does not exist (with --scope SCOPE: the input a "
            "new session of that scope would start with)"
        ) from None
