"""A full-text index over every item, every summary and every long-term entry.

SQLite: three FTS5 tables with *external content* (they index the rows of ``items``,
``summaries`` and ``ltm_entries`` without a second copy of the text), kept up to date by
triggers, so an index change always commits or rolls back with the write it belongs to,
whichever code path wrote the row (append, compaction, import, prune, purge, a cascade).
The tokenizer is ``porter unicode61 remove_diacritics 2``: words of any script, case and
accents folded, English endings stemmed ("painted" finds "painting").

PostgreSQL: a GIN index over ``to_tsvector('english', ...)`` of the same columns; PostgreSQL
maintains it inside every transaction, so there is nothing to trigger.

Existing rows are back-filled here: on SQLite in batches of rowids, with a progress line in
the ``memstore`` log for a large history; on PostgreSQL by ``CREATE INDEX`` (whose progress
shows in ``pg_stat_progress_create_index``).

Revision ID: 0008
Revises: 0007
"""

from __future__ import annotations

import logging

import sqlalchemy as sa
from alembic import op

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None

log = logging.getLogger("memstore")

TOKENIZER = "porter unicode61 remove_diacritics 2"
#: Rows indexed per statement of the back-fill; a progress line is logged every batch.
BATCH = 20_000

#: (index, content table, its integer key, indexed columns)
SQLITE_INDEXES = [
    ("items_fts", "items", "rowid", ["content"]),
    ("summaries_fts", "summaries", "id", ["content"]),
    ("ltm_entries_fts", "ltm_entries", "rowid", ["key", "value"]),
]
#: (index, table, the text expression it indexes)
POSTGRES_INDEXES = [
    ("ix_items_search", "items", "content"),
    ("ix_summaries_search", "summaries", "content"),
    ("ix_ltm_entries_search", "ltm_entries", "key || ' ' || value::text"),
]


def upgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name, table, key, columns in SQLITE_INDEXES:
            _create_fts(name, table, key, columns)
            _backfill(name, table, key, columns)
    else:
        for name, table, expression in POSTGRES_INDEXES:
            op.execute(
                f"CREATE INDEX {name} ON {table} "
                f"USING gin (to_tsvector('english'::regconfig, {expression}))"
            )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for name, _table, _key, _columns in SQLITE_INDEXES:
            for event in ("insert", "delete", "update"):
                op.execute(f"DROP TRIGGER {name}_{event}")
            op.execute(f"DROP TABLE {name}")  # its shadow tables go with it
    else:
        for name, _table, _expression in POSTGRES_INDEXES:
            op.execute(f"DROP INDEX {name}")


def _create_fts(name: str, table: str, key: str, columns: list[str]) -> None:
    listed = ", ".join(columns)
    new = ", ".join(f"new.{c}" for c in columns)
    old = ", ".join(f"old.{c}" for c in columns)
    op.execute(
        f"CREATE VIRTUAL TABLE {name} USING fts5({listed}, content='{table}', "
        f"content_rowid='{key}', tokenize='{TOKENIZER}')"
    )
    # External content: FTS5 is told every change, with the old text for a delete (it
    # removes exactly the tokens it indexed). An UPDATE that leaves the text alone (a
    # compaction setting an item's fate) does not touch the index.
    insert = f"INSERT INTO {name}(rowid, {listed}) VALUES (new.{key}, {new});"
    delete = f"INSERT INTO {name}({name}, rowid, {listed}) VALUES ('delete', old.{key}, {old});"
    op.execute(f"CREATE TRIGGER {name}_insert AFTER INSERT ON {table} BEGIN {insert} END")
    op.execute(f"CREATE TRIGGER {name}_delete AFTER DELETE ON {table} BEGIN {delete} END")
    op.execute(
        f"CREATE TRIGGER {name}_update AFTER UPDATE OF {listed} ON {table} "
        f"BEGIN {delete} {insert} END"
    )


def _backfill(name: str, table: str, key: str, columns: list[str]) -> None:
    conn = op.get_bind()
    total = conn.execute(sa.text(f"SELECT count(*) FROM {table}")).scalar_one()
    listed = ", ".join(columns)
    batch = sa.text(
        f"INSERT INTO {name}(rowid, {listed}) SELECT {key}, {listed} FROM {table} "
        f"WHERE {key} > :after ORDER BY {key} LIMIT {BATCH}"
    )
    last = sa.text(
        f"SELECT max({key}) FROM (SELECT {key} FROM {table} WHERE {key} > :after "
        f"ORDER BY {key} LIMIT {BATCH})"
    )
    after, done = -1, 0
    while True:
        upto = conn.execute(last, {"after": after}).scalar()
        if upto is None:
            break
        done += conn.execute(batch, {"after": after}).rowcount
        after = upto
        if total > BATCH:
            log.info("memstore: indexing %s for search: %d of %d rows", table, done, total)
