"""Search finds words of Chinese and Japanese: the index holds each character of their runs.

Chinese and Japanese write no spaces between words, so both databases' parsers took a whole
clause (``她对花生过敏``) for one word, and a search for ``花生`` found nothing. The index now
holds, for a text with runs of those scripts, the text itself and then each character of
its runs as a token (``memstore_search_text``, :func:`memstore.core.words.search_text`); a
query's run is searched as the phrase of its characters. A text without such runs is
indexed exactly as before.

* SQLite: ``memstore_search_text`` is a function memstore registers on every connection it
  opens. The FTS5 triggers index and un-index through it (an external-content index must be
  told the very text it indexed, so the delete side uses it too), and the rows already
  indexed whose text has such runs are indexed again, through the function.
* PostgreSQL: the same function in SQL (``IMMUTABLE``, so an expression index may use it),
  and the three expression indexes rebuilt over ``to_tsvector('english',
  memstore_search_text(...))``. A long-term entry's value is indexed as ``jsonb`` text: the
  ``json`` column keeps the text a client wrote, which may spell every character outside
  ASCII as an escape (``"\u82b1"``), and no word of that could be found.

Revision ID: 0016
Revises: 0015
"""

from __future__ import annotations

import sqlite3

from alembic import op

revision = "0016"
down_revision = "0015"
branch_labels = None
depends_on = None

#: Hiragana, katakana, CJK ideographs (unified, extension A, compatibility), the iteration
#: mark: memstore.core.words' unspaced scripts, as PostgreSQL regular-expression escapes.
_PG_UNSPACED = r"\u3005\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
_PG_FUNCTION = f"""
CREATE OR REPLACE FUNCTION memstore_search_text(t text) RETURNS text
LANGUAGE sql IMMUTABLE STRICT PARALLEL SAFE AS $$
  SELECT CASE WHEN t ~ '[{_PG_UNSPACED}]' THEN t || E'\\n' || (
    SELECT string_agg(rtrim(regexp_replace(m[1], '(.)', '\\1 ', 'g')), ' ')
    FROM regexp_matches(t, '([{_PG_UNSPACED}]+)', 'g') AS m
  ) ELSE t END
$$
"""
#: (index, table, the text it indexed before, the text it indexes now)
_PG_INDEXES = [
    ("ix_items_search", "items", "content", "memstore_search_text(content)"),
    ("ix_summaries_search", "summaries", "content", "memstore_search_text(content)"),
    (
        "ix_ltm_entries_search",
        "ltm_entries",
        "key || ' ' || value::text",
        "memstore_search_text(key || ' ' || value::jsonb::text)",
    ),
]

_WATERMARK = "(SELECT upto FROM items_fts_watermark)"
_NEWEST = "(SELECT coalesce(max(rowid), 0) FROM items)"


def _texts(row: str, columns: list[str], through: bool) -> str:
    """``row``'s (``new`` or ``old``) indexed columns, through the function or not."""
    return ", ".join(
        f"memstore_search_text({row}.{c})" if through else f"{row}.{c}" for c in columns
    )


def _sqlite_triggers(through: bool) -> None:
    for name, table, key, columns in (
        ("summaries_fts", "summaries", "id", ["content"]),
        ("ltm_entries_fts", "ltm_entries", "rowid", ["key", "value"]),
    ):
        listed = ", ".join(columns)
        insert = (
            f"INSERT INTO {name}(rowid, {listed}) "
            f"VALUES (new.{key}, {_texts('new', columns, through)});"
        )
        delete = (
            f"INSERT INTO {name}({name}, rowid, {listed}) "
            f"VALUES ('delete', old.{key}, {_texts('old', columns, through)});"
        )
        for event in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER {name}_{event}")
        op.execute(f"CREATE TRIGGER {name}_insert AFTER INSERT ON {table} BEGIN {insert} END")
        op.execute(f"CREATE TRIGGER {name}_delete AFTER DELETE ON {table} BEGIN {delete} END")
        op.execute(
            f"CREATE TRIGGER {name}_update AFTER UPDATE OF {listed} ON {table} "
            f"BEGIN {delete} {insert} END"
        )
    # Items: no insert trigger (the writer indexes them in bulk), and the two others are
    # guarded by the watermark (migration 0011_item_index).
    new, old = _texts("new", ["content"], through), _texts("old", ["content"], through)
    for event in ("delete", "update"):
        op.execute(f"DROP TRIGGER items_fts_{event}")
    op.execute(
        "CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN "
        f"INSERT INTO items_fts(items_fts, rowid, content) SELECT 'delete', old.rowid, {old} "
        f"WHERE old.rowid <= {_WATERMARK}; "
        f"UPDATE items_fts_watermark SET upto = {_NEWEST} WHERE upto > {_NEWEST}; END"
    )
    op.execute(
        "CREATE TRIGGER items_fts_update AFTER UPDATE OF content ON items "
        f"WHEN old.rowid <= {_WATERMARK} BEGIN "
        f"INSERT INTO items_fts(items_fts, rowid, content) VALUES ('delete', old.rowid, {old}); "
        f"INSERT INTO items_fts(rowid, content) VALUES (new.rowid, {new}); END"
    )


def _sqlite_reindex(forward: bool) -> None:
    """Index again the rows whose text the function changes (those with unspaced runs):
    un-index each as it was indexed, index it as it is indexed now."""
    old, new = ("{}", "memstore_search_text({})") if forward else ("memstore_search_text({})", "{}")
    for name, table, key, columns, extra in (
        ("items_fts", "items", "rowid", ["content"], f" AND rowid <= {_WATERMARK}"),
        ("summaries_fts", "summaries", "id", ["content"], ""),
        ("ltm_entries_fts", "ltm_entries", "rowid", ["key", "value"], ""),
    ):
        listed = ", ".join(columns)
        changed = " OR ".join(f"memstore_search_text({c}) != {c}" for c in columns)
        where = f"WHERE ({changed}){extra}"
        before = ", ".join(old.format(c) for c in columns)
        after = ", ".join(new.format(c) for c in columns)
        op.execute(
            f"INSERT INTO {name}({name}, rowid, {listed}) "
            f"SELECT 'delete', {key}, {before} FROM {table} {where}"
        )
        op.execute(
            f"INSERT INTO {name}(rowid, {listed}) SELECT {key}, {after} FROM {table} {where}"
        )


def _sqlite_function() -> None:
    """The function on this connection: memstore registers it on every connection it opens,
    but a migration may run on one a plain engine opened (``alembic`` with a connection of
    one's own)."""
    from memstore.db.connection import register_functions

    raw = op.get_bind().connection.driver_connection
    if isinstance(raw, sqlite3.Connection):
        register_functions(raw)


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_function()
        _sqlite_triggers(through=True)
        _sqlite_reindex(forward=True)
        return
    op.execute(_PG_FUNCTION)
    for name, table, _before, expression in _PG_INDEXES:
        op.execute(f"DROP INDEX {name}")
        op.execute(
            f"CREATE INDEX {name} ON {table} "
            f"USING gin (to_tsvector('english'::regconfig, {expression}))"
        )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        _sqlite_function()
        _sqlite_reindex(forward=False)
        _sqlite_triggers(through=False)
        return
    for name, table, before, _expression in _PG_INDEXES:
        op.execute(f"DROP INDEX {name}")
        vector = f"to_tsvector('english'::regconfig, {before})"
        op.execute(f"CREATE INDEX {name} ON {table} USING gin ({vector})")
    op.execute("DROP FUNCTION memstore_search_text(text)")
