"""Commands that change working memory: ``add`` and ``compact``."""

from __future__ import annotations

import sys
from typing import Any

import click
from rich.table import Table

from memstore import MemoryStore
from memstore.cli.inspect import reports_table
from memstore.cli.output import (
    console,
    is_narrow,
    json_option,
    lines,
    narrow_listing,
    plain,
    print_json,
    run_with_store,
)
from memstore.core.ltm_entries import validate_scope
from memstore.core.policy import CompactionPlan
from memstore.core.records import CompactionReport
from memstore.core.tokens import (
    TiktokenEstimator,
    WordEstimator,
)
from memstore.core.values import MemoryItem, MemoryKind, MemoryRole, Priority
from memstore.errors import MemstoreError

ESTIMATORS = {"tiktoken": TiktokenEstimator, "words": WordEstimator}


def read_stdin(ctx: click.Context) -> str:
    """The text to add from standard input; on a terminal, say how to end it. Ctrl-C cancels
    (exit 130, nothing added), never "content must not be empty"."""
    if sys.stdin.isatty():
        click.echo("Type the text, then Ctrl-D on a line of its own (Ctrl-C cancels).", err=True)
    try:
        return sys.stdin.read()
    except KeyboardInterrupt:
        click.echo("\nCancelled: nothing was added.", err=True)
        ctx.exit(130)


@click.command("add")
@click.argument("session_id", metavar="SESSION")
@click.argument("text", required=False)
@click.option(
    "--role", type=click.Choice([r.value for r in MemoryRole]), default="user", show_default=True
)
@click.option(
    "--kind",
    type=click.Choice([k.value for k in MemoryKind], case_sensitive=False),
    default=None,
    help="Default: from the role.",
)
@click.option(
    "--priority",
    # Shown in lower case, as click shows case-insensitive choices; any case is accepted.
    type=click.Choice([p.name.lower() for p in Priority], case_sensitive=False),
    default="normal",
    show_default=True,
)
@click.option("--idempotency-key", default=None, help="Makes a retried add safe.")
@click.option(
    "--scope",
    default=None,
    metavar="SCOPE",
    help="Start SESSION in this long-term scope (user:alice): its entries, recall across "
    "the scope's sessions, consolidation. An existing session keeps the scope it started in.",
)
@click.option(
    "--estimator",
    type=click.Choice(sorted(ESTIMATORS)),
    default="tiktoken",
    show_default=True,
    help="For a new session only (an existing one keeps its own).",
)
@json_option
@click.pass_context
def add_item(
    ctx: click.Context,
    session_id: str,
    text: str | None,
    role: str,
    kind: str | None,
    priority: str,
    idempotency_key: str | None,
    scope: str | None,
    estimator: str,
    as_json: bool,
) -> None:
    """Append TEXT (or standard input when TEXT is omitted or '-') to SESSION.

    A new session gets the limits of MEMORY_HARD_LIMIT / MEMORY_TARGET_LIMIT /
    MEMORY_KEEP_RECENT and the extractive summarizer; compaction runs as in the API (in a
    scoped session, consolidation after it too).
    """
    if scope is not None:
        validate_scope(scope)
    content = read_stdin(ctx) if text in (None, "-") else text

    async def run(
        store: MemoryStore,
    ) -> tuple[MemoryItem, int | None, list[CompactionReport], str | None, bool]:
        # An existing session keeps its estimator; the one named counts a new session.
        counter = ESTIMATORS[estimator]()
        memory = await store.attach(session_id, create=True, estimator=counter, scope=scope)
        seen: list[CompactionReport] = []
        memory.add_observer(seen.append)
        before = (await memory.snapshot()) if idempotency_key else None
        item = await memory.add(
            role,
            content,
            kind=kind,
            priority=priority.upper(),  # type: ignore[arg-type]
            idempotency_key=idempotency_key,
        )
        # The item is stored from here on: nothing that fails after this is the add's failure
        # (a script retrying on exit 1 would store it twice).
        # A retry of a key already used: the item stored then, nothing appended now.
        again = before is not None and item.version <= before.version
        try:
            return item, await memory.estimated_tokens(), seen, None, again
        except MemstoreError as error:
            failed = f"the item is stored, but reading the session failed: {error}"
            return item, None, seen, failed, again

    item, total, reports, after, again = run_with_store(ctx, run, create=True)
    if as_json:
        print_json(
            {
                "item": item.to_dict(),
                "total_tokens": total,
                "compactions": [r.to_dict() for r in reports],
                "warning": after,
                "already_stored": again,
            }
        )
    else:
        out = console()
        shown_total = "unknown" if total is None else total
        tokens = f"{item.estimated_tokens} token{'' if item.estimated_tokens == 1 else 's'}"
        what = (
            f"already stored as #{item.seq} (idempotency key {idempotency_key}); nothing added"
            if again
            else f"added #{item.seq}"
        )
        # One line, never wrapped: a script greps it for the seq.
        click.echo(
            f"{what} {item.kind.value} {item.priority.name} ({tokens}); session total {shown_total}"
        )
        if reports:
            out.print(reports_table(reports))
    if after is not None:
        click.echo(f"Warning: {after}", err=True)


