"""Full-text search over items, summaries and long-term entries, and its audit.

The index is migration 0008's, items changed by 0011_item_index and every text by 0016: on
SQLite three FTS5 tables with external content (``items_fts``, ``summaries_fts``,
``ltm_entries_fts``); on PostgreSQL GIN indexes over ``to_tsvector('english',
memstore_search_text(...))``, maintained by PostgreSQL in every write. Either way a text is
indexed as :func:`memstore.core.words.search_text` makes it: itself, plus each character of
its Chinese and Japanese runs, which a query's run matches as a phrase.
On SQLite, summaries and long-term entries are indexed by the writes that make them
(triggers), items are not: an append writes its row and nothing else
(:mod:`memstore.db.search_index`), so a search queries ``items_fts`` and then the *tail*,
the items above the index's watermark, indexed for that one query into a temporary table.
Either way a search sees every committed item, read-only stores included. Neither index is
declared in :mod:`memstore.db.tables` (SQLAlchemy models neither FTS5 tables nor
expression indexes); :data:`INDEX_TABLES` names what Alembic's comparisons must leave alone.

A search runs one ranked query per source (items, summaries, entries), each returning its
best ``limit`` rows, and keeps the best ``limit`` of them all. The words arrive already
split (:func:`memstore.core.search_terms.search_terms`) and each is quoted as a literal here,
so no user text is ever parsed as query syntax. Every value is a bound parameter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from datetime import datetime
from functools import partial
from typing import TYPE_CHECKING, Any

from sqlalchemy import BindParameter, Connection, TextualSelect, bindparam, select, text

from memstore.core.search_terms import (
    SNIPPET_CLOSE,
    SNIPPET_ELLIPSIS,
    SNIPPET_OPEN,
    SNIPPET_WORDS,
    SearchHit,
    SearchScope,
    readable_snippet,
)
from memstore.db import search_index
from memstore.db.connection import SEARCH_TEXT_FUNCTION
from memstore.db.engine import Database
from memstore.db.fork import unique_hits
from memstore.db.reads import ITEM_COLUMNS
from memstore.db.search_hits import entry_hit, item_hit, summary_hit
from memstore.db.tables import JSONDocument, UTCDateTime, items
from memstore.db.tables import sessions as session_rows

if TYPE_CHECKING:
    from memstore.db.vector_search import SemanticQuery

#: The FTS5 tables (SQLite) as migration 0008 made them: content table, its integer key and
#: the indexed columns.
FTS_TABLES = {
    "items_fts": ("items", "rowid", ("content",)),
    "summaries_fts": ("summaries", "id", ("content",)),
    "ltm_entries_fts": ("ltm_entries", "rowid", ("key", "value")),
}
#: Their tokenizer: words of any script, case and accents folded, English endings stemmed.
TOKENIZER = "porter unicode61 remove_diacritics 2"
#: FTS5 keeps each index in shadow tables named after it.
_SHADOWS = ("_data", "_idx", "_docsize", "_config", "_content")
#: The FTS5 table of conversation entries (migration 0014; memstore.db.conversation_search).
CONVERSATION_FTS = "conversation_entries_fts"
#: Everything the search index adds to a SQLite schema (for Alembic's comparisons).
INDEX_TABLES = frozenset(
    [
        *FTS_TABLES,
        *(name + suffix for name in FTS_TABLES for suffix in _SHADOWS),
        search_index.WATERMARK_TABLE,
        CONVERSATION_FTS,
        *(CONVERSATION_FTS + suffix for suffix in _SHADOWS),
    ]
)


def modelled(name: str | None, type_: str, parent_names: Any) -> bool:
    """Alembic's ``include_name`` hook: whether a reflected name belongs to the models
    (the search index's FTS5 tables, shadow tables and expression indexes do not)."""
    return name not in INDEX_TABLES and name not in POSTGRES_INDEXES


#: The PostgreSQL expression indexes.
POSTGRES_INDEXES = (
    "ix_items_search",
    "ix_summaries_search",
    "ix_ltm_entries_search",
    "ix_conversation_entries_search",  # migration 0014
)
#: Must be the configuration migration 0008 indexed with: the planner uses an expression
#: index only for the very same expression.
PG_CONFIG = "'english'::regconfig"
_PG_HEADLINE = (
    f"StartSel={SNIPPET_OPEN}, StopSel={SNIPPET_CLOSE}, MaxWords={SNIPPET_WORDS}, "
    f"MinWords={SNIPPET_WORDS // 2}, MaxFragments=1, FragmentDelimiter=' {SNIPPET_ELLIPSIS} '"
)
#: The columns of :data:`~memstore.db.reads.ITEM_COLUMNS`, for the raw ranking queries.
_ITEM_COLUMNS = ", ".join(f"i.{column.name}" for column in ITEM_COLUMNS)
_ITEM_TYPES = {"created_at": UTCDateTime()}
_ENTRY_TYPES = {
    "value": JSONDocument(),
    "created_at": UTCDateTime(),
    "updated_at": UTCDateTime(),
    "expires_at": UTCDateTime(),
    "source": JSONDocument(),
}


def match_expression(terms: Sequence[str], dialect: str) -> str:
    """The words as *any-of* query text, each word a quoted literal of the dialect's syntax.

    The words contain only letters and digits, and a phrase of them only spaces between
    (:func:`~memstore.core.search_terms.search_terms`): quoted, a phrase is a phrase in both
    syntaxes, and even a word such as ``NEAR`` or ``AND`` stays a word.
    """
    if dialect == "sqlite":
        return " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
    return " | ".join("'" + term.replace("'", "''").replace("\\", "\\\\") + "'" for term in terms)


# -- the queries, per dialect ---------------------------------------------------------------


def _session_filter(scope: SearchScope, column: str) -> str:
    return "" if scope.sessions is None else f" AND {column} IN :sessions"


def _items_sql(dialect: str, scope: SearchScope, index: str = "items_fts") -> str:
    """SQLite: the items that FTS5 table ``index`` holds (``items_fts``, or the tail's
    temporary table)."""
    where = _session_filter(scope, "i.session_id")
    if not scope.include_active:
        where += " AND i.fate IS NOT NULL"
    if dialect == "sqlite":
        return (
            f"SELECT {_ITEM_COLUMNS}, -bm25({index}) AS score, "
            f"snippet({index}, 0, :open, :close, :dots, :words) AS snippet "
            f"FROM {index} JOIN items AS i ON i.rowid = {index}.rowid "
            f"WHERE {index} MATCH :match{where} "
            f"ORDER BY bm25({index}), i.session_id, i.seq LIMIT :limit"
        )
    vector = f"to_tsvector({PG_CONFIG}, {SEARCH_TEXT_FUNCTION}(i.content))"
    query = f"to_tsquery({PG_CONFIG}, :match)"
    return (
        f"SELECT t.*, ts_headline({PG_CONFIG}, t.content, {query}, :headline) AS snippet "
        f"FROM (SELECT {_ITEM_COLUMNS}, ts_rank({vector}, {query}) AS score FROM items AS i "
        f"WHERE {vector} @@ {query}{where} "
        f"ORDER BY score DESC, i.session_id, i.seq LIMIT :limit) AS t "
        f"ORDER BY t.score DESC, t.session_id, t.seq"
    )


# A summary is current when it is its session's newest and the session still has a summary
# (a later compaction may have removed it); every other one was superseded.
_SUMMARY_FATE = (
    "CASE WHEN s.summary IS NOT NULL AND m.compaction_number = (SELECT max(x.compaction_number)"
    " FROM summaries AS x WHERE x.session_id = m.session_id) THEN NULL ELSE 'superseded' END"
)


def _summaries_sql(dialect: str, scope: SearchScope) -> str:
    where = _session_filter(scope, "m.session_id")
    if not scope.include_active:
        where += f" AND {_SUMMARY_FATE} IS NOT NULL"
    columns = (
        f"m.session_id, m.compaction_number, m.content, m.created_version, {_SUMMARY_FATE} AS fate"
    )
    joined = "JOIN sessions AS s ON s.id = m.session_id"
    if dialect == "sqlite":
        return (
            f"SELECT {columns}, -bm25(summaries_fts) AS score, "
            f"snippet(summaries_fts, 0, :open, :close, :dots, :words) AS snippet "
            f"FROM summaries_fts JOIN summaries AS m ON m.id = summaries_fts.rowid {joined} "
            f"WHERE summaries_fts MATCH :match{where} "
            f"ORDER BY bm25(summaries_fts), m.session_id, m.compaction_number LIMIT :limit"
        )
    vector = f"to_tsvector({PG_CONFIG}, {SEARCH_TEXT_FUNCTION}(m.content))"
    query = f"to_tsquery({PG_CONFIG}, :match)"
    return (
        f"SELECT t.*, ts_headline({PG_CONFIG}, t.content, {query}, :headline) AS snippet "
        f"FROM (SELECT {columns}, ts_rank({vector}, {query}) AS score FROM summaries AS m "
        f"{joined} WHERE {vector} @@ {query}{where} "
        f"ORDER BY score DESC, m.session_id, m.compaction_number LIMIT :limit) AS t "
        f"ORDER BY t.score DESC, t.session_id, t.compaction_number"
    )


def _entries_sql(dialect: str, scope: SearchScope) -> str:
    where = " AND (e.expires_at IS NULL OR e.expires_at > :now)"
    if scope.scopes is not None:
        where += " AND e.scope IN :scopes"
    columns = (
        "e.scope, e.key, e.value, e.version, e.created_at, e.updated_at, e.expires_at, e.source"
    )
    if dialect == "sqlite":
        return (
            f"SELECT {columns}, -bm25(ltm_entries_fts) AS score, "
            f"snippet(ltm_entries_fts, -1, :open, :close, :dots, :words) AS snippet "
            f"FROM ltm_entries_fts JOIN ltm_entries AS e ON e.rowid = ltm_entries_fts.rowid "
            f"WHERE ltm_entries_fts MATCH :match{where} "
            f"ORDER BY bm25(ltm_entries_fts), e.scope, e.key LIMIT :limit"
        )
    # As jsonb text: the json column keeps a client's escapes ("\u82b1"), which no word
    # matches (migration 0016 indexes the same expression).
    document = "e.key || ' ' || e.value::jsonb::text"
    vector = f"to_tsvector({PG_CONFIG}, {SEARCH_TEXT_FUNCTION}({document}))"
    query = f"to_tsquery({PG_CONFIG}, :match)"
    return (
        f"SELECT t.*, ts_headline({PG_CONFIG}, t.document, {query}, :headline) AS snippet "
        f"FROM (SELECT {columns}, {document} AS document, ts_rank({vector}, {query}) AS score "
        f"FROM ltm_entries AS e WHERE {vector} @@ {query}{where} "
        f"ORDER BY score DESC, e.scope, e.key LIMIT :limit) AS t "
        f"ORDER BY t.score DESC, t.scope, t.key"
    )


def _statement(sql: str, scope: SearchScope, types: dict[str, Any]) -> TextualSelect:
    statement = text(sql)
    expanding: list[BindParameter[Any]] = [
        bindparam(name, expanding=True)
        for name, value in (("sessions", scope.sessions), ("scopes", scope.scopes))
        if value is not None and f":{name}" in sql
    ]
    if ":now" in sql:
        expanding.append(bindparam("now", type_=UTCDateTime()))
    return statement.bindparams(*expanding).columns(**types)


# -- running a search -------------------------------------------------------------------------


def search_rows(
    conn: Connection,
    terms: Sequence[str],
    scope: SearchScope,
    limit: int,
    now: datetime,
    semantic: SemanticQuery | None = None,
) -> list[SearchHit]:
    """The best ``limit`` hits for ``terms`` within ``scope``, best first (a read).

    A passage a fork copied from its parent is one passage: only its best copy is listed
    (:func:`~memstore.db.fork.unique_hits`), and more rows are ranked until ``limit``
    distinct ones are found or none is left. With ``semantic``, the rows are also ranked by
    meaning and the two rankings fused (or, when it says so, ranked by meaning alone).
    """
    scope = with_scope_sessions(conn, scope)
    fetch = limit
    while True:
        ranked = _hybrid_rows(conn, terms, scope, fetch, now, semantic)
        hits = unique_hits(conn, ranked)
        if len(hits) >= limit or len(ranked) < fetch:
            return hits[:limit]
        # Copies crowded the ranking: rank as many more rows as they took, at least double.
        fetch = max(fetch * 2, fetch * limit // max(len(hits), 1) + limit)


def _hybrid_rows(
    conn: Connection,
    terms: Sequence[str],
    scope: SearchScope,
    limit: int,
    now: datetime,
    semantic: SemanticQuery | None,
) -> list[SearchHit]:
    """The word ranking, the meaning ranking, or both fused (:mod:`memstore.core.fusion`)."""
    by_words = semantic is None or semantic.lexical
    if semantic is None:
        return _ranked_rows(conn, terms, scope, limit, now) if terms else []
    from memstore.core.fusion import FUSION_DEPTH, fuse_hits
    from memstore.db.vector_search import semantic_rows

    if not by_words:
        return semantic_rows(conn, semantic, scope, limit, now)
    # Each ranking is read deeper than the hits wanted: a row both place 15th can beat one
    # that only one of them places 5th.
    depth = limit * FUSION_DEPTH
    lexical = _ranked_rows(conn, terms, scope, depth, now) if terms else []
    return fuse_hits(lexical, semantic_rows(conn, semantic, scope, depth, now))[:limit]


def with_scope_sessions(conn: Connection, scope: SearchScope) -> SearchScope:
    """``scope`` with the sessions recorded in its ``session_scopes`` among its sessions
    (read in the search's own transaction, so a session of another scope never appears)."""
    if not scope.session_scopes or scope.sessions is None:
        return scope
    recorded = select(session_rows.c.id).where(session_rows.c.scope.in_(scope.session_scopes))
    members = sorted(conn.execute(recorded).scalars())
    chosen = tuple(dict.fromkeys([*scope.sessions, *members]))
    return SearchScope(chosen, scope.scopes, scope.include_active)


def _ranked_rows(
    conn: Connection, terms: Sequence[str], scope: SearchScope, limit: int, now: datetime
) -> list[SearchHit]:
    dialect = conn.dialect.name
    params: dict[str, Any] = {
        "match": match_expression(terms, dialect),
        "limit": limit,
        "now": now,
        "sessions": list(scope.sessions or ()),
        "scopes": list(scope.scopes or ()),
    }
    if dialect == "sqlite":
        params.update(open=SNIPPET_OPEN, close=SNIPPET_CLOSE, dots=SNIPPET_ELLIPSIS)
        params["words"] = SNIPPET_WORDS
    else:
        params["headline"] = _PG_HEADLINE
    hits: list[SearchHit] = []
    if scope.sessions != ():
        items_sql = _statement(_items_sql(dialect, scope), scope, _ITEM_TYPES)
        hits += [item_hit(row) for row in conn.execute(items_sql, params)]
        if dialect == "sqlite":
            hits += _tail_hits(conn, scope, params)
        summaries_sql = _statement(_summaries_sql(dialect, scope), scope, {})
        hits += [summary_hit(row) for row in conn.execute(summaries_sql, params)]
    if scope.scopes != ():
        entries_sql = _statement(_entries_sql(dialect, scope), scope, _ENTRY_TYPES)
        hits += [entry_hit(row) for row in conn.execute(entries_sql, params)]
    hits.sort(key=lambda hit: -hit.score)  # stable: each source's own order breaks ties
    return [
        dataclasses.replace(hit, snippet=readable_snippet(hit.snippet, hit.text, terms))
        for hit in hits[:limit]
    ]


def _tail_hits(conn: Connection, scope: SearchScope, params: dict[str, Any]) -> list[SearchHit]:
    """The hits among the items not indexed yet (SQLite): they are indexed into a temporary
    table for this query only (:func:`~memstore.db.search_index.scan_tail`)."""
    if not search_index.has_tail(conn):
        return []
    try:
        sessions = None if scope.sessions is None else list(scope.sessions)
        if not search_index.scan_tail(conn, TOKENIZER, sessions, not scope.include_active):
            return []
        sql = _items_sql("sqlite", scope, search_index.TAIL_TABLE)
        return [item_hit(row) for row in conn.execute(_statement(sql, scope, _ITEM_TYPES), params)]
    finally:
        search_index.drop_tail(conn)


async def search(
    db: Database,
    terms: Sequence[str],
    scope: SearchScope,
    limit: int,
    now: datetime,
    semantic: SemanticQuery | None = None,
) -> list[SearchHit]:
    """:func:`search_rows` in one read transaction (no terms and no ``semantic``: no hits,
    no query)."""
    if not terms and semantic is None:
        return []
    return await db.run_read(
        partial(search_rows, terms=terms, scope=scope, limit=limit, now=now, semantic=semantic)
    )


def passage_rows(
    conn: Connection,
    terms: Sequence[str],
    session_id: str,
    limit: int,
    now: datetime,
    semantic: SemanticQuery | None = None,
) -> list[tuple[SearchHit, ...]]:
    """What left the session's working memory and best matches ``terms`` (and, with
    ``semantic``, the query's meaning): each matched item with the item right after it, if
    that one left working memory too (a read)."""
    scope = SearchScope((session_id,), (), include_active=False)
    hits = search_rows(conn, terms, scope, limit, now, semantic)
    wanted = [hit.seq + 1 for hit in hits if hit.seq is not None]
    replies: dict[int, SearchHit] = {}
    if wanted:
        query = select(*ITEM_COLUMNS).where(
            items.c.session_id == session_id, items.c.seq.in_(wanted), items.c.fate.is_not(None)
        )
        for row in conn.execute(query):
            reply = item_hit(row, score=0.0, snippet="")
            replies[reply.seq or 0] = reply
    return [
        (hit,) if hit.seq is None or hit.seq + 1 not in replies else (hit, replies[hit.seq + 1])
        for hit in hits
    ]


async def passages(
    db: Database,
    terms: Sequence[str],
    session_id: str,
    limit: int,
    now: datetime,
    semantic: SemanticQuery | None = None,
) -> list[tuple[SearchHit, ...]]:
    """:func:`passage_rows` in one read transaction (no terms and no ``semantic``:
    nothing)."""
    if not terms and semantic is None:
        return []
    return await db.run_read(
        partial(
            passage_rows, terms=terms, session_id=session_id, limit=limit, now=now,
            semantic=semantic,
        )
    )  # fmt: skip
