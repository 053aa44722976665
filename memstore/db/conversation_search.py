"""Full-text search of stored pydantic-ai conversations (``store.conversations.search``).

The index is migration 0014's, built like migration 0008's for summaries: on SQLite the FTS5
table ``conversation_entries_fts`` over each entry's plain text, kept by triggers in every
write; on PostgreSQL a GIN index over ``to_tsvector('english', text)``. The words arrive
split (:func:`memstore.core.search_terms.search_terms`) and quoted as literals
(:func:`memstore.db.search.match_expression`), so no user text is read as query syntax.

A search within a scope reads only the entries the scope's conversations reach (their
histories and the branches they left); each hit then names the conversations holding it,
found by walking down from the entry to the records whose head or branch it leads to.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from sqlalchemy import Connection, text

from memstore.core.conversation_keys import ConversationHit, key_of, original
from memstore.core.search_terms import SNIPPET_CLOSE, SNIPPET_ELLIPSIS, SNIPPET_OPEN, SNIPPET_WORDS
from memstore.db.engine import Database
from memstore.db.search import CONVERSATION_FTS, PG_CONFIG, match_expression
from memstore.db.tables import UTCDateTime

#: The entries a scope's conversations reach: their heads and branches, and every entry before.
_REACH = """
WITH RECURSIVE
tips(id) AS (
  SELECT head_id FROM conversations WHERE scope = :scope AND head_id IS NOT NULL
  UNION
  SELECT b.entry_id FROM conversation_branches AS b
    JOIN conversations AS c ON c.key = b.conversation WHERE c.scope = :scope
),
reach(id) AS (
  SELECT id FROM tips
  UNION
  SELECT e.parent_id FROM conversation_entries AS e JOIN reach ON e.id = reach.id
    WHERE e.parent_id IS NOT NULL
)
"""
_HEADLINE = (
    f"StartSel={SNIPPET_OPEN}, StopSel={SNIPPET_CLOSE}, MaxWords={SNIPPET_WORDS}, "
    f"MinWords={SNIPPET_WORDS // 2}, MaxFragments=1, FragmentDelimiter=' {SNIPPET_ELLIPSIS} '"
)


def _hits_sql(dialect: str, scoped: bool) -> str:
    within = " AND e.id IN (SELECT id FROM reach)" if scoped else ""
    head = _REACH if scoped else ""
    if dialect == "sqlite":
        return (
            f"{head}SELECT e.id, e.name, e.text, e.created_at, -bm25({CONVERSATION_FTS}) AS score,"
            f" snippet({CONVERSATION_FTS}, 0, :open, :close, :dots, :words) AS snippet "
            f"FROM {CONVERSATION_FTS} JOIN conversation_entries AS e "
            f"ON e.rowid = {CONVERSATION_FTS}.rowid "
            f"WHERE {CONVERSATION_FTS} MATCH :match{within} "
            f"ORDER BY bm25({CONVERSATION_FTS}), e.id LIMIT :limit"
        )
    vector = f"to_tsvector({PG_CONFIG}, e.text)"
    query = f"to_tsquery({PG_CONFIG}, :match)"
    return (
        f"{head}SELECT t.*, ts_headline({PG_CONFIG}, t.text, {query}, :headline) AS snippet "
        f"FROM (SELECT e.id, e.name, e.text, e.created_at, ts_rank({vector}, {query}) AS score "
        f"FROM conversation_entries AS e WHERE {vector} @@ {query}{within} "
        f"ORDER BY score DESC, e.id LIMIT :limit) AS t ORDER BY t.score DESC, t.id"
    )


#: The conversations whose head or a branch an entry leads to (``:scope``: only that scope's).
_HOLDERS = """
WITH RECURSIVE down(id) AS (
  SELECT CAST(:entry AS TEXT)
  UNION
  SELECT e.id FROM conversation_entries AS e JOIN down ON e.parent_id = down.id
)
SELECT c.key, c.name FROM conversations AS c
  WHERE c.head_id IN (SELECT id FROM down){scope}
UNION
SELECT c.key, c.name FROM conversation_branches AS b JOIN conversations AS c
  ON c.key = b.conversation WHERE b.entry_id IN (SELECT id FROM down){scope}
"""


def search_rows(
    conn: Connection, terms: Sequence[str], scope: str | None, limit: int
) -> list[ConversationHit]:
    """The best ``limit`` entries for ``terms`` (within ``scope``'s key), best first."""
    dialect = conn.dialect.name
    params: dict[str, Any] = {
        "match": match_expression(terms, dialect),
        "limit": limit,
        "scope": scope,
        "open": SNIPPET_OPEN,
        "close": SNIPPET_CLOSE,
        "dots": SNIPPET_ELLIPSIS,
        "words": SNIPPET_WORDS,
        "headline": _HEADLINE,
    }
    statement = text(_hits_sql(dialect, scope is not None)).columns(created_at=UTCDateTime())
    rows = conn.execute(statement, params).all()
    holders = text(_HOLDERS.format(scope="" if scope is None else " AND c.scope = :scope"))
    hits = []
    for row in rows:
        found = conn.execute(holders, {"entry": row.id, "scope": scope}).all()
        hits.append(
            ConversationHit(
                entry_id=original(row.id, row.name),
                conversation_ids=tuple(sorted(original(key, name) for key, name in found)),
                text=row.text,
                snippet=row.snippet,
                score=float(row.score),
                created_at=row.created_at,
            )
        )
    return hits


async def search(
    db: Database, terms: Sequence[str], scope: str | None, limit: int
) -> list[ConversationHit]:
    """:func:`search_rows` in one read (one snapshot)."""
    key = None if scope is None else key_of(scope, "scope")
    return await db.run_read(partial(search_rows, terms=terms, scope=key, limit=limit))
