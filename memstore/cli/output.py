"""What the commands share: opening the store, ``--json``, tables and previews."""

from __future__ import annotations

import asyncio
import json
import os
import re
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

import click
from rich import box
from rich.cells import cell_len
from rich.console import Console, JustifyMethod, OverflowMethod
from rich.containers import Lines
from rich.table import Table
from rich.text import Text

from memstore import MemoryStore

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

#: Content previews in tables: enough to recognise an item, short enough for one row.
PREVIEW_CHARS = 80
#: Work over more items than this shows a progress bar (on a terminal, on stderr).
PROGRESS_THRESHOLD = 2000


#: Below this many columns, listings take a narrow layout: two columns without box lines,
#: what a record is (its identifier and figures, one to a line) beside its text, wrapped at
#: words, so a 60-column terminal still shows whole words instead of a few letters a line.
NARROW_COLUMNS = 100


#: Items a table lists unless told otherwise: the newest ones. A table of all 200,000 items
#: of a session took 86 s to print, far past what anyone reads on a terminal.
DEFAULT_ROWS = 100


#: Columns of output that goes to a pipe or a file: wide enough that no row is cut or wrapped,
#: so a script can grep a whole record (rich would otherwise assume 80).
PIPED_WIDTH = 10_000


class _Console(Console):
    """rich's console, except that a reader who went away (``| head -1``) is not a failure:
    rich would exit 1; the command group ends quietly with 0 (:mod:`memstore.cli`)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def console(*, stderr: bool = False) -> Console:
    """A console for people: the terminal's real width on a terminal; piped, rows of any
    length, one record a line (rich drops colour itself when there is no terminal)."""
    width = None if is_terminal(stderr=stderr) else PIPED_WIDTH
    return _Console(highlight=False, soft_wrap=False, stderr=stderr, width=width)


def is_terminal(*, stderr: bool = False) -> bool:
    """Whether the stream itself is a terminal (not rich's guess: FORCE_COLOR makes rich call
    any pipe one, and piped output must stay whole)."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):  # a captured stream with no descriptor
        return False


def is_narrow() -> bool:
    """Whether the output is a terminal narrower than :data:`NARROW_COLUMNS`."""
    return console().width < NARROW_COLUMNS


def narrow_listing(title: str, head: str, text: str) -> Table:
    """The narrow layout of a listing (:data:`NARROW_COLUMNS`): a column ``head`` of short
    lines (an identifier, then figures), as wide as its longest line, and a column ``text``
    that takes the rest and wraps at words. Only a line too wide for the terminal is
    ever split."""
    table = Table(
        title=title, title_justify="left", box=box.SIMPLE_HEAD, pad_edge=False, show_lines=True
    )
    table.add_column(head, overflow="fold", no_wrap=True)
    table.add_column(text, overflow="fold", ratio=1, min_width=20)
    return table


def lines(*parts: str | None) -> Text:
    """The given parts one to a line (``None`` and empty ones left out), as plain text."""
    return Text("\n".join(part for part in parts if part))


def run_with_store(
    ctx: click.Context,
    action: Callable[[MemoryStore], Awaitable[T]],
    *,
    create: bool = False,
    read_only: bool = False,
) -> T:
    """Open the ``--db`` store, run ``action(store)``, close it; return what it returned.

    Commands that only read pass ``read_only``: they work on a read-only copy too. Every
    other command is an operator's write, not a hot path: it first checks the file with
    SQLite's ``quick_check`` (about 2 s per GiB, see docs/operations.md) and refuses a damaged
    one (:class:`~memstore.errors.CorruptDatabaseError`) before writing anything to it.
    """

    embedder = None
    spec = ctx.meta.get(EMBEDDER_KEY)
    if spec:
        from memstore import embedder_from_spec

        embedder = embedder_from_spec(spec)

    async def go() -> T:
        db = ctx.find_root().obj
        async with MemoryStore.open(
            db, create=create, read_only=read_only, verify=not read_only, embedder=embedder
        ) as store:
            return await action(store)

    return asyncio.run(go())


#: Where the ``--embedder`` value travels from the group or a command to the store opener.
EMBEDDER_KEY = "memstore.embedder"


def has_embedder(ctx: click.Context) -> bool:
    """Whether ``--embedder`` (or ``MEMSTORE_EMBEDDER``) was given."""
    return bool(ctx.meta.get(EMBEDDER_KEY))


def _remember_embedder(ctx: click.Context, _param: click.Parameter, value: str | None) -> None:
    if value:
        ctx.meta[EMBEDDER_KEY] = value


def embedder_option(func: F) -> F:
    """Add ``--embedder`` to a command too (it overrides the group's)."""
    return click.option(
        "--embedder",
        metavar="EMBEDDER",
        default=None,
        expose_value=False,
        callback=_remember_embedder,
        help="Also search by meaning: 'offline' (WordLlama) or 'openai:MODEL'.",
    )(func)


def _row_limit(ctx: click.Context, param: click.Parameter, value: str | None) -> int | None:
    if value is None:
        return 0
    if value == "all":
        return None
    if value.isdigit() and int(value) >= 1:
        return int(value)
    raise click.BadParameter(f"{value!r} is neither a positive number nor 'all'")


