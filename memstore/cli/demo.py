"""``memstore demo``: a scripted incident investigation, compacted live, fully offline.

It runs on the ``--db`` database with the extractive summarizer and exact tiktoken counts,
with limits small enough that the session compacts several times, and prints each
compaction as it happens: tokens before and after, and what was dropped, summarized or
evicted. No API key and no network are needed.
"""

from __future__ import annotations

import asyncio
import shutil
import sys
from pathlib import Path

import click
from rich.console import Console
from rich.padding import Padding
from rich.panel import Panel
from rich.table import Table
from rich.text import Text

from memstore import MemoryStore, SessionMemory
from memstore.cli.output import console, is_terminal, preview
from memstore.core.records import CompactionReport
from memstore.core.tokens import TiktokenEstimator
from memstore.core.validation import validate_session_id
from memstore.core.values import MemoryItem, MemoryLimits, Priority
from memstore.extraction.summarizer import ExtractiveSummarizer

#: Small limits, so a 24-turn script compacts a few times (defaults are 1500 / 900 / 4).
DEMO_LIMITS = MemoryLimits(hard=440, target=300, keep_recent=4)

# (role, kind, priority, content): an on-call engineer and an agent chase checkout latency.
SCRIPT: list[tuple[str, str, str, str]] = [
    (
        "user",
        "USER_MESSAGE",
        "NORMAL",
        "Hi! Checkout is slow since this morning's deploy. "
        "Investigate checkout latency and remember that payment-service is involved.",
    ),
    (
        "user",
        "USER_MESSAGE",
        "HIGH",
        "Constraint: never restart payment-service during "
        "business hours without paging the payments on-call first.",
    ),
    (
        "tool",
        "TOOL_OBSERVATION",
        "LOW",
        "GET /healthz on checkout-service returned 200 OK "
        "in 12ms. GET /healthz on cart-service returned 200 OK in 9ms.",
    ),
    (
        "tool",
        "TOOL_OBSERVATION",
        "HIGH",
        "payment-service p95 latency is 1720ms and is degraded (SLO 400ms); error rate 0.4%.",
    ),
    (
        "assistant",
        "ASSISTANT_MESSAGE",
        "NORMAL",
        "I will trace the downstream dependency path "
        "of payment-service before naming a root cause.",
    ),
    (
        "tool",
        "TOOL_OBSERVATION",
        "LOW",
        "kubectl get pods -n payments: 6/6 Running, 0 restarts in the last 24h, all nodes Ready.",
    ),
    (
        "tool",
        "TOOL_OBSERVATION",
        "NORMAL",
        "Trace sample 4f2a: checkout -> payment-service "
        "(1650ms) -> fraud-service (1480ms) -> postgres-fraud (1410ms).",
    ),
    (
        "user",
        "USER_MESSAGE",
        "NORMAL",
        "Thanks. Also verify whether fraud-service is "
        "contributing to the payment delay. Is the fraud model new?",
    ),
    (
        "tool",
        "TOOL_OBSERVATION",
        "LOW",
        "Deploy log: fraud-service v2.31.0 rolled out at "
        "08:02 UTC; checkout-service unchanged since Tuesday; cart-service unchanged.",
    ),
    (
        "tool",
        "TOOL_OBSERVATION",
        "HIGH",
        "postgres-fraud: query 'score_lookup' switched to a "
        "sequential scan at 08:03 UTC; 38k rows read per call, index idx_score_user unused.",
    ),
    (
        "developer",
        "DECISION",
        "HIGH",
        "Root-cause hypothesis: fraud-service v2.31.0 ships a "
        "query that bypasses idx_score_user; payment latency follows from it.",
    ),
    (
        "assistant",
        "ASSISTANT_MESSAGE",
        "NORMAL",
        "The slow path is fraud-service's score "
        "lookup. I propose rolling fraud-service back to v2.30.4; payment-service stays up.",
    ),
    (
        "user",
        "USER_MESSAGE",
        "NORMAL",
        "Sounds good. Roll back fraud-service, but keep the "
        "new fraud rules table; legal needs it in place by Friday.",
    ),
    (
        "tool",
        "TOOL_OBSERVATION",
        "LOW",
        "helm history fraud-service: 14 revisions listed, "
        "current v2.31.0 (rev 14), previous v2.30.4 (rev 13).",
    ),
    (
        "tool",
        "TOOL_OBSERVATION",
        "NORMAL",
        "helm rollback fraud-service 13: release rolled "
        "back to v2.30.4 at 09:41 UTC; 6/6 pods Ready at 09:43 UTC.",
    ),
    (
        "developer",
        "DECISION",
        "NORMAL",
        "Keep the fraud_rules_2024 table and its migration; "
        "only the service binary was rolled back.",
    ),
    (
        "tool",
        "TOOL_OBSERVATION",
        "HIGH",
        "payment-service p95 latency back to 310ms at 09:50 "
        "UTC; fraud-service p95 95ms; checkout conversion recovering.",
    ),
    (
        "user",
        "USER_MESSAGE",
        "NORMAL",
        "Great. What should the fraud team change before they redeploy v2.31?",
    ),
    (
        "assistant",
        "ASSISTANT_MESSAGE",
        "NORMAL",
        "They should restore the predicate on "
        "user_id so score_lookup uses idx_score_user, and add a query-plan check to CI.",
    ),
    (
        "tool",
        "TOOL_OBSERVATION",
        "LOW",
        "Synthetic checkout probe: 20/20 runs passed, median 410ms end to end.",
    ),
    (
        "user",
        "USER_MESSAGE",
        "NORMAL",
        "Write the incident summary for the status page. "
        "Keep it under 120 words and do not name individual engineers.",
    ),
    (
        "assistant",
        "ASSISTANT_MESSAGE",
        "NORMAL",
        "Status page draft: Between 08:02 and "
        "09:50 UTC checkout was slow because a fraud-check release caused slow database "
        "lookups. We rolled it back; latency is normal again and no payments were lost.",
    ),
]

