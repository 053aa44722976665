"""``memstore ltm ...``: long-term memory from the command line (over ``store.ltm``).

``set`` and ``delete`` take ``--expect-version N`` (compare-and-set: a stale version is exit
code 1 with one line, and nothing is written); ``get``, ``delete`` and ``history`` of a key
that does not exist are exit code 1 too. Stored keys and values are printed as data: rich
markup in them is shown literally, never interpreted.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import click
from rich.table import Table
from rich.text import Text

from memstore import LongTermChange, LongTermEntry, MemoryStore
from memstore.cli.output import (
    console,
    is_narrow,
    json_option,
    lines,
    narrow_listing,
    preview,
    print_json,
    run_with_store,
)
from memstore.core.ltm_entries import DEFAULT_SCOPE
from memstore.errors import EntryNotFoundError

F = TypeVar("F", bound=Callable[..., Any])

_SCOPE_HELP = "'global' or 'kind:name', e.g. user:alice."


def scope_option(default: str | None = DEFAULT_SCOPE) -> Callable[[F], F]:
    """``--scope`` (``global`` by default; ``None``: every scope)."""
    return click.option(
        "--scope",
        default=default,
        show_default=default is not None,
        help=_SCOPE_HELP if default is not None else f"Only this scope ({_SCOPE_HELP})",
    )


def expect_version_option() -> Callable[[F], F]:
    """``--expect-version N``: compare-and-set (0: the entry must not exist)."""
    return click.option(
        "--expect-version",
        "expected_version",
        type=click.IntRange(min=0),
        default=None,
        help="Write only if the entry is at this version (0: only if it does not exist).",
    )


def _reject_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def parse_json_value(text: str) -> Any:
    """VALUE given with ``--json-value``: strict JSON (no NaN or Infinity), else a usage error."""
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except RecursionError:
        raise click.BadParameter("JSON nested too deeply", param_hint="VALUE") from None
    except ValueError as error:
        raise click.BadParameter(f"not valid JSON ({error})", param_hint="VALUE") from None


def show_value(value: Any, *, full: bool = False) -> Text:
    """A value as JSON text, shown literally (no rich markup)."""
    return Text(preview(json.dumps(value, ensure_ascii=False), full))


def when(moment: Any) -> str:
    """A UTC datetime for tables (empty for ``None``)."""
    return "" if moment is None else moment.strftime("%Y-%m-%d %H:%M:%S")


def source_text(source: Any) -> Text:
    """Where a version came from: ``session s1 #3,4 (compaction 2, extractive)``, or ``set``
    (a person or the application wrote it)."""
    if not isinstance(source, dict):
        return Text("set")
    seqs = ",".join(str(seq) for seq in source.get("seqs") or ())
    detail = [f"compaction {source['compaction']}"] if source.get("compaction") else []
    detail.append(str(source.get("extractor")))
    return Text(f"session {source.get('session')} #{seqs} ({', '.join(detail)})")


def entries_table(entries: list[LongTermEntry], *, full: bool = False) -> Table:
    """Entries: scope, key, version, value, updated, source (and expiry, if any has one)."""
    if is_narrow():
        return _narrow_entries_table(entries, full=full)
    expiring = any(entry.expires_at is not None for entry in entries)
    derived = any(entry.source is not None for entry in entries)
    table = Table(title="long-term entries", title_justify="left")
    table.add_column("scope", overflow="fold")  # an identifier: folded, never cut
    table.add_column("key", overflow="fold")
    table.add_column("version", justify="right")
    table.add_column("value", overflow="fold", ratio=1)
    table.add_column("updated (UTC)", no_wrap=True)
    if expiring:
        table.add_column("expires (UTC)", no_wrap=True)
    if derived:
        table.add_column("source", overflow="fold")
    for entry in entries:
        row = [Text(entry.scope), Text(entry.key), Text(str(entry.version))]
        row += [show_value(entry.value, full=full), Text(when(entry.updated_at))]
        if expiring:
            row.append(Text(when(entry.expires_at)))
        if derived:
            row.append(source_text(entry.source))
        table.add_row(*row)
    return table


def _narrow_entries_table(entries: list[LongTermEntry], *, full: bool) -> Table:
    table = narrow_listing("long-term entries", "entry", "value")
    for entry in entries:
        head = lines(
            entry.scope,
            entry.key,
            f"version {entry.version}",
            f"updated {when(entry.updated_at)}",
            f"expires {when(entry.expires_at)}" if entry.expires_at else None,
        )
        value = show_value(entry.value, full=full)
        if entry.source is not None:
            value.append("\nfrom ").append_text(source_text(entry.source))
        table.add_row(head, value)
    return table


def history_table(changes: list[LongTermChange]) -> Table:
    """Changes of one entry, oldest first."""
    if is_narrow():
        return _narrow_history_table(changes)
    table = Table(title="history", title_justify="left")
    table.add_column("version", justify="right")
    table.add_column("action")
    table.add_column("at (UTC)", no_wrap=True)
    table.add_column("value", overflow="fold", ratio=1)
    table.add_column("source", overflow="fold")
    for change in changes:
        value = Text("") if change.action != "set" else show_value(change.value)
        source = Text("") if change.action != "set" else source_text(change.source)
        table.add_row(str(change.version), change.action, when(change.changed_at), value, source)
    return table


def _narrow_history_table(changes: list[LongTermChange]) -> Table:
    table = narrow_listing("history", "change", "value")
    for change in changes:
        head = lines(f"version {change.version} {change.action}", when(change.changed_at))
        value = Text("") if change.action != "set" else show_value(change.value)
        if change.action == "set" and isinstance(change.source, dict):
            value.append("\nfrom ").append_text(source_text(change.source))
        table.add_row(head, value)
    return table


@click.group("ltm")
def ltm_group() -> None:
    """Long-term memory: scoped, versioned JSON entries shared by every session."""


@ltm_group.command("set")
@click.argument("key")
@click.argument("value")
@scope_option()
@click.option("--json-value", is_flag=True, help="Parse VALUE as JSON (else it is a string).")
@expect_version_option()
@click.option(
    "--ttl",
    type=click.FloatRange(min=0, min_open=True),
    default=None,
    metavar="SECONDS",
    help="Expire the entry this many seconds from now.",
)
@json_option
@click.pass_context
def ltm_set(
    ctx: click.Context,
    key: str,
    value: str,
    scope: str,
    json_value: bool,
    expected_version: int | None,
    ttl: float | None,
    as_json: bool,
) -> None:
    """Set KEY to VALUE (a string, or JSON with --json-value); prints the new version."""
    stored: Any = parse_json_value(value) if json_value else value
    entry = run_with_store(
        ctx,
        lambda store: store.ltm.set(
            key, stored, scope=scope, expected_version=expected_version, ttl=ttl
        ),
        create=True,
    )
    if as_json:
        print_json(entry.to_dict())
        return
    expiry = f", expires {when(entry.expires_at)} UTC" if entry.expires_at else ""
    console().print(
        Text(f"set {entry.key!r} in scope {entry.scope}: version {entry.version}{expiry}")
    )


async def _get(store: MemoryStore, key: str, scope: str) -> LongTermEntry:
    entry = await store.ltm.get(key, scope=scope)
    if entry is None:
        raise EntryNotFoundError(scope, key)
    return entry


@ltm_group.command("get")
@click.argument("key")
@scope_option()
@click.option("--full", is_flag=True, help="Print the whole value instead of a preview.")
@json_option
@click.pass_context
def ltm_get(ctx: click.Context, key: str, scope: str, full: bool, as_json: bool) -> None:
    """Show one entry (exit code 1 if there is no live entry)."""
    entry = run_with_store(ctx, lambda store: _get(store, key, scope), read_only=True)
    if as_json:
        print_json(entry.to_dict())
        return
    console().print(entries_table([entry], full=full))


@ltm_group.command("list")
@scope_option(default=None)
@click.option("--prefix", default=None, help="Only keys starting with this (case-sensitive).")
@click.option("--full", is_flag=True, help="Print whole values instead of previews.")
@json_option
@click.pass_context
def ltm_list(
    ctx: click.Context, scope: str | None, prefix: str | None, full: bool, as_json: bool
) -> None:
    """List live entries, by scope then key."""
    entries = run_with_store(
        ctx, lambda store: store.ltm.list(scope=scope, prefix=prefix), read_only=True
    )
    if as_json:
        print_json([entry.to_dict() for entry in entries])
        return
    console().print(entries_table(entries, full=full) if entries else "no long-term entries")


async def _delete(store: MemoryStore, key: str, scope: str, expected: int | None) -> None:
    if not await store.ltm.delete(key, scope=scope, expected_version=expected):
        raise EntryNotFoundError(scope, key)


@ltm_group.command("delete")
@click.argument("key")
@scope_option()
@expect_version_option()
@click.pass_context
def ltm_delete(ctx: click.Context, key: str, scope: str, expected_version: int | None) -> None:
    """Delete an entry; its history keeps the deletion (exit code 1 if there is none)."""
    run_with_store(ctx, lambda store: _delete(store, key, scope, expected_version))
    console().print(Text(f"deleted {key!r} from scope {scope}"))


async def _history(store: MemoryStore, key: str, scope: str) -> list[LongTermChange]:
    changes = await store.ltm.history(key, scope=scope)
    if not changes:
        raise EntryNotFoundError(scope, key)
    return changes


@ltm_group.command("history")
@click.argument("key")
@scope_option()
@json_option
@click.pass_context
def ltm_history(ctx: click.Context, key: str, scope: str, as_json: bool) -> None:
    """Every change of an entry, oldest first (exit code 1 if it was never written)."""
    changes = run_with_store(ctx, lambda store: _history(store, key, scope), read_only=True)
    if as_json:
        print_json([change.to_dict() for change in changes])
        return
    console().print(history_table(changes))


@ltm_group.command("prune")
@json_option
@click.pass_context
def ltm_prune(ctx: click.Context, as_json: bool) -> None:
    """Delete expired entries (each keeps an 'expire' record in its history)."""
    pruned = run_with_store(ctx, lambda store: store.ltm.prune())
    if as_json:
        print_json({"pruned": pruned})
        return
    console().print(f"pruned {pruned} expired long-term entr{'y' if pruned == 1 else 'ies'}")
