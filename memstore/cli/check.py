"""``memstore check [SESSION]``: verify the ledger invariants; exit 1 on any violation."""

from __future__ import annotations

import click

from memstore.cli.output import json_option, print_json, run_with_store


@click.command("check")
@click.argument("session_id", metavar="[SESSION]", required=False)
@json_option
@click.pass_context
def check(ctx: click.Context, session_id: str | None, as_json: bool) -> None:
    """Verify that the ledger balances, totals match, fates point at compactions, and the
    search index holds exactly the rows' words.

    Without SESSION every session is checked, plus SQLite's integrity and foreign keys.
    """
    violations = run_with_store(ctx, lambda store: store.check(session_id), read_only=True)
    if as_json:
        print_json(
            {
                "ok": not violations,
                "violations": [
                    {"session_id": v.session_id, "rule": v.rule, "detail": v.detail}
                    for v in violations
                ],
            }
        )
    else:
        for violation in violations:
            click.echo(str(violation))
        click.echo(
            "ok: all invariants hold" if not violations else f"{len(violations)} violation(s)"
        )
    if violations:
        ctx.exit(1)