#: The demo's width when piped (into a file, a pager): a reader's, not a script's.
DEMO_PIPED_WIDTH = 100
#: Fewer characters than this beside an item's figures say too little to recognise it: the
#: preview goes on the lines below instead (a 60-column terminal leaves 8).
MIN_PREVIEW_CHARS = 30
#: Below its figures, a preview is indented this much and fills at most this many lines.
NARROW_INDENT, NARROW_PREVIEW_LINES = 6, 2


def _describe(items: list[MemoryItem], ids: dict[str, str], fate: str) -> str:
    chosen = [i for i in items if ids.get(i.id) == fate]
    if not chosen:
        return "none"
    return "; ".join(f"#{i.seq} {preview(i.content, width=48)}" for i in chosen)


def _report_panel(report: CompactionReport, history: list[MemoryItem]) -> Panel:
    table = Table.grid(padding=(0, 1))
    table.add_row(
        "tokens",
        f"{report.before_tokens} -> {report.after_tokens} "
        f"(hard {DEMO_LIMITS.hard}, target {DEMO_LIMITS.target})",
    )
    for fate, label in (
        ("dropped", "dropped"),
        ("summarized", "summarized"),
        ("evicted", "evicted"),
    ):
        table.add_row(label, _describe(history, dict(report.removed), fate))
    table.add_row("summary", f"{report.summary_action}, {report.summary_tokens or 0} tokens")
    if report.summary_error:
        table.add_row("error", report.summary_error)
    return Panel(
        table,
        title=f"compaction #{report.compaction_count}",
        title_align="left",
        border_style="yellow",
    )


