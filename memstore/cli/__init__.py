"""The ``memstore`` command line: a thin layer over the Python API.

One module per command group; :mod:`memstore.cli.output` holds what they share (the store
opener, ``--json``, tables). Exit codes live in one place, :class:`MemstoreGroup`:
0 ok, 1 an expected failure (one line on stderr, no traceback), 2 a usage error: click's own,
or a bad value of an option or argument found deeper down (:data:`OPTION_FIELDS`).
"""

from __future__ import annotations

import importlib
import os
import sys
from typing import Any

import click

from memstore.config import default_database
from memstore.errors import MemstoreError, ValidationError
from memstore.version import __version__

#: The exit code of a command stopped by Ctrl-C: 128 + SIGINT, as shells report it.
INTERRUPTED = 130

#: Each command and where it lives: a command's module (and what it imports: rich, openai,
#: Alembic...) is loaded only when that command runs, or for ``--help``.
COMMANDS = {
    "add": "memstore.cli.write:add_item",
    "chat": "memstore.cli.chat:chat",
    "check": "memstore.cli.check:check",
    "compact": "memstore.cli.write:compact_session",
    "consolidate": "memstore.cli.consolidate:consolidate_session",
    "conversations": "memstore.cli.conversations:conversations_group",
    "db": "memstore.cli.db:db_group",
    "demo": "memstore.cli.demo:demo",
    "export": "memstore.cli.transfer:export_session",
    "fork": "memstore.cli.fork:fork_session",
    "import": "memstore.cli.transfer:import_session",
    "input": "memstore.cli.inspect:show_input",
    "ltm": "memstore.cli.ltm:ltm_group",
    "mcp": "memstore.cli.mcp:mcp_serve",
    "prune": "memstore.cli.transfer:prune_session",
    "purge": "memstore.cli.transfer:purge_session",
    "replay": "memstore.cli.replay:replay_session",
    "reports": "memstore.cli.inspect:show_reports",
    "search": "memstore.cli.search:search_history",
    "sessions": "memstore.cli.inspect:list_sessions",
    "show": "memstore.cli.inspect:show_session",
}


#: The fields of :class:`ValidationError` that a command's options or arguments feed: a bad
#: value there is a usage error (exit 2) naming the option, not a domain failure (exit 1).
OPTION_FIELDS = {
    "db": "'--db' / MEMSTORE_DB",
    "at": "'--at'",
    "before": "'--before'",
    "hard": "'--hard-limit'",
    "target": "'--target-limit'",
    "keep_recent": "'--keep-recent'",
    "scope": "'--scope'",
    "ltm_scopes": "'--scope'",
    "scopes": "'--scope'",
    "sessions": "'--session'",
    "limit": "'--limit'",
    "recall": "'--recall'",
    "prefix": "'--prefix'",
    "query": "QUERY",
    "ttl": "'--ttl'",
    "idempotency_key": "'--idempotency-key'",
    "expected_version": "'--expect-version'",
    "http": "'--http'",
    "context_window": "'--context-window'",
    "embedder": "'--embedder'",
    "mode": "'--mode'",
    "max_output_tokens": "'--max-output-tokens'",
}


#: Fields that the API names otherwise than the command's option or argument that carries
#: them (any other field is looked up under its own name): ``hard`` is ``--hard-limit``.
PARAM_NAMES = {
    "hard": ("hard_limit",),
    "target": ("target_limit",),
    "at": ("at_version",),
    "scope": ("scopes",),
    "ltm_scopes": ("scopes", "scope"),
    "scopes": ("scope",),
    "session_id": ("session",),
}


#: Each command's one-line help, as ``memstore --help`` lists it (a test keeps it equal to
#: the command's own docstring).
SUMMARIES = {
    "add": "Append TEXT (or standard input when TEXT is omitted or '-') to SESSION.",
    "chat": "Chat with a Responses API agent whose memory is SESSION (and the --scope memories).",
    "check": "Verify that the ledger balances, totals match, fates point at compactions, and the "
    "search index holds exactly the rows' words.",
    "compact": "Compact SESSION now: drop noise, summarize unprotected items, enforce the target.",
    "consolidate": "Distil what SESSION said into long-term entries of its scope (--dry-run: "
    "preview).",
    "conversations": "pydantic-ai conversations stored here: list, show, search, delete.",
    "db": "The database schema (Alembic revisions).",
    "demo": "Run a scripted incident investigation offline and watch memory compact.",
    "export": "Write every item, summary and report of SESSION as JSON Lines.",
    "fork": "Start NEW as SESSION was at a version; from then on the two never touch each other.",
    "import": "Load a session exported with `memstore export` (FILE, or '-' for standard input).",
    "input": "Print the exact Responses API input the session would send now, as JSON.",
    "ltm": "Long-term memory: scoped, versioned JSON entries shared by every session.",
    "mcp": "Serve the database over the Model Context Protocol (stdio, or streamable HTTP).",
    "prune": "Delete old compactions of SESSION and the items they removed (working memory stays).",
    "purge": "Delete SESSION and everything recorded about it (and its forks, if asked).",
    "replay": "Replay SESSION's history in commit order and verify it equals the stored state.",
    "reports": "List a session's compaction reports, oldest first.",
    "search": "Search every item (of any fate), summary and long-term entry for QUERY's words.",
    "sessions": "List sessions: active items, tokens against limits, compactions, last update.",
    "show": "Show a session's summary, active items and totals.",
}