def plan_table(plan: CompactionPlan) -> Table:
    """What a compaction plan would remove, item by item."""
    title = "planned removals (dry run: nothing written)"
    by_id = {item.id: item for item in plan.snapshot.items}
    removed = sorted(plan.removed.items(), key=lambda pair: by_id[pair[0]].seq)
    if is_narrow():
        narrow = narrow_listing(title, "item", "content")
        for item_id, fate in removed:
            item = by_id[item_id]
            about = lines(f"#{item.seq} {fate}", f"{item.estimated_tokens} tokens")
            narrow.add_row(about, plain(item.content))
        return narrow
    table = Table(title=title, title_justify="left")
    table.add_column("seq", justify="right")
    table.add_column("fate")
    table.add_column("tokens", justify="right")
    table.add_column("content")
    for item_id, fate in removed:
        item = by_id[item_id]
        table.add_row(str(item.seq), fate, str(item.estimated_tokens), plain(item.content))
    return table


def plan_to_dict(plan: CompactionPlan) -> dict[str, Any]:
    """A JSON-ready description of a plan."""
    return {
        "before_tokens": plan.before_tokens,
        "after_tokens": plan.after_tokens,
        "removed": dict(plan.removed),
        "kept": [item.id for item in plan.kept],
        "summary": plan.summary,
        "summary_action": plan.summary_action,
        "summary_tokens": plan.summary_tokens,
        "summary_error": plan.summary_error,
    }


@click.command("compact")
@click.argument("session_id", metavar="SESSION")
@click.option("--dry-run", is_flag=True, help="Print the plan and write nothing.")
@json_option
@click.pass_context
def compact_session(ctx: click.Context, session_id: str, dry_run: bool, as_json: bool) -> None:
    """Compact SESSION now: drop noise, summarize unprotected items, enforce the target."""

    async def run(store: MemoryStore) -> CompactionPlan | CompactionReport | None:
        # An operator's compaction distils nothing: `memstore consolidate` does, when asked.
        memory = await store.attach(session_id, consolidate=False)
        if dry_run:
            return await memory.plan_compaction()
        # An operator is told at once who is compacting (LeaseHeldError), not kept waiting.
        return await memory.compact(wait=False)

    outcome = run_with_store(ctx, run)
    if isinstance(outcome, CompactionPlan):
        if as_json:
            print_json({"dry_run": True, "plan": plan_to_dict(outcome)})
            return
        out = console()
        out.print(plan_table(outcome))
        out.print(
            f"tokens {outcome.before_tokens} -> {outcome.after_tokens}; summary "
            f"{outcome.summary_action}"
            + (f"; error: {outcome.summary_error}" if outcome.summary_error else "")
        )
        return
    if as_json:
        print_json({"dry_run": False, "report": outcome.to_dict() if outcome else None})
        return
    if outcome is None:
        console().print("nothing to compact")
    else:
        console().print(reports_table([outcome]))
