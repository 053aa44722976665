"""``memstore conversations ...``: pydantic-ai conversations stored in the database (over
``store.conversations``), for operators: list them, show one's history, search them, delete
one. Stored text is printed as data: rich markup in it is shown literally.

``show --json`` prints the record and every message of the history as pydantic-ai's own JSON
(what ``ModelMessagesTypeAdapter`` reads back): it is the conversation's export.
"""

from __future__ import annotations

import json
from typing import Any

import click
from rich.text import Text

from memstore import MemoryStore
from memstore.cli.output import (
    cell,
    console,
    json_option,
    listing,
    print_json,
    run_with_store,
)
from memstore.core.conversation_keys import StoredConversation, StoredEntry
from memstore.core.conversation_text import message_role
from memstore.errors import NotFoundError


def _when(record: StoredConversation) -> str:
    return record.updated_at.strftime("%Y-%m-%d %H:%M:%S")


def record_dict(record: StoredConversation) -> dict[str, Any]:
    """A record as JSON: its fields, with pydantic-ai's JSON documents parsed."""
    return {
        "conversation_id": record.conversation_id,
        "scope": record.scope,
        "title": record.title,
        "head_id": record.head_id,
        "revision": record.revision,
        "updated_at": record.updated_at.isoformat(),
        "usage": json.loads(record.usage),
        "deferred_tool_requests": None
        if record.deferred_tool_requests is None
        else json.loads(record.deferred_tool_requests),
        "forked_from": record.forked_from,
        "forked_at": record.forked_at,
        "branches": list(record.branches),
        "metadata": None if record.metadata is None else json.loads(record.metadata),
    }


@click.group("conversations")
def conversations_group() -> None:
    """pydantic-ai conversations stored here: list, show, search, delete."""


@conversations_group.command("list")
@click.option("--scope", default=None, help="Only the conversations saved with this scope.")
@click.option("--limit", type=click.IntRange(min=1), default=None, help="The newest N only.")
@json_option
@click.pass_context
def conversations_list(
    ctx: click.Context, scope: str | None, limit: int | None, as_json: bool
) -> None:
    """List stored conversations, most recently saved first."""
    records = run_with_store(
        ctx,
        lambda store: store.conversations.read_records(scope=scope, limit=limit),
        read_only=True,
    )
    if as_json:
        print_json([record_dict(record) for record in records])
        return
    table = listing(
        "conversations",
        [
            ("conversation", "left"),
            ("scope", "left"),
            ("title", "left"),
            ("branches", "right"),
            ("forked from", "left"),
            ("updated (UTC)", "left"),
        ],
    )
    for record in records:
        table.add_row(
            Text(record.conversation_id),
            Text(record.scope or "-"),
            cell(record.title or ""),
            str(len(record.branches)),
            Text(record.forked_from or ""),
            _when(record),
        )
    console().print(table if records else "no conversations yet")


async def _shown(
    store: MemoryStore, conversation_id: str
) -> tuple[StoredConversation, list[StoredEntry]]:
    record = await store.conversations.read_record(conversation_id)
    if record is None:
        raise NotFoundError(f"conversation {conversation_id!r} is not stored")
    history = await store.conversations.read_history(record.head_id)
    return record, history or []


@conversations_group.command("show")
@click.argument("conversation_id", metavar="CONVERSATION")
@click.option("--full", is_flag=True, help="Print whole messages instead of previews.")
@json_option
@click.pass_context
def conversations_show(ctx: click.Context, conversation_id: str, full: bool, as_json: bool) -> None:
    """Show a conversation's record and its history, oldest message first."""
    record, history = run_with_store(
        ctx, lambda store: _shown(store, conversation_id), read_only=True
    )
    if as_json:
        messages = [json.loads(entry.message) for entry in history]
        print_json({"record": record_dict(record), "messages": messages})
        return
    out = console()
    out.print(Text(f"conversation {record.conversation_id}"))
    details = [
        f"scope {record.scope or '-'}",
        f"{len(history)} messages",
        f"{len(record.branches)} branches left",
        f"updated {_when(record)} UTC",
    ]
    if record.forked_from is not None:
        details.append(f"forked from {record.forked_from}")
    out.print(Text(" · ".join(details)))
    if record.title:
        out.print(Text(f"title: {record.title}"))
    table = listing("history", [("#", "right"), ("kind", "left"), ("message", "left")])
    for number, entry in enumerate(history, 1):
        table.add_row(str(number), message_role(json.loads(entry.message)), cell(entry.text, full))
    out.print(table if history else "no messages yet")


@conversations_group.command("search")
@click.argument("query")
@click.option("--scope", default=None, help="Only the conversations saved with this scope.")
@click.option("--limit", type=int, default=10, show_default=True, help="Hits at most (1-1000).")
@json_option
@click.pass_context
def conversations_search(
    ctx: click.Context, query: str, scope: str | None, limit: int, as_json: bool
) -> None:
    """Search every stored message of every conversation for QUERY's words."""
    hits = run_with_store(
        ctx,
        lambda store: store.conversations.search(query, scope=scope, limit=limit),
        read_only=True,
    )
    if as_json:
        print_json([hit.to_dict() for hit in hits])
        return
    table = listing("matches", [("conversations", "left"), ("score", "right"), ("match", "left")])
    for hit in hits:
        table.add_row(
            Text(", ".join(hit.conversation_ids) or "-"),
            f"{hit.score:.3g}",
            Text(" ".join(hit.snippet.split())),
        )
    console().print(table if hits else "no matches")


@conversations_group.command("delete")
@click.argument("conversation_id", metavar="CONVERSATION")
@click.option("--yes", is_flag=True, help="Do not ask for confirmation.")
@click.pass_context
def conversations_delete(ctx: click.Context, conversation_id: str, yes: bool) -> None:
    """Delete a conversation, and every message no other conversation holds."""
    if not yes:
        click.confirm(f"Delete conversation {conversation_id} and its messages?", abort=True)
    deleted = run_with_store(ctx, lambda store: store.conversations.delete(conversation_id))
    if deleted is None:
        raise NotFoundError(f"conversation {conversation_id!r} is not stored")
    click.echo(f"deleted conversation {conversation_id} ({deleted} messages no other one held)")
