"""What the commands share: opening the store, ``--json``, tables and previews."""

from __future__ import annotations

import asyncio
import json
import os
import sys
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import Any, TypeVar

import click
from rich.console import Console
from rich.table import Table
from rich.text import Text

from memstore.memory.store import MemoryStore

T = TypeVar("T")
F = TypeVar("F", bound=Callable[..., Any])

#: Content previews in tables: enough to recognise an item, short enough for one row.
PREVIEW_CHARS = 80
#: Work over more items than this shows a progress bar (on a terminal, on stderr).
PROGRESS_THRESHOLD = 2000


#: Columns of output that goes to a pipe or a file: wide enough that no row is cut or wrapped,
#: so a script can grep a whole record (rich would otherwise assume 80).
PIPED_WIDTH = 10_000


def console(*, stderr: bool = False) -> Console:
    """A console for people: the terminal's real width on a terminal; piped, rows of any
    length, one record a line (rich drops colour itself when there is no terminal)."""
    width = None if is_terminal(stderr=stderr) else PIPED_WIDTH
    return Console(highlight=False, soft_wrap=False, stderr=stderr, width=width)


def is_terminal(*, stderr: bool = False) -> bool:
    """Whether the stream itself is a terminal (not rich's guess: FORCE_COLOR makes rich call
    any pipe one, and piped output must stay whole)."""
    stream = sys.stderr if stderr else sys.stdout
    try:
        return os.isatty(stream.fileno())
    except (AttributeError, OSError, ValueError):  # a captured stream with no descriptor
        return False


def run_with_store(
    ctx: click.Context,
    action: Callable[[MemoryStore], Awaitable[T]],
    *,
    create: bool = False,
    read_only: bool = False,
) -> T:
    """Open the ``--db`` store, run ``action(store)``, close it; return what it returned.

    Commands that only read pass ``read_only``: they work on a read-only copy too.
    """

    async def go() -> T:
        db = ctx.find_root().obj
        async with MemoryStore.open(db, create=create, read_only=read_only) as store:
            return await action(store)

    return asyncio.run(go())


def json_option(func: F) -> F:
    """Add ``--json`` (machine-readable output) to a command, passed as ``as_json``."""
    return click.option("--json", "as_json", is_flag=True, help="Print JSON instead of tables.")(
        func
    )


def print_json(value: Any) -> None:
    """Print ``value`` as indented JSON on stdout."""
    click.echo(json.dumps(value, indent=2, ensure_ascii=False, default=str))


def preview(text: str, full: bool = False) -> str:
    """``text`` on one line, cut to :data:`PREVIEW_CHARS` unless ``full``."""
    if full:
        return text
    flat = " ".join(text.split())
    return flat if len(flat) <= PREVIEW_CHARS else flat[: PREVIEW_CHARS - 1] + "…"


def plain(text: str, full: bool = False) -> Text:
    """A preview as rich ``Text``: stored text is data, and a message holding ``[/bold]`` or
    ``[link=...]`` must print as itself, never be read as rich markup (or crash it)."""
    return Text(preview(text, full))


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
