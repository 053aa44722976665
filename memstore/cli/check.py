"""``memstore check [SESSION]``: verify the ledger invariants; exit 1 on any violation."""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from memstore.cli.output import json_option, print_json, run_with_store

if TYPE_CHECKING:
    from memstore.core.invariants import Violation
    from memstore.memory.store import MemoryStore


@click.command("check")
@click.argument("session_id", metavar="[SESSION]", required=False)
@json_option
@click.pass_context
def check(ctx: click.Context, session_id: str | None, as_json: bool) -> None:
    """Verify that the ledger balances, totals match, fates point at compactions, and the
    search index holds exactly the rows' words. How many of the newest items the index does
    not hold yet is shown as information (searches scan them).

    Without SESSION every session is checked, plus SQLite's integrity and foreign keys.
    """
    violations, lag = run_with_store(ctx, lambda store: _check(store, session_id), read_only=True)
    if as_json:
        print_json(
            {
                "ok": not violations,
                "violations": [
                    {"session_id": v.session_id, "rule": v.rule, "detail": v.detail}
                    for v in violations
                ],
                "index_lag": lag,
            }
        )
    else:
        for violation in violations:
            click.echo(str(violation))
        if lag:  # information: the writer indexes new items in bulk, searches scan them
            click.echo(f"info: {lag} newest item(s) not in the search index yet (searched anyway)")
        click.echo(
            "ok: all invariants hold" if not violations else f"{len(violations)} violation(s)"
        )
    if violations:
        ctx.exit(1)


async def _check(store: MemoryStore, session_id: str | None) -> tuple[list[Violation], int]:
    from memstore.db.audit import index_lag

    return await store.check(session_id), await index_lag(store.database)
