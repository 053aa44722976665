"""``memstore show SESSION``: the summary, the active items and the totals."""

from __future__ import annotations

from typing import Any

import click
from rich.panel import Panel
from rich.table import Table

from memstore.cli.output import console, json_option, preview, print_json, run_with_store
from memstore.model import MemoryItem, SessionInfo
from memstore.store import MemoryStore


async def _load(
    store: MemoryStore, session_id: str, with_forgotten: bool
) -> tuple[SessionInfo, str | None, list[MemoryItem], list[MemoryItem]]:
    memory = await store.attach(session_id)
    info = await store.session_info(session_id)
    active = await memory.items()
    forgotten = await memory.forgotten_items() if with_forgotten else []
    return info, await memory.summary(), active, forgotten


def items_table(title: str, items: list[MemoryItem], *, full: bool, fates: bool) -> Table:
    """A table of items (seq, kind, priority, tokens, content; fate columns if asked)."""
    table = Table(title=title, title_justify="left", expand=False)
    table.add_column("seq", justify="right")
    table.add_column("kind")
    table.add_column("priority")
    table.add_column("tokens", justify="right")
    if fates:
        table.add_column("fate")
        table.add_column("compaction", justify="right")
    table.add_column("content", overflow="fold")
    for item in items:
        row = [str(item.seq), item.kind.value, item.priority.name, str(item.estimated_tokens)]
        if fates:
            row += [item.fate.value if item.fate else "", f"#{item.removed_by}"]
        table.add_row(*row, preview(item.content, full))
    return table


def totals_line(info: SessionInfo) -> str:
    """Tokens against limits, items and compactions, on one line."""
    limits = info.limits
    return (
        f"tokens {info.total_tokens} (hard {limits.hard}, target {limits.target}, "
        f"keep recent {limits.keep_recent}) · items {info.active_items} active of "
        f"{info.items_total} · compactions {info.compaction_count} · version {info.version} · "
        f"estimator {info.estimator}"
    )


@click.command("show")
@click.argument("session_id", metavar="SESSION")
@click.option("--all", "show_all", is_flag=True, help="Also list forgotten items and their fate.")
@click.option("--full", is_flag=True, help="Print whole contents instead of previews.")
@json_option
@click.pass_context
def show(ctx: click.Context, session_id: str, show_all: bool, full: bool, as_json: bool) -> None:
    """Show a session's summary, active items and totals."""
    info, summary, active, forgotten = run_with_store(
        ctx, lambda store: _load(store, session_id, show_all)
    )
    if as_json:
        out: dict[str, Any] = {
            "session": info.to_dict(),
            "summary": summary,
            "items": [item.to_dict() for item in active],
        }
        if show_all:
            out["forgotten"] = [item.to_dict() for item in forgotten]
        print_json(out)
        return
    out_console = console()
    out_console.print(f"[bold]Session {info.id}[/bold]")
    out_console.print(
        Panel(summary or "(no summary yet)", title="summary", title_align="left", expand=False)
    )
    out_console.print(items_table("active items", active, full=full, fates=False))
    if show_all:
        out_console.print(items_table("forgotten items", forgotten, full=full, fates=True))
    out_console.print(totals_line(info))
