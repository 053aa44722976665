"""``memstore chat SESSION``: a Responses API agent whose memory is memstore, in a terminal.

The agent is :class:`memstore.model_side.agent.Agent`: the session is its working memory (user
turns, replies and its tool calls), the ``--scope`` long-term entries are in its model input, and
the model gets ``remember(key, value)`` and ``recall(key)`` over that scope, and
``search_memory(query)`` over the session's history. Each turn's input also recalls what left
working memory and matches the user's message (``--no-recall``: not). Compactions are shown as they
happen.

The model is configured like the official client: ``OPENAI_API_KEY`` (required),
``OPENAI_BASE_URL`` (any OpenAI-compatible server) and ``OPENAI_MODEL`` (or ``--model``).

On a terminal it is interactive (``/help`` lists the commands; Ctrl-D or ``/exit`` ends it)
and a failed turn is reported and the conversation goes on. With piped input it takes one
turn per non-blank line and exits at the end of input, so it can be scripted; there a failed
turn ends the run with ``Error: ...`` and exit code 1.

``openai`` and the agent are imported only when the command runs, so other commands stay
fast.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
import sys
import threading
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any, TextIO

import click
from rich.console import Console
from rich.text import Text

from memstore import MemoryStore
from memstore.cli.output import console, preview
from memstore.config import ModelSettings
from memstore.core.ltm_entries import validate_scope
from memstore.core.records import CompactionReport
from memstore.core.validation import validate_session_id
from memstore.errors import MemstoreError

if TYPE_CHECKING:
    from memstore.agent import Agent, ToolCall

HELP = """\
/memory  the working memory: tokens, items, summary, and the scope's long-term entries
/help    this list
/exit    end the chat (Ctrl-D does too)"""
EXIT_COMMANDS = frozenset({"/exit", "/quit"})


def compaction_line(report: CompactionReport, hard_limit: int) -> Text:
    """One compaction, as the chat shows it the moment it commits."""
    parts = [
        f"compaction #{report.compaction_count}: {report.before_tokens} -> "
        f"{report.after_tokens} tokens (hard limit {hard_limit})",
        f"dropped {report.items_dropped}",
        f"summarized {report.items_summarized}",
        f"evicted {report.items_evicted}",
        f"summary {report.summary_action}"
        + (f" ({report.summary_tokens} tokens)" if report.summary_tokens else ""),
    ]
    if report.usage and report.usage.get("total_tokens") is not None:
        parts.append(f"summarizer used {report.usage['total_tokens']} tokens")
    text = Text("⟳ " + " · ".join(parts), style="yellow")
    if report.summary_error:
        text.append(f"\n  summary failed: {report.summary_error}", style="red")
    return text


def tool_line(call: ToolCall) -> Text:
    """One executed tool call (arguments and output shown as data, never as markup)."""
    args = ", ".join(f"{k}={preview(str(v))}" for k, v in call.arguments.items())
    return Text(
        f"  ⚙ {call.name}({args}) -> {preview(call.output)}", style="dim" if call.ok else "red"
    )


@contextlib.contextmanager
def interruptible() -> Iterator[None]:
    """Ctrl-C raises ``KeyboardInterrupt`` in a blocking read from the terminal.

    Under ``asyncio.run`` Ctrl-C only cancels the main task, which a thread blocked in
    ``input()`` never notices: the prompt would wait for Enter. Python's own handler is
    put back for the read (signals are the main thread's: elsewhere nothing changes).
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


class ChatUI:
    """Prints the conversation; reads turns from a terminal or a pipe."""

    def __init__(self, out: Console, stdin: TextIO, *, interactive: bool) -> None:
        self.out = out
        self.stdin = stdin
        self.interactive = interactive

    def turns(self) -> Any:
        """Yield the user's turns until end of input or ``/exit``."""
        while True:
            if self.interactive:
                try:
                    with interruptible():
                        line = self.out.input("[bold cyan]you ›[/bold cyan] ")
                except EOFError:  # Ctrl-D ends the chat; Ctrl-C interrupts it (exit 130)
                    self.out.print()
                    return
            else:
                line = self.stdin.readline()
                if not line:
                    return
            text = line.strip()
            if not text:
                continue
            if text in EXIT_COMMANDS:
                return
            if not self.interactive:
                self.out.print(Text(f"you › {text}", style="bold cyan"), soft_wrap=True)
            yield text

    def reply(self, text: str) -> None:
        """The assistant's answer (markdown on a terminal, plain text in a pipe)."""
        self.out.print(Text("assistant ›", style="bold green"))
        if self.interactive:
            from rich.markdown import Markdown  # loaded only for people, not for pipes

            self.out.print(Markdown(text))
        else:
            self.out.print(Text(text), soft_wrap=True)


async def _show_memory(agent: Agent, out: Console) -> None:
    memory = agent.memory
    items = await memory.items()
    out.print(
        f"{await memory.estimated_tokens()} tokens (hard limit {memory.limits.hard}, "
        f"target {memory.limits.target}), {len(items)} items, "
        f"{len(await memory.reports())} compactions",
        highlight=False,
    )
    summary = await memory.summary()
    out.print(Text("summary: ", style="bold").append(summary or "(none)", style=""))
    if agent.scope is not None:
        entries = await memory.ltm.list(scope=agent.scope)
        out.print(Text(f"long-term memories in {agent.scope}: {len(entries)}", style="bold"))
        for entry in entries:
            out.print(Text(f"  {entry.key} = {preview(str(entry.value))} (v{entry.version})"))


async def run_chat(
    db: str,
    session_id: str,
    settings: ModelSettings,
    *,
    scope: str,
    summarizer_name: str,
    recall: bool = True,
    max_tool_rounds: int,
    timeout: float,
    max_retries: int,
    ui: ChatUI,
    context_window: int | None = None,
    max_output_tokens: int | None = None,
) -> int:
    """Open the store and the agent, then run every turn; return the number of turns."""
    from memstore.agent import Agent, make_client
    from memstore.extraction.summarizer import ExtractiveSummarizer

    out = ui.out
    client = make_client(settings, max_retries=max_retries)
    turns = 0
    async with MemoryStore.open(db) as store:
        agent = await Agent.open(
            store,
            session_id,
            client=client,
            model=settings.model,
            scope=scope,
            summarizer=ExtractiveSummarizer() if summarizer_name == "extractive" else None,
            recall=recall,
            max_tool_rounds=max_tool_rounds,
            timeout=timeout,
            context_window=context_window,
            max_output_tokens=max_output_tokens,
            on_tool_call=lambda call: out.print(tool_line(call), soft_wrap=True),
        )
        agent.memory.add_observer(
            lambda report: out.print(
                compaction_line(report, agent.memory.limits.hard), soft_wrap=True
            )
        )
        where = settings.base_url or "api.openai.com"
        out.print(
            Text(
                f"memstore chat · session {session_id} · model {settings.model} at {where} · "
                f"memories {scope} · memory limit {agent.memory.limits.hard} tokens"
                + (" · /help for commands" if ui.interactive else ""),
                style="dim",
            ),
            soft_wrap=True,
        )
        try:
            for text in ui.turns():
                if text == "/help":
                    out.print(HELP, highlight=False)
                    continue
                if text == "/memory":
                    await _show_memory(agent, out)
                    continue
                try:
                    result = await agent.run_turn(text)
                except MemstoreError as error:
                    if not ui.interactive:
                        raise
                    out.print(Text(f"Error: {error}", style="bold red"), soft_wrap=True)
                    continue
                turns += 1
                ui.reply(result.reply)
            if turns:
                await _consolidate(agent, out)
        finally:
            await client.close()
    return turns


async def _consolidate(agent: Agent, out: Console) -> None:
    """The conversation ended: distil it into the scope's long-term memory, and say so."""
    try:
        report = await agent.end()
    except MemstoreError as error:  # the conversation itself is stored: only report it
        out.print(Text(f"consolidation failed: {error}", style="yellow"), soft_wrap=True)
        return
    if report is not None and report.number is not None:
        out.print(
            Text(
                f"consolidated into {report.scope}: {len(report.written)} new, "
                f"{len(report.superseded)} updated, {len(report.skipped)} skipped",
                style="dim",
            ),
            soft_wrap=True,
        )


@click.command("chat")
@click.argument("session")
@click.option(
    "--model", default=None, help="Model name.  [default: $OPENAI_MODEL, else gpt-4o-mini]"
)
@click.option(
    "--scope",
    default="global",
    show_default=True,
    help="Long-term memory scope the agent reads and writes: 'global' or kind:name "
    "(e.g. user:alice).",
)
@click.option(
    "--summarizer",
    type=click.Choice(["openai", "extractive"]),
    default="openai",
    show_default=True,
    help="Who writes the working-memory summary: the same model, or the offline extractor.",
)
@click.option(
    "--recall/--no-recall",
    default=True,
    show_default=True,
    help="Add what left working memory and matches each message to the model input.",
)
@click.option(
    "--max-tool-rounds",
    type=click.IntRange(min=1),
    default=8,
    show_default=True,
    help="Model requests per turn that may call tools.",
)
@click.option(
    "--timeout",
    type=click.FloatRange(min=0, min_open=True),
    default=60.0,
    show_default=True,
    help="Seconds per model request.",
)
@click.option(
    "--context-window",
    type=click.IntRange(min=1),
    default=None,
    metavar="TOKENS",
    help="The model's context window: memory gets what the answer, the instructions and the "
    "tools leave.  [default: known models' own; required for others on a new session]",
)
@click.option(
    "--max-output-tokens",
    type=click.IntRange(min=1),
    default=None,
    metavar="TOKENS",
    help="Tokens reserved for each answer (and sent as its limit).  [default: the model's]",
)
@click.option(
    "--max-retries",
    type=click.IntRange(min=0),
    default=2,
    show_default=True,
    help="Retries of a failed model request (connection errors, 429, 5xx).",
)
@click.pass_context
def chat(
    ctx: click.Context,
    session: str,
    model: str | None,
    scope: str,
    summarizer: str,
    recall: bool,
    max_tool_rounds: int,
    timeout: float,
    context_window: int | None,
    max_output_tokens: int | None,
    max_retries: int,
) -> None:
    """Chat with a Responses API agent whose memory is SESSION (and the --scope memories).

    Reads OPENAI_API_KEY, OPENAI_BASE_URL (any OpenAI-compatible server) and OPENAI_MODEL.
    With piped input: one turn per line, exit at the end of input. A new session's memory
    limits fit the model's context window; an existing one keeps its limits unless
    --context-window or --max-output-tokens is given.
    """
    validate_session_id(session)
    validate_scope(scope)
    settings = ModelSettings.from_env(model=model)
    ui = ChatUI(console(), sys.stdin, interactive=sys.stdin.isatty())
    asyncio.run(
        run_chat(
            ctx.find_root().obj,
            session,
            settings,
            scope=scope,
            summarizer_name=summarizer,
            recall=recall,
            max_tool_rounds=max_tool_rounds,
            timeout=timeout,
            max_retries=max_retries,
            ui=ui,
            context_window=context_window,
            max_output_tokens=max_output_tokens,
        )
    )
