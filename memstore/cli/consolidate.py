"""``memstore consolidate SESSION [--dry-run]``: distil a session into long-term entries."""

from __future__ import annotations

from dataclasses import replace

import click
from rich.table import Table
from rich.text import Text

from memstore import MemoryStore, SessionOptions
from memstore.cli.output import (
    console,
    is_narrow,
    json_option,
    lines,
    narrow_listing,
    print_json,
    run_with_store,
)
from memstore.core.consolidation_report import ConsolidationReport


def decisions_table(report: ConsolidationReport) -> Table:
    """One row per proposed fact: what the run did with it, and why."""
    title = "would write (dry run)" if report.dry_run else f"consolidation {report.number}"
    if is_narrow():
        return _narrow_decisions_table(title, report)
    table = Table(title=title, title_justify="left")
    table.add_column("action")
    table.add_column("key", overflow="fold")
    table.add_column("fact", overflow="fold", ratio=1)
    table.add_column("items", overflow="fold")
    table.add_column("why skipped", overflow="fold")
    for decision in report.decisions:
        seqs = ",".join(str(seq) for seq in decision.seqs)
        table.add_row(
            decision.action,
            Text(decision.key),
            Text(decision.text),
            seqs,
            Text(decision.reason or ""),
        )
    return table


def _narrow_decisions_table(title: str, report: ConsolidationReport) -> Table:
    table = narrow_listing(title, "decision", "fact")
    for decision in report.decisions:
        seqs = ",".join(str(seq) for seq in decision.seqs)
        fact = Text(decision.text)
        if decision.reason:
            fact.append(f"\nskipped: {decision.reason}")
        table.add_row(lines(decision.action, decision.key, f"items {seqs}"), fact)
    return table


async def _consolidate(
    store: MemoryStore, session_id: str, scope: str | None, dry_run: bool
) -> ConsolidationReport:
    info = await store.session_info(session_id)
    if scope is None and info.scope is None:
        raise click.UsageError(
            f"session {info.id!r} belongs to no scope: name the scope its entries go to with "
            "--scope SCOPE (a session started with `memstore add SESSION --scope SCOPE` has "
            "its own)"
        )
    # Counted as recorded; in the scope named here, which a session of none lacks.
    recorded = SessionOptions(consolidate=False).of_record(info)
    memory = store.session(session_id, options=replace(recorded, scope=scope or info.scope))
    report = await memory.consolidate(dry_run=dry_run)
    assert report is not None  # an asked-for run waits for the lease or raises
    return report


@click.command("consolidate")
@click.argument("session_id", metavar="SESSION")
@click.option("--dry-run", is_flag=True, help="Show what a run would write; write nothing.")
@click.option(
    "--scope",
    default=None,
    help="The scope of a session that recorded none (a scoped session's own is used).",
)
@json_option
@click.pass_context
def consolidate_session(
    ctx: click.Context, session_id: str, dry_run: bool, scope: str | None, as_json: bool
) -> None:
    """Distil what SESSION said into long-term entries of its scope (--dry-run: preview)."""
    report = run_with_store(
        ctx, lambda store: _consolidate(store, session_id, scope, dry_run), read_only=dry_run
    )
    if as_json:
        print_json(report.to_dict())
        return
    out = console()
    if report.items:
        out.print(decisions_table(report))
    verb = "would write" if report.dry_run else "wrote"
    out.print(
        f"{len(report.items)} new item(s) read, {report.proposed} fact(s) proposed: {verb} "
        f"{len(report.written)}, superseded {len(report.superseded)}, skipped "
        f"{len(report.skipped)} · {report.entry_tokens} of {report.budget} tokens · "
        f"scope {report.scope}"
    )
