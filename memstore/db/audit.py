"""Raw facts for ``memstore check``: a session's ledger, read in one transaction.

The invariants themselves are pure code in :mod:`memstore.core.invariants`; this module only
reads, so ``check`` runs on any database (even one written by another version) without
changing it.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from sqlalchemy import Connection, bindparam, select, text

from memstore.core.invariants import Ledger
from memstore.db.engine import Database
from memstore.db.search import FTS_TABLES, POSTGRES_INDEXES, TOKENIZER
from memstore.db.search_index import WATERMARK_TABLE, fill, unindexed_items
from memstore.db.tables import compactions, items, sessions, summaries


async def session_ids(db: Database) -> list[str]:
    """Every session id, sorted."""
    query = select(sessions.c.id).order_by(sessions.c.id)
    return await db.run_read(lambda conn: list(conn.execute(query).scalars()))


async def load_ledger(db: Database, session_id: str) -> Ledger | None:
    """The session's rows (``None`` if it does not exist), one consistent snapshot."""
    return await db.run_read(partial(_load_ledger, session_id=session_id))


def _load_ledger(conn: Connection, session_id: str) -> Ledger | None:
    row = conn.execute(select(sessions).where(sessions.c.id == session_id)).first()
    if row is None:
        return None
    item_rows = conn.execute(
        select(
            items.c.id,
            items.c.seq,
            items.c.estimated_tokens,
            items.c.added_version,
            items.c.fate,
            items.c.removed_by,
            items.c.removed_version,
        )
        .where(items.c.session_id == session_id)
        .order_by(items.c.seq)
    ).all()
    compaction_rows = conn.execute(
        select(compactions)
        .where(compactions.c.session_id == session_id)
        .order_by(compactions.c.number)
    ).all()
    summary_rows = conn.execute(
        select(summaries)
        .where(summaries.c.session_id == session_id)
        .order_by(summaries.c.compaction_number)
    ).all()
    parent_found = None
    if row.parent_id is not None:
        parent = select(sessions.c.id).where(sessions.c.id == row.parent_id)
        parent_found = conn.execute(parent).first() is not None
    return Ledger(
        session=dict(row._mapping),
        items=[dict(r._mapping) for r in item_rows],
        compactions=[dict(r._mapping) for r in compaction_rows],
        summaries=[dict(r._mapping) for r in summary_rows],
        parent_found=parent_found,
    )


async def quick_check(db: Database) -> list[str]:
    """SQLite's ``PRAGMA quick_check`` findings (empty: ok; always empty on PostgreSQL).

    The b-tree structure and every page, without cross-checking indexes against tables:
    linear in the file's size, and several times faster than ``integrity_check``.
    """
    if db.dialect != "sqlite":
        return []

    def read(conn: Connection) -> list[str]:
        return [str(r[0]) for r in conn.execute(text("PRAGMA quick_check"))]

    return [line for line in await db.run_read(read) if line != "ok"]


async def integrity_problems(db: Database) -> list[str]:
    """SQLite's ``PRAGMA integrity_check`` and ``foreign_key_check`` findings (empty: ok)."""
    if db.dialect != "sqlite":
        return []

    def read(conn: Connection) -> tuple[list[str], list[Any]]:
        integrity = [r[0] for r in conn.execute(text("PRAGMA integrity_check"))]
        return integrity, list(conn.execute(text("PRAGMA foreign_key_check")))

    integrity, foreign = await db.run_read(read)
    problems = [f"integrity_check: {line}" for line in integrity if line != "ok"]
    problems += [f"foreign_key_check: {tuple(r)}" for r in foreign]
    return problems


async def index_problems(db: Database, session_id: str | None = None) -> list[str]:
    """Where the full-text index disagrees with the rows it indexes (empty: ok).

    SQLite: every FTS5 table and its triggers exist, and each index holds exactly the
    words of its rows (items: those up to the watermark; the newer ones are not indexed
    yet, see :func:`index_lag`): the rows (of ``session_id`` only, if given; long-term
    entries only without it) are indexed afresh into a temporary FTS5 table with the same
    tokenizer, and the two indexes' word instances must be equal both ways. Temporary
    tables are writable on a read-only connection, so this writes nothing to the database.
    PostgreSQL maintains its expression indexes itself: they must exist and be valid.
    """
    if db.dialect == "sqlite":
        return await db.run_read(partial(_sqlite_index_problems, session_id=session_id))
    return await db.run_read(_postgres_index_problems)