def limit_option(func: F) -> F:
    """Add ``--limit N|all`` (the newest rows a listing shows), passed as ``limit``: ``0``
    when not given (the output's default: :data:`DEFAULT_ROWS` in tables, all in JSON),
    ``None`` for ``all``."""
    return click.option(
        "--limit",
        metavar="N|all",
        default=None,
        callback=_row_limit,
        help=f"List the newest N items, or all (default: {DEFAULT_ROWS} in tables, all with "
        "--json).",
    )(func)


def newest(items: Sequence[T], limit: int | None, *, as_json: bool = False) -> tuple[list[T], int]:
    """The newest ``limit`` of ``items`` (``0``: the default for the output; ``None``: all)
    and how many older ones are left out."""
    if limit == 0:
        limit = None if as_json else DEFAULT_ROWS
    if limit is None or len(items) <= limit:
        return list(items), 0
    return list(items[-limit:]), len(items) - limit


def hidden_note(hidden: int, what: str) -> str:
    """The line that says how many older rows a listing left out, and how to see them."""
    return f"… {hidden:,} older {what} not shown (--limit N shows more, --limit all every one)"


def json_option(func: F) -> F:
    """Add ``--json`` (machine-readable output) to a command, passed as ``as_json``."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(
        func
    )


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def preview(text: str, full: bool = False, *, width: int = PREVIEW_CHARS) -> str:
    """``text`` on one line, cut to ``width`` characters (an ellipsis included) unless
    ``full``: at the last word that fits, unless that would leave less than half of it."""
    if full:
        return text
    flat = " ".join(text.split())
    if len(flat) <= width:
        return flat
    cut = flat[: width - 1]
    if flat[width - 1] != " ":  # the cut fell inside a word: end at the word before it
        head = cut.rsplit(" ", 1)[0]
        cut = head if len(head) >= width // 2 else cut
    return cut.rstrip() + "…"


def plain(text: str, full: bool = False) -> Text:
    """A preview as rich ``Text``: stored text is data, and a message holding ``[/bold]`` or
    ``[link=...]`` must print as itself, never be read as rich markup (or crash it)."""
    return _WrapsAtPunctuation(preview(text, full))


#: A run of text with no spaces.
_RUN = re.compile(r"\S+")
#: Where such a run may break: after its punctuation (an opening bracket stays with what
#: it opens), before a word or an opening bracket: ``fact:assistant:`` | ``noted-`` |
#: ``[lisbon]~`` | ``f87c0a`` (a search hit's match is in ``[`` ``]``).
_BREAK = re.compile(r"(?<=[^\w\s\[(])(?=[\w\[(])")


class _WrapsAtPunctuation(Text):
    """Text that wraps a run of no spaces wider than its column (a long-term entry's key, a
    path) after the run's punctuation, so none of its words is split; rich would cut it every
    so many characters. Only a word wider than the column is still folded."""

    def wrap(
        self,
        console: Console,
        width: int,
        *,
        justify: JustifyMethod | None = None,
        overflow: OverflowMethod | None = None,
        tab_size: int = 8,
        no_wrap: bool | None = None,
    ) -> Lines:
        cuts = [] if no_wrap or self.no_wrap else _cuts(self.plain, width)
        text = self.blank_copy("\n").join(self.divide(cuts)) if cuts else self
        return Text.wrap(
            text, console, width, justify=justify, overflow=overflow, tab_size=tab_size,
            no_wrap=no_wrap,
        )  # fmt: skip


def _cuts(text: str, width: int) -> list[int]:
    """Where to break the runs of ``text`` wider than ``width`` cells: at the last break
    (:data:`_BREAK`) that fits each line of the run."""
    cuts: list[int] = []
    for run in _RUN.finditer(text):
        if cell_len(run[0]) <= width:
            continue
        start, fits = run.start(), None
        for found in _BREAK.finditer(text, run.start() + 1, run.end()):
            if cell_len(text[start : found.start()]) > width and fits is not None:
                cuts.append(fits)
                start, fits = fits, None
            if cell_len(text[start : found.start()]) <= width:
                fits = found.start()
        if cell_len(text[start : run.end()]) > width and fits is not None:
            cuts.append(fits)
    return cuts


def cell(text: str, full: bool = False) -> Text:
    """Stored text in a table row: on a terminal a preview (or all of it, ``full``); piped,
    all of it on one line, so a script finds any phrase of it in its record's line."""
    if full or is_terminal():
        return plain(text, full)
    return Text(" ".join(text.split()))


def listing(title: str, columns: Sequence[tuple[str, str]]) -> Table:
    """A table of records with these (name, justification) columns; cells fold on a narrow
    terminal, so identifiers never lose characters to an ellipsis."""
    table = Table(title=title, title_justify="left")
    for name, justify in columns:
        table.add_column(name, justify=justify, overflow="fold")  # type: ignore[arg-type]
    return table


def with_progress(items: Sequence[T], label: str) -> Iterator[T]:
    """Yield ``items``, drawing a progress bar on stderr for long work on a terminal."""
    err = console(stderr=True)
    if len(items) < PROGRESS_THRESHOLD or not err.is_terminal:
        yield from items
        return
    from rich.progress import Progress  # only long operations draw one: not on start-up

    with Progress(console=err, transient=True) as progress:
        task = progress.add_task(label, total=len(items))
        for item in items:
            yield item
            progress.advance(task)
