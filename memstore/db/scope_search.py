"""The search behind a scoped session's recall: its own forgotten history and its scope's
other sessions, in one read transaction.

Only query composition: the index and its ranking are :mod:`memstore.db.search`'s. The
session's own history is searched as unscoped recall searches it (what left working memory,
:func:`~memstore.db.search.passage_rows`); the other sessions of the scope are searched whole,
active or forgotten (their working memory is not in this input). Each matched item comes with
the items right after it in its session (:data:`REPLIES`): the answer, and what followed. The
sessions searched are exactly those whose recorded scope is the session's: the list is read in
the same transaction, so a session of another scope can never appear.

:func:`confined_search` is the store-wide search of a reader confined to one scope (``memstore
mcp --scope``): its scope's sessions and the unscoped ones, read with the search.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING

from sqlalchemy import Connection, or_, select, tuple_

from memstore.core.search_terms import SearchHit, SearchScope
from memstore.db.engine import Database
from memstore.db.reads import ITEM_COLUMNS
from memstore.db.search import passage_rows, search_rows, with_scope_sessions
from memstore.db.search_hits import item_hit
from memstore.db.tables import compactions, items, sessions

if TYPE_CHECKING:
    from memstore.db.vector_search import SemanticQuery

Passage = tuple[SearchHit, ...]
#: Items after a match that come with it: another sitting's exchange is not in this input at
#: all, so a match brings its answer and what followed. On the Chit-Chat sittings of
#: ``benchmarks/fidelity.py --sittings --skip 10`` one item after a match answered 41% of the
#: questions, two 43%, three 45%, five 47%: past three each adds little, and on longer turns
#: than chat's each one more crowds out a whole passage.
REPLIES = 3
#: Each summary's time, by (session, compaction number).
SummaryTimes = dict[tuple[str, int], datetime]


def scope_members(
    conn: Connection, scope: str, *, unscoped: bool = False, but: str | None = None
) -> list[str]:
    """The ids of the sessions recorded in ``scope``, sorted (a read).

    Args:
        scope: The long-term scope.
        unscoped: Also the sessions recorded in no scope.
        but: A session id left out (the recalling session itself).
    """
    where = sessions.c.scope == scope
    if unscoped:
        where = or_(where, sessions.c.scope.is_(None))
    stmt = select(sessions.c.id).where(where)
    if but is not None:
        stmt = stmt.where(sessions.c.id != but)
    return sorted(row.id for row in conn.execute(stmt))


def _with_replies(conn: Connection, hits: Sequence[SearchHit]) -> list[Passage]:
    wanted = {
        (hit.session_id, hit.seq + step)
        for hit in hits
        if hit.seq is not None and hit.session_id
        for step in range(1, REPLIES + 1)
    }
    replies: dict[tuple[str, int], SearchHit] = {}
    if wanted:
        stmt = select(*ITEM_COLUMNS).where(
            tuple_(items.c.session_id, items.c.seq).in_(sorted(wanted))
        )
        for row in conn.execute(stmt):
            reply = item_hit(row, score=0.0, snippet="")
            replies[(reply.session_id or "", reply.seq or 0)] = reply
    out: list[Passage] = []
    for hit in hits:
        after = (
            []
            if hit.seq is None
            else [
                replies.get((hit.session_id or "", hit.seq + step))
                for step in range(1, REPLIES + 1)
            ]
        )
        out.append((hit, *(r for r in after if r is not None)))
    return out


def _summary_times(conn: Connection, passages: Sequence[Passage]) -> SummaryTimes:
    wanted = {
        (hit.session_id, hit.compaction)
        for passage in passages
        for hit in passage
        if hit.source == "summary" and hit.session_id and hit.compaction is not None
    }
    if not wanted:
        return {}
    stmt = select(compactions.c.session_id, compactions.c.number, compactions.c.finished_at).where(
        tuple_(compactions.c.session_id, compactions.c.number).in_(sorted(wanted))
    )
    return {(row.session_id, row.number): row.finished_at for row in conn.execute(stmt)}


def scope_passage_rows(
    conn: Connection,
    terms: Sequence[str],
    session_id: str,
    scope: str,
    limit: int,
    now: datetime,
    *,
    own: bool,
    semantic: SemanticQuery | None = None,
) -> tuple[list[Passage], SummaryTimes, tuple[str, ...]]:
    """The best passages of the scope for ``terms``, best first (a read).

    Args:
        terms: The words (already split).
        session_id: The recalling session.
        scope: Its scope.
        limit: Matches to take from each part (own history, other sessions).
        now: For expiry checks.
        own: Also search the session's own forgotten history (a session that does not
            exist yet has none).
        semantic: Also rank by meaning (:func:`~memstore.db.search.search_rows`).

    Returns:
        The passages, each summary's time, and the other sessions searched.
    """
    found: list[Passage] = []
    if own:
        found += passage_rows(conn, terms, session_id, limit, now, semantic)
    others = tuple(scope_members(conn, scope, but=session_id))
    if others:
        chosen = SearchScope(others, (), include_active=True)
        hits = search_rows(conn, terms, chosen, limit, now, semantic)
        found += _with_replies(conn, hits)
    found.sort(key=lambda passage: -passage[0].score)  # stable: ties keep each part's order
    return found, _summary_times(conn, found), others


async def scope_passages(
    db: Database,
    terms: Sequence[str],
    session_id: str,
    scope: str,
    limit: int,
    now: datetime,
    *,
    own: bool,
    semantic: SemanticQuery | None = None,
) -> tuple[list[Passage], SummaryTimes, tuple[str, ...]]:
    """:func:`scope_passage_rows` in one read transaction (no terms and no ``semantic``:
    nothing)."""
    if not terms and semantic is None:
        return [], {}, ()
    return await db.run_read(
        partial(
            scope_passage_rows,
            terms=terms,
            session_id=session_id,
            scope=scope,
            limit=limit,
            now=now,
            own=own,
            semantic=semantic,
        )
    )


def confined_rows(
    conn: Connection,
    terms: Sequence[str],
    search: SearchScope,
    scope: str,
    limit: int,
    now: datetime,
    semantic: SemanticQuery | None = None,
) -> list[SearchHit]:
    """:func:`~memstore.db.search.search_rows` over the sessions of ``scope`` and those of no
    scope only (a read): ``search.sessions`` narrows them further, never widens them. The list
    is read in the same transaction as the search, so a session of another scope never
    appears."""
    return search_rows(conn, terms, confined_scope(conn, search, scope), limit, now, semantic)


def confined_scope(conn: Connection, search: SearchScope, scope: str) -> SearchScope:
    """``search`` narrowed to the sessions of ``scope`` and those of no scope (a read)."""
    search = with_scope_sessions(conn, search)
    if search.sessions == ():
        return search
    members = scope_members(conn, scope, unscoped=True)
    if search.sessions is not None:
        wanted = set(search.sessions)
        members = [member for member in members if member in wanted]
    return SearchScope(tuple(members), search.scopes, search.include_active)


async def confined_search(
    db: Database,
    terms: Sequence[str],
    search: SearchScope,
    scope: str,
    limit: int,
    now: datetime,
    semantic: SemanticQuery | None = None,
) -> list[SearchHit]:
    """:func:`confined_rows` in one read transaction (no terms and no ``semantic``: no hits,
    no query)."""
    if not terms and semantic is None:
        return []
    return await db.run_read(
        partial(
            confined_rows, terms=terms, search=search, scope=scope, limit=limit, now=now,
            semantic=semantic,
        )
    )  # fmt: skip
