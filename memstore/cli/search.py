"""``memstore search QUERY``: search sessions and long-term memory by words, by meaning
(``--embedder``), or both fused."""

from __future__ import annotations

import click
from rich.table import Table

from memstore.cli.output import (
    cell,
    console,
    embedder_option,
    has_embedder,
    is_narrow,
    json_option,
    lines,
    listing,
    narrow_listing,
    print_json,
    run_with_store,
)
from memstore.core.embedder import SEARCH_MODES
from memstore.core.search_terms import MAX_LIMIT, SearchHit


@click.command("search")
@click.argument("query")
@click.option(
    "--session", "sessions", multiple=True, metavar="S", help="This session's history (repeatable)."
)
@click.option(
    "--scope",
    "scopes",
    multiple=True,
    metavar="S",
    help="This scope's long-term entries and its sessions' history (repeatable).",
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
    With neither --session nor --scope everything is searched; each one given adds what it
    selects: a session its history, a scope its long-term entries and the history of the
    sessions recorded in it. With --embedder the search also ranks by meaning, and stores
    the vectors it makes for rows that had none.
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
        print_json([hit.to_dict() | {"rank": rank} for rank, hit in enumerate(hits, 1)])
        return
    if not hits:
        console().print("no matches")
        return
    console().print(_narrow_table(hits) if is_narrow() else _table(hits))


# The tables list the hits best first, numbered, and show no score: each source (items,
# summaries, long-term entries) is ranked by its own index, and their scores are on scales
# of their own (2.4 beside 1.8e-06 for an equally good match). --json keeps each raw score.


def _table(hits: list[SearchHit]) -> Table:
    columns = [("#", "right"), ("where", "left"), ("seq", "right"), ("fate", "left")]
    table = listing(f"{len(hits)} best match(es), best first", [*columns, ("snippet", "left")])
    for rank, hit in enumerate(hits, 1):
        where, seq, fate = _where(hit)
        table.add_row(str(rank), where, seq, fate, cell(hit.snippet))
    return table


def _narrow_table(hits: list[SearchHit]) -> Table:
    table = narrow_listing(f"{len(hits)} best match(es), best first", "where", "snippet")
    for rank, hit in enumerate(hits, 1):
        where, seq, fate = _where(hit)
        at = f"seq {seq}" if seq.isdigit() else seq
        table.add_row(lines(f"{rank}. {where}", f"{at} {fate}".strip()), cell(hit.snippet))
    return table


def _where(hit: SearchHit) -> tuple[str, str, str]:
    """Where a hit is: the session (or ``ltm SCOPE``), its seq (or summary), its fate."""
    if hit.source == "ltm":
        assert hit.entry is not None
        return f"ltm {hit.entry.scope}", "", "saved"
    if hit.source == "summary":
        return f"{hit.session_id}", f"summary {hit.compaction}", hit.fate or "current"
    fate = f"{hit.fate} by #{hit.compaction}" if hit.fate else "active"
    return f"{hit.session_id}", str(hit.seq), fate
