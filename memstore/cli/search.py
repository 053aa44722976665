"""``memstore search QUERY``: search sessions and long-term memory by words, by meaning
(``--embedder``), or both fused."""

from __future__ import annotations

import click
from rich.text import Text

from memstore.cli.output import (
    cell,
    console,
    embedder_option,
    has_embedder,
    json_option,
    listing,
    print_json,
    run_with_store,
)
from memstore.core.embedder import SEARCH_MODES
from memstore.core.search_terms import MAX_LIMIT, SearchHit


@click.command("search")
@click.argument("query")
@click.option(
    "--session", "sessions", multiple=True, metavar="S", help="Only this session (repeatable)."
)
@click.option(
    "--scope", "scopes", multiple=True, metavar="S", help="Only this long-term scope (repeatable)."
)
@click.option(
    "--limit",
    type=click.IntRange(1, MAX_LIMIT),
    default=10,
    show_default=True,
    help="Hits to show at most, best first.",
)
@click.option(
    "--mode",
    type=click.Choice(SEARCH_MODES),
    default=None,
    help="Rank by words (lexical), meaning (semantic) or both fused (hybrid: the default with "
    "an embedder; lexical without).",
)
@embedder_option
@json_option
@click.pass_context
def search_history(
    ctx: click.Context,
    query: str,
    sessions: tuple[str, ...],
    scopes: tuple[str, ...],
    limit: int,
    mode: str | None,
    as_json: bool,
) -> None:
    """Search every item (of any fate), summary and long-term entry for QUERY's words.

    QUERY is text, not syntax: quotes, *, - or NEAR are searched as the words around them.
    With --session only those sessions are searched, with --scope only those long-term
    scopes; with neither, everything. With --embedder the search also ranks by meaning, and
    stores the vectors it makes for rows that had none.
    """
    hits = run_with_store(
        ctx,
        lambda store: store.search(
            query,
            sessions=sessions or None,
            scopes=scopes or None,
            limit=limit,
            mode=mode,  # type: ignore[arg-type]  # one of SEARCH_MODES (click checked it)
        ),
        read_only=not has_embedder(ctx),
    )
    if as_json:
        print_json([hit.to_dict() for hit in hits])
        return
    if not hits:
        console().print("no matches")
        return
    columns = [("where", "left"), ("seq", "right"), ("fate", "left"), ("score", "right")]
    table = listing(f"{len(hits)} best match(es)", [*columns, ("snippet", "left")])
    for hit in hits:
        table.add_row(*_row(hit))
    console().print(table)


def _row(hit: SearchHit) -> tuple[str, str, str, str, Text]:
    if hit.source == "ltm":
        assert hit.entry is not None
        where, seq, fate = f"ltm {hit.entry.scope}", "", "saved"
    elif hit.source == "summary":
        where, seq = f"{hit.session_id}", f"summary {hit.compaction}"
        fate = hit.fate or "current"
    else:
        where, seq = f"{hit.session_id}", str(hit.seq)
        fate = f"{hit.fate} by #{hit.compaction}" if hit.fate else "active"
    return where, seq, fate, f"{hit.score:.3g}", cell(hit.snippet)
