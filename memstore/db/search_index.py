"""The item index catches up in bulk: appends never index, the writer does it between writes.

An append writes its row and nothing else (migration 0011_item_index). On SQLite,
``items_fts`` holds every item whose rowid is at most the watermark
(``items_fts_watermark.upto``); the newer ones, *the tail*, are indexed here in bulk:

* by the writer thread (:mod:`memstore.db.writer`), in a transaction of its own, about once
  a :data:`~memstore.db.writer.MAINTENANCE_INTERVAL_S` after a write, when no caller's job
  is waiting, and when the store closes, :data:`BULK` rows per transaction at most, so the
  write lock is never held long;
* by a write that adds many rows at once (an import, a fork), in its own transaction, all
  of them (:func:`index_tail`): it holds the write lock for its inserts anyway, and indexing
  adds about a tenth to them, where leaving them to the writer would leave every search
  scanning them for minutes (200,000 imported items: 400 intervals).

Whichever process indexes, it does so under the write lock, so two processes never index a
row twice. Until then a search scans the tail (:func:`scan_tail`): it indexes the rows in
scope into a temporary FTS5 table with the same tokenizer, so a search sees every committed
item, and a read-only store, which never writes, sees them too. A tail row is ranked among
the tail's rows (bm25 takes its statistics from the table it queries); the writer keeps the
tail to about one interval of appends.

PostgreSQL keeps indexing every row as it is written (its GIN index): a watermark does not
fit it, since transactions commit in another order than they take their keys, and a partial
index that left active items to be read row by row made searches of other sessions' active
items several times slower for a few percent on appends (migration 0011_item_index says more).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from sqlalchemy import Connection, bindparam, text

from memstore.core.words import search_text
from memstore.db.connection import SEARCH_TEXT_FUNCTION

#: Rows indexed per transaction at most: about 30 ms of tokenizing ~200-word items on this
#: project's machine, the longest a write waits behind the index catching up.
BULK = 500
#: The one-row table holding the newest rowid the index holds (migration 0011_item_index).
WATERMARK_TABLE = "items_fts_watermark"
#: The temporary FTS5 table a search indexes the tail into (per connection, dropped after).
TAIL_TABLE = "memstore_search_tail"

_WATERMARK = text(f"SELECT upto FROM {WATERMARK_TABLE}")
_BULK_END = text(
    "SELECT max(rowid) FROM (SELECT rowid FROM items WHERE rowid > :after "
    "ORDER BY rowid LIMIT :bulk)"
)
_INDEX_RANGE = text(
    f"INSERT INTO items_fts(rowid, content) SELECT rowid, {SEARCH_TEXT_FUNCTION}(content) "
    "FROM items WHERE rowid > :after AND rowid <= :upto"
)
_MOVE_WATERMARK = text(f"UPDATE {WATERMARK_TABLE} SET upto = :upto")
_LAG = text(f"SELECT count(*) FROM items WHERE rowid > ({_WATERMARK.text})")


def index_pending(conn: Connection) -> bool:
    """Index up to :data:`BULK` rows of the tail (a write job); whether rows remain after."""
    after = conn.execute(_WATERMARK).scalar_one()
    upto = conn.execute(_BULK_END, {"after": after, "bulk": BULK}).scalar()
    if upto is None:
        return False
    conn.execute(_INDEX_RANGE, {"after": after, "upto": upto})
    conn.execute(_MOVE_WATERMARK, {"upto": upto})
    return conn.execute(_BULK_END, {"after": upto, "bulk": 1}).scalar() is not None


def index_tail(conn: Connection) -> None:
    """Index every item above the watermark, in one statement (SQLite; a no-op elsewhere).

    For a write that has just added many rows, inside its own transaction: the search index
    holds them the moment they are visible.
    """
    if conn.dialect.name != "sqlite":
        return
    after = conn.execute(_WATERMARK).scalar_one()
    upto = conn.execute(text("SELECT max(rowid) FROM items")).scalar()
    if upto is None or upto <= after:
        return
    conn.execute(_INDEX_RANGE, {"after": after, "upto": upto})
    conn.execute(_MOVE_WATERMARK, {"upto": upto})


def unindexed_items(conn: Connection) -> int:
    """How many items the index does not hold yet (a read; 0 on PostgreSQL)."""
    if conn.dialect.name != "sqlite":
        return 0
    return int(conn.execute(_LAG).scalar_one())


def scan_tail(
    conn: Connection, tokenizer: str, sessions: Sequence[str] | None, forgotten_only: bool
) -> bool:
    """Index the tail's items of ``sessions`` (all: ``None``; only those that left working
    memory: ``forgotten_only``) into the temporary FTS5 table :data:`TAIL_TABLE`; whether
    it holds any. Drop it with :func:`drop_tail`.

    Temporary tables are writable on a read-only connection: the database is not written.
    """
    drop_tail(conn)
    conn.execute(
        text(f"CREATE VIRTUAL TABLE temp.{TAIL_TABLE} USING fts5(content, tokenize='{tokenizer}')")
    )
    where = "" if sessions is None else " AND session_id IN :sessions"
    if forgotten_only:
        where += " AND fate IS NOT NULL"
    statement = text(
        f"SELECT rowid, content FROM main.items WHERE rowid > ({_WATERMARK.text}){where}"
    )
    if sessions is not None:
        statement = statement.bindparams(bindparam("sessions", expanding=True))
    rows = conn.execute(statement, {"sessions": list(sessions or ())}).all()
    fill(conn, f"temp.{TAIL_TABLE}", ["content"], rows)
    return bool(rows)


def fill(conn: Connection, table: str, columns: Sequence[str], rows: Sequence[Any]) -> None:
    """Index ``rows`` (a rowid, then one text per column) into the FTS5 table ``table`` as
    the index holds them (:func:`~memstore.core.words.search_text`), computed here rather
    than by the SQL function: a read may run on a connection memstore did not open (a
    user's own engine), which has no such function."""
    if not rows:
        return
    listed = ", ".join(columns)
    marks = ", ".join(f":c{n}" for n in range(len(columns)))
    conn.execute(
        text(f"INSERT INTO {table}(rowid, {listed}) VALUES (:rowid, {marks})"),
        [
            {"rowid": row[0], **{f"c{n}": _indexed(value) for n, value in enumerate(row[1:])}}
            for row in rows
        ],
    )


def _indexed(value: Any) -> Any:
    return search_text(value) if isinstance(value, str) else value


def drop_tail(conn: Connection) -> None:
    """Drop the temporary table of :func:`scan_tail`, if any."""
    conn.execute(text(f"DROP TABLE IF EXISTS temp.{TAIL_TABLE}"))


def has_tail(conn: Connection) -> bool:
    """Whether any item is above the watermark (one probe of the rowid b-tree)."""
    newest = conn.execute(text("SELECT max(rowid) FROM items")).scalar()
    return newest is not None and newest > conn.execute(_WATERMARK).scalar_one()