def _print_item(out: Console, head: str, content: str) -> None:
    """One appended item: its figures, then a preview of its content cut at a word (rich's
    own crop would cut mid-word): on the same line when there is room, else below, indented
    and wrapped at words."""
    room = out.width - len(head)
    if room >= MIN_PREVIEW_CHARS:
        out.print(head + preview(content, width=room), no_wrap=True, markup=False)
        return
    out.print(head.rstrip(), no_wrap=True, markup=False)
    shown = preview(content, width=NARROW_PREVIEW_LINES * (out.width - NARROW_INDENT))
    out.print(Padding(Text(shown), (0, 0, 0, NARROW_INDENT)))


async def _free_session_id(store: MemoryStore, base: str) -> str:
    taken = {info.id for info in await store.sessions()}
    if base not in taken:
        return base
    n = 2
    while f"{base}-{n}" in taken:
        n += 1
    return f"{base}-{n}"


async def run_demo(db: str, session: str | None, out: Console) -> SessionMemory:
    """Play :data:`SCRIPT` into a new session and print what memory does."""
    async with MemoryStore.open(db) as store:
        session_id = session or await _free_session_id(store, "incident-demo")
        estimator = TiktokenEstimator()
        memory = store.session(
            session_id,
            limits=DEMO_LIMITS,
            estimator=estimator,
            summarizer=ExtractiveSummarizer(estimator=estimator),
        )
        history: list[MemoryItem] = []
        compacted: list[CompactionReport] = []  # shown after the append that set them off
        memory.add_observer(compacted.append)
        out.print(
            f"[bold]memstore demo[/bold]: session [cyan]{session_id}[/cyan] in {db} "
            f"(estimator {estimator.name}, summarizer extractive)"
        )
        for role, kind, priority, content in SCRIPT:
            item = await memory.add(role, content, kind=kind, priority=Priority[priority])
            history.append(item)
            total = await memory.estimated_tokens()
            head = (
                f"  +#{item.seq:<3} {kind:<17} {priority:<6} {item.estimated_tokens:>3} "
                f"tok  total {total:>4}  "
            )
            _print_item(out, head, content)
            for report in compacted:
                out.print(_report_panel(report, history))
            compacted.clear()
        out.print(
            Panel(
                Text(await memory.summary() or "(none)"),
                title="final summary",
                title_align="left",
                border_style="green",
            )
        )
        reports = await memory.reports()
        out.print(
            f"{len(await memory.items())} active items, {await memory.estimated_tokens()} "
            f"tokens, {len(reports)} compactions; nothing was deleted."
        )
        db_flag = "" if db == "memstore.db" else f" --db {db}"
        # soft_wrap: the command must stay on one line to be copied.
        out.print(
            f"Inspect it: [bold]{invocation()}{db_flag} show {session_id} --all[/bold]",
            soft_wrap=True,
        )
        return memory


def invocation() -> str:
    """How to run memstore again from here: ``memstore`` when that is on PATH and is this
    one, else the path this one was started by (``.venv/bin/memstore``), or ``python -m``."""
    started = Path(sys.argv[0])
    on_path = shutil.which("memstore")
    if started.name == "memstore" and started.exists():  # this executable
        if on_path is not None and Path(on_path).resolve() == started.resolve():
            return "memstore"
        try:
            return str(started.resolve().relative_to(Path.cwd()))
        except ValueError:
            return str(started.resolve())
    # Started another way (python -m memstore, or from Python): memstore if it is on PATH.
    return "memstore" if on_path is not None else f"{Path(sys.executable).name} -m memstore"


@click.command("demo")
@click.option("--session", "session", default=None, help="Session id (default: a new one).")
@click.pass_context
def demo(ctx: click.Context, session: str | None) -> None:
    """Run a scripted incident investigation offline and watch memory compact."""
    if session is not None:
        validate_session_id(session)
    # A show for people: piped, it keeps a reader's width instead of a table's whole rows.
    out = console() if is_terminal() else Console(highlight=False, width=DEMO_PIPED_WIDTH)
    asyncio.run(run_demo(ctx.find_root().obj, session, out))
