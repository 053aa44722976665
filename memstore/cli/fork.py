"""``memstore fork SESSION NEW [--at VERSION]``, and how listings name a fork's parent."""

from __future__ import annotations

import click

from memstore import MemoryStore
from memstore.cli.output import json_option, print_json, run_with_store
from memstore.core.records import SessionInfo


def parent_label(info: SessionInfo) -> str:
    """``PARENT @ VERSION`` for a fork, empty for any other session."""
    if info.parent_id is None:
        return ""
    return f"{info.parent_id} @ {info.parent_version}"


@click.command("fork")
@click.argument("session_id", metavar="SESSION")
@click.argument("new_session_id", metavar="NEW")
@click.option(
    "--at",
    "at",
    type=int,
    default=None,
    metavar="VERSION",
    help="Start from this version of SESSION (`memstore replay SESSION` lists them). "
    "[default: the latest]",
)
@json_option
@click.pass_context
def fork_session(
    ctx: click.Context, session_id: str, new_session_id: str, at: int | None, as_json: bool
) -> None:
    """Start NEW as SESSION was at a version; from then on the two never touch each other."""

    async def fork(store: MemoryStore) -> SessionInfo:
        await store.fork(session_id, new_session_id, at=at)
        return await store.session_info(new_session_id)

    info = run_with_store(ctx, fork)
    if as_json:
        print_json(info.to_dict())
        return
    click.echo(
        f"forked {session_id} at version {info.parent_version} into {info.id}: "
        f"{info.active_items} active items, {info.total_tokens} tokens, "
        f"{info.compaction_count} compactions"
    )
