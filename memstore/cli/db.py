"""``memstore db upgrade`` and ``memstore db current``: the schema revision."""

from __future__ import annotations

import asyncio
import logging
import sys

import click

from memstore import MemoryStore
from memstore.cli.output import json_option, print_json


@click.group("db")
def db_group() -> None:
    """The database schema (Alembic revisions)."""


@db_group.command("current")
@json_option
@click.pass_context
def db_current(ctx: click.Context, as_json: bool) -> None:
    """Print the database's schema revision and the newest this memstore knows."""
    status, _ = asyncio.run(MemoryStore.schema_status(ctx.find_root().obj))
    if as_json:
        print_json(
            {
                "current": status.current,
                "head": status.head,
                "up_to_date": status.up_to_date,
                "newer": status.newer,
            }
        )
        return
    click.echo(f"current {status.current or '(empty)'}, head {status.head}: {status.advice()}")


@db_group.command("upgrade")
@click.pass_context
def db_upgrade(ctx: click.Context) -> None:
    """Create the database or upgrade its schema to the newest revision."""
    # A long migration (indexing a large history for search) says how far it got.
    progress = logging.StreamHandler(sys.stderr)
    log = logging.getLogger("memstore")
    log.addHandler(progress)
    log.setLevel(min(log.getEffectiveLevel(), logging.INFO))
    try:
        before, after = asyncio.run(MemoryStore.schema_status(ctx.find_root().obj, upgrade=True))
    finally:
        log.removeHandler(progress)
    if before.current == after.current:
        click.echo(f"already at {after.current}")
    else:
        click.echo(f"upgraded {before.current or '(empty)'} -> {after.current}")
