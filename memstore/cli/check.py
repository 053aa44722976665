"""``memstore check [SESSION]``: verify the ledger invariants; exit 1 on any violation."""

from __future__ import annotations

from dataclasses import asdict
from typing import TYPE_CHECKING

import click

from memstore.cli.output import json_option, print_json, run_with_store

if TYPE_CHECKING:
    from memstore import EmbeddingStatus, MemoryStore
    from memstore.core.invariants import Violation


@click.command("check")
@click.argument("session_id", metavar="[SESSION]", required=False)
@json_option
@click.pass_context
def check(ctx: click.Context, session_id: str | None, as_json: bool) -> None:
    """Verify that the ledger balances, totals match, fates point at compactions, and the
    search index holds exactly the rows' words. How many of the newest items the index does
    not hold yet, and how many rows each embedder has yet to embed, is shown as information
    (searches find those by their words).

    Without SESSION every session is checked, plus SQLite's integrity and foreign keys.
    """
    violations, lag, vectors = run_with_store(
        ctx, lambda store: _check(store, session_id), read_only=True
    )
    if as_json:
        report: dict[str, object] = {
            "ok": not violations,
            "violations": [
                {"session_id": v.session_id, "rule": v.rule, "detail": v.detail} for v in violations
            ],
            "index_lag": lag,
        }
        if vectors:  # a store that never had an embedder reports as it always did
            report["embeddings"] = [asdict(status) for status in vectors]
        print_json(report)
    else:
        for violation in violations:
            click.echo(str(violation))
        if lag:  # information: the writer indexes new items in bulk, searches scan them
            click.echo(f"info: {lag} newest item(s) not in the search index yet (searched anyway)")
        for status in vectors:  # information: rows without a vector are found by words
            click.echo(f"info: {vector_line(status)}")
        click.echo(
            "ok: all invariants hold" if not violations else f"{len(violations)} violation(s)"
        )
    if violations:
        ctx.exit(1)


def vector_line(status: EmbeddingStatus) -> str:
    """One embedder's progress, for people."""
    line = (
        f"embedder {status.embedder}: {status.embedded} row(s) embedded, "
        f"{status.pending} left to embed"
    )
    if status.failed:
        line += f" ({status.failed} failed: {status.last_error})"
    return line


async def _check(
    store: MemoryStore, session_id: str | None
) -> tuple[list[Violation], int, list[EmbeddingStatus]]:
    violations = await store.check(session_id)
    return violations, await store.index_lag(), await store.embedding_status()