#: What each index needs beside its FTS5 table: items have no insert trigger (appends do
#: not index, the writer catches up: :mod:`memstore.db.search_index`) but a watermark.
_INDEX_PARTS = {
    "items_fts": ("items_fts_delete", "items_fts_update", WATERMARK_TABLE),
    "summaries_fts": ("summaries_fts_insert", "summaries_fts_delete", "summaries_fts_update"),
    "ltm_entries_fts": (
        "ltm_entries_fts_insert",
        "ltm_entries_fts_delete",
        "ltm_entries_fts_update",
    ),
}
#: The items the index holds: those up to the watermark.
_INDEXED_ITEMS = f"rowid <= (SELECT upto FROM main.{WATERMARK_TABLE})"


async def index_lag(db: Database) -> int:
    """How many items the full-text index does not hold yet (0 on PostgreSQL).

    Information, not a fault: appends do not index, the writer catches up in bulk, and a
    search scans what is not indexed (:mod:`memstore.db.search_index`).
    """
    return await db.run_read(unindexed_items)


def _sqlite_index_problems(conn: Connection, session_id: str | None) -> list[str]:
    found = {row[0] for row in conn.execute(text("SELECT name FROM sqlite_master"))}
    problems: list[str] = []
    for name, (table, key, columns) in FTS_TABLES.items():
        missing = [part for part in (name, *_INDEX_PARTS[name]) if part not in found]
        if missing:
            problems.append(f"search index: missing {', '.join(missing)}")
        elif session_id is None or table != "ltm_entries":
            problems += _compare_index(conn, name, table, key, columns, session_id)
    return problems


_FRESH, _FRESH_WORDS, _STORED_WORDS = (
    "temp.memstore_check_index",
    "temp.memstore_check_fresh",
    "temp.memstore_check_stored",
)


def _compare_index(
    conn: Connection,
    name: str,
    table: str,
    key: str,
    columns: Sequence[str],
    session_id: str | None,
) -> list[str]:
    listed = ", ".join(columns)
    conditions = [] if session_id is None else ["session_id = :sid"]
    if name == "items_fts":
        conditions.append(_INDEXED_ITEMS)
    rows = f"SELECT {key} FROM main.{table}" + (
        " WHERE " + " AND ".join(conditions) if conditions else ""
    )
    params = {"sid": session_id}
    _drop_scratch(conn)
    try:
        conn.execute(
            text(f"CREATE VIRTUAL TABLE {_FRESH} USING fts5({listed}, tokenize='{TOKENIZER}')")
        )
        fill(
            conn,
            _FRESH,
            columns,
            conn.execute(
                text(f"SELECT {key}, {listed} FROM main.{table} WHERE {key} IN ({rows})"), params
            ).all(),
        )
        conn.execute(
            text(
                f"CREATE VIRTUAL TABLE {_FRESH_WORDS} "
                "USING fts5vocab(temp, memstore_check_index, instance)"
            )
        )
        conn.execute(
            text(f"CREATE VIRTUAL TABLE {_STORED_WORDS} USING fts5vocab(main, {name}, instance)")
        )
        stored = f"SELECT term, doc, col, offset FROM {_STORED_WORDS}"
        if session_id is not None:
            stored += f" WHERE doc IN ({rows})"
        fresh = f"SELECT term, doc, col, offset FROM {_FRESH_WORDS}"
        differing = (
            conn.execute(
                text(
                    f"SELECT DISTINCT doc FROM ({stored} EXCEPT {fresh}) UNION "
                    f"SELECT DISTINCT doc FROM ({fresh} EXCEPT {stored}) ORDER BY 1"
                ),
                params,
            )
            .scalars()
            .all()
        )
    finally:
        _drop_scratch(conn)
    if not differing:
        return []
    shown = ", ".join(str(doc) for doc in differing[:5])
    more = "" if len(differing) <= 5 else f" and {len(differing) - 5} more"
    return [
        f"search index {name}: the indexed words of {table} {key} {shown}{more} "
        "differ from the rows"
    ]


def _drop_scratch(conn: Connection) -> None:
    for scratch in (_STORED_WORDS, _FRESH_WORDS, _FRESH):
        conn.execute(text(f"DROP TABLE IF EXISTS {scratch}"))


def _postgres_index_problems(conn: Connection) -> list[str]:
    rows = conn.execute(
        text(
            "SELECT c.relname, i.indisvalid AND i.indisready FROM pg_class AS c "
            "JOIN pg_index AS i ON i.indexrelid = c.oid WHERE c.relname IN :names"
        ).bindparams(bindparam("names", expanding=True)),
        {"names": list(POSTGRES_INDEXES)},
    ).all()
    state: dict[str, bool] = {name: bool(ok) for name, ok in rows}
    problems = [f"search index: missing {name}" for name in POSTGRES_INDEXES if name not in state]
    problems += [f"search index: {name} is not valid" for name, ok in state.items() if not ok]
    return problems
