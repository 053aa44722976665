"""History as files and explicit deletion: ``export``, ``import``, ``prune``, ``purge``."""

from __future__ import annotations

import contextlib
import json
import os
import stat
import sys
from collections.abc import Iterator
from datetime import UTC, datetime
from typing import IO, Any

import click

from memstore import MemoryStore
from memstore.cli.output import run_with_store, with_progress
from memstore.config import Settings
from memstore.core.ltm_entries import LongTermEntry
from memstore.errors import StorageError, ValidationError


@click.command("export")
@click.argument("session_id", metavar="SESSION")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, allow_dash=True),
    default="-",
    help="Write to FILE (readable by its owner only, like the database) instead of stdout.",
)
@click.pass_context
def export_session(ctx: click.Context, session_id: str, output: str) -> None:
    """Write every item, summary and report of SESSION as JSON Lines."""
    records = run_with_store(ctx, lambda store: store.export_session(session_id), read_only=True)
    with _private_output(output) as out:
        for record in with_progress(records, "exporting"):
            out.write(json.dumps(record, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def _private_output(path: str) -> Iterator[IO[str]]:
    """Standard output for ``-``; else ``path``, made readable by its owner only (mode 0600,
    whatever the umask): an export holds the same memory as the database."""
    if path == "-":
        yield sys.stdout
        return
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT, 0o600)
    except OSError as error:
        raise StorageError(f"cannot write {path}: {error.strerror}") from None
    try:
        if stat.S_ISREG(os.fstat(fd).st_mode):  # not /dev/null, a pipe or a terminal
            os.fchmod(fd, 0o600)  # an existing file keeps its mode through O_CREAT
            os.ftruncate(fd, 0)  # only once it is private
    except OSError as error:
        os.close(fd)
        raise StorageError(f"cannot write {path}: {error.strerror}") from None
    with open(fd, "w", encoding="utf-8") as out:
        yield out


def _read_records(source: IO[str]) -> list[Any]:
    records = []
    lines = source.readlines()
    for number, line in with_progress(list(enumerate(lines, 1)), "reading"):
        if not line.strip():
            continue
        try:
            records.append(json.loads(line))
        except RecursionError:
            raise ValidationError(f"line {number}", "is JSON nested too deeply") from None
        except json.JSONDecodeError as error:
            raise ValidationError(f"line {number}", f"is not JSON ({error.msg})") from None
    return records


@click.command("import")
@click.argument("source", metavar="FILE", type=click.File("r", encoding="utf-8"))
@click.pass_context
def import_session(ctx: click.Context, source: IO[str]) -> None:
    """Load a session exported with `memstore export` (FILE, or '-' for standard input)."""
    records = _read_records(source)
    # Checked before the database is opened: a malformed file creates no database file.
    checked = MemoryStore.check_export(records, max_item_bytes=Settings.from_env().max_item_bytes)

    async def load(store: MemoryStore) -> str:
        session_id = await store.import_session(checked)
        if store.embedding is not None:  # --embedder: the command ends once they have vectors
            await store.embed_pending()
        return session_id

    session_id = run_with_store(ctx, load, create=True)
    click.echo(f"imported session {session_id} ({len(records)} records)")


def parse_before(value: str) -> tuple[int | None, datetime | None]:
    """``--before``: a session version (an integer) or an ISO 8601 date/time (UTC if naive)."""
    if value.strip().isdigit():
        return int(value), None
    try:
        moment = datetime.fromisoformat(value.strip())
    except ValueError:
        raise ValidationError("before", f"{value!r} is neither a version nor an ISO date") from None
    return None, moment if moment.tzinfo else moment.replace(tzinfo=UTC)


with_derived_option = click.option(
    "--with-derived",
    is_flag=True,
    help="Also delete the long-term entries consolidated from what is deleted.",
)


@click.command("prune")
@click.argument("session_id", metavar="SESSION")
@click.option(
    "--before",
    "before",
    required=True,
    metavar="VERSION|DATE",
    help="Delete compactions committed before this version or time.",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@with_derived_option
@click.pass_context
def prune_session(
    ctx: click.Context, session_id: str, before: str, yes: bool, with_derived: bool
) -> None:
    """Delete old compactions of SESSION and the items they removed (working memory stays)."""
    version, moment = parse_before(before)
    if not yes:
        click.confirm(f"Delete the history of {session_id} before {before}?", abort=True)

    async def prune(store: MemoryStore) -> tuple[tuple[int, int], list[LongTermEntry]]:
        done = await store.prune(
            session_id, before_version=version, before=moment, with_derived=with_derived
        )
        derived = (
            [] if with_derived else await store.derived_entries(session_id, deleted_items_only=True)
        )
        return done, derived

    (compactions, items), derived = run_with_store(ctx, prune)
    click.echo(f"pruned {compactions} compaction(s) and {items} forgotten item(s)")
    derived_note(derived, with_derived)


def derived_note(derived: list[LongTermEntry], deleted: bool) -> None:
    """Name the long-term entries consolidated from what was deleted, and their fate."""
    if deleted:
        click.echo("deleted the long-term entries consolidated from it too")
        return
    for entry in derived:
        click.echo(f"kept long-term entry {entry.key!r} ({entry.scope}), consolidated from it")
    if derived:
        click.echo("(delete them too with --with-derived)")


@click.command("purge")
@click.argument("session_id", metavar="SESSION")
@click.option(
    "--with-forks",
    is_flag=True,
    help="Also delete the forks that hold copies of its history (and their forks).",
)
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@with_derived_option
@click.pass_context
def purge_session(
    ctx: click.Context, session_id: str, with_forks: bool, yes: bool, with_derived: bool
) -> None:
    """Delete SESSION and everything recorded about it (and its forks, if asked).

    A fork holds a copy of the history it started with: while SESSION has forks, purge
    refuses and lists them, unless --with-forks deletes them too. Long-term entries
    consolidated from it are listed and kept, unless --with-derived deletes them too.
    """

    forks: list[str] = []
    if with_forks:
        forks = run_with_store(ctx, lambda store: store.forks(session_id), read_only=True)
    if not yes:
        also = f", its forks ({', '.join(forks)})" if forks else ""
        click.confirm(f"Delete session {session_id}{also} and its whole history?", abort=True)

    async def purge(store: MemoryStore) -> tuple[int, list[LongTermEntry]]:
        derived = await store.derived_entries(session_id)
        deleted = await store.purge(session_id, with_forks=with_forks, with_derived=with_derived)
        return deleted, derived

    items, derived = run_with_store(ctx, purge)
    also = f" and its forks {', '.join(forks)}" if forks else ""
    click.echo(f"purged session {session_id}{also} ({items} items)")
    derived_note(derived, with_derived and bool(derived))
