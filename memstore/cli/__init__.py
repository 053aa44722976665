"""The ``memstore`` command line: a thin layer over the Python API.

One module per command group; :mod:`memstore.cli.output` holds what they share (the store
opener, ``--json``, tables). Exit codes live in one place, :class:`MemstoreGroup`:
0 ok, 1 an expected failure (one line on stderr, no traceback), 2 a usage error (click).
"""

from __future__ import annotations

from typing import Any

import click

from memstore import __version__
from memstore.config import default_database
from memstore.errors import MemstoreError


class MemstoreGroup(click.Group):
    """Turns every :class:`MemstoreError` into ``Error: <message>`` and exit code 1."""

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except MemstoreError as error:
            raise click.ClickException(str(error)) from None


@click.group(cls=MemstoreGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    metavar="URL_OR_PATH",
    default=default_database,
    show_default="$MEMSTORE_DB or ./memstore.db",
    help="Database: a SQLite file path or a SQLAlchemy URL.",
)
@click.version_option(__version__, prog_name="memstore")
@click.pass_context
def main(ctx: click.Context, db: str) -> None:
    """memstore: persistent, bounded, audited working memory for LLM agents."""
    ctx.obj = db


def _register() -> None:
    from memstore.cli import chat, check, db, demo, inspect, ltm, replay, transfer, write

    for command in (
        chat.chat,
        check.check,
        db.db_group,
        demo.demo,
        inspect.list_sessions,
        inspect.show_session,
        inspect.show_reports,
        inspect.show_input,
        ltm.ltm_group,
        replay.replay_session,
        transfer.export_session,
        transfer.import_session,
        transfer.prune_session,
        transfer.purge_session,
        write.add_item,
        write.compact_session,
    ):
        main.add_command(command)


_register()