class MemstoreGroup(click.Group):
    """The command group: lazy subcommands, and one way out for every expected failure.

    Every :class:`MemstoreError` becomes ``Error: <message>`` and exit code 1.
    """

    def list_commands(self, ctx: click.Context) -> list[str]:
        return sorted(COMMANDS)

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        # From the table, not the commands: listing them must not import them (and SQLAlchemy,
        # rich, openai with them) just to print one line each.
        with formatter.section("Commands"):
            formatter.write_dl([(name, SUMMARIES[name]) for name in self.list_commands(ctx)])

    def get_command(self, ctx: click.Context, cmd_name: str) -> click.Command | None:
        target = COMMANDS.get(cmd_name)
        if target is None:
            return None
        module, _, attr = target.partition(":")
        command: click.Command = getattr(importlib.import_module(module), attr)
        return command

    def invoke(self, ctx: click.Context) -> Any:
        try:
            return super().invoke(ctx)
        except BrokenPipeError:
            # The reader went away (`| head -1`) with what it wanted: a quiet success. Standard
            # output now goes nowhere, so the interpreter's last flush cannot fail loudly.
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            ctx.exit(0)
        except KeyboardInterrupt:
            interrupted(ctx)
        except click.Abort as error:
            # click's prompts turn Ctrl-C into Abort (``n`` to a confirmation is one too).
            if isinstance(error.__context__, KeyboardInterrupt):
                interrupted(ctx)
            raise
        except ValidationError as error:
            typed = self.typed_name(ctx, error.field)
            if error.field not in OPTION_FIELDS:
                raise click.ClickException(as_typed(error, typed)) from None
            message = str(error).split(": ", 1)[-1]
            hint = OPTION_FIELDS[error.field] if typed is None else f"'{typed}'"
            raise click.BadParameter(message, param_hint=hint) from None
        except MemstoreError as error:
            typed = self.typed_name(ctx, getattr(error, "field", None))
            raise click.ClickException(as_typed(error, typed)) from None

    def typed_name(self, ctx: click.Context, field: str | None) -> str | None:
        """The option or argument of the command that ran which carried ``field``, named as
        a user types it (``--with-forks``, ``NEW``), or ``None``."""
        if field is None or ctx.invoked_subcommand is None:
            return None
        command = self.get_command(ctx, ctx.invoked_subcommand)
        commands = [command]
        if isinstance(command, click.Group):  # ltm, db: their subcommands name alike
            commands = [command.get_command(ctx, name) for name in command.list_commands(ctx)]
        params = {param.name: param for cmd in commands if cmd for param in cmd.params}
        for name in (field, *PARAM_NAMES.get(field, ())):
            param = params.get(name)
            if isinstance(param, click.Argument):
                return param.human_readable_name
            if param is not None:
                return max(param.opts, key=len)
        return None


def as_typed(error: MemstoreError, typed: str | None) -> str:
    """The error's message, naming the option or argument as typed instead of the API's
    name for it (``NEW: session 'b' already exists``, not ``new_session_id: ...``)."""
    message, field = str(error), getattr(error, "field", None)
    if typed is None or not message.startswith(f"{field}: "):
        return message
    return f"{typed}: {message.removeprefix(f'{field}: ')}"


def interrupted(ctx: click.Context) -> None:
    """Ctrl-C: one line on stderr and exit code 130 (128 + SIGINT, as a shell reports it),
    whatever the command was doing. A write under way has committed or never began."""
    # On a terminal the ^C echo leaves the cursor mid-line: start the message on its own.
    click.echo(("\n" if sys.stderr.isatty() else "") + "Interrupted.", err=True)
    ctx.exit(INTERRUPTED)


@click.group(cls=MemstoreGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.option(
    "--db",
    metavar="URL_OR_PATH",
    default=default_database,
    show_default="$MEMSTORE_DB or ./memstore.db",
    help="Database: a SQLite file path or a SQLAlchemy URL.",
)
@click.option(
    "--embedder",
    metavar="EMBEDDER",
    envvar="MEMSTORE_EMBEDDER",
    default=None,
    help="Also search by meaning: 'offline' (WordLlama) or 'openai:MODEL' ($MEMSTORE_EMBEDDER).",
)
@click.version_option(__version__, prog_name="memstore")
@click.pass_context
def main(ctx: click.Context, db: str, embedder: str | None) -> None:
    """memstore: persistent, bounded, audited working memory for LLM agents."""
    ctx.obj = db
    if embedder:
        ctx.meta["memstore.embedder"] = embedder
