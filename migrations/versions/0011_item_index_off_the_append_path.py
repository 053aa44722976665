"""On SQLite, appends no longer index their item: the index of items catches up in bulk.

SQLite: ``items_fts`` holds every item up to a watermark, the rowid kept in the one-row
table ``items_fts_watermark``; items above it (the newest) are not indexed yet, and a search
scans them (:mod:`memstore.db.search`). The insert trigger goes; the writer thread indexes
the rows above the watermark in bulk, in transactions of their own
(:mod:`memstore.db.search_index`). The delete and update triggers stay, guarded by the
watermark: telling an external-content FTS5 table to delete a row it never held corrupts
it. A delete also lowers the watermark when it removes the newest rows, since SQLite then
hands their rowids out again (``max(rowid) + 1``), and a reused rowid under the watermark
would pass for indexed. Every existing row was indexed by 0008's triggers, so the watermark
starts at the newest rowid and nothing is re-indexed.

PostgreSQL: nothing changes; its GIN index keeps indexing every row as it is written. A
watermark does not fit PostgreSQL (transactions commit in another order than they take their
keys, so a row under a watermark may still be uncommitted when the watermark passes it), and
the alternative measured, a partial index over forgotten items with active items read row by
row, made appends 1.09x faster but a search of 10 other sessions' active items 3.4x slower
(``benchmarks/pg_search_index.py``): a poor trade for recall across sessions, which searches
them on every model input.

Revision ID: 0011_item_index
Revises: 0010
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0011_item_index"
down_revision = "0010"
branch_labels = None
depends_on = None

_WATERMARK = "(SELECT upto FROM items_fts_watermark)"
_NEWEST = "(SELECT coalesce(max(rowid), 0) FROM items)"
_FTS_DELETE = (
    "INSERT INTO items_fts(items_fts, rowid, content) VALUES ('delete', old.rowid, old.content);"
)
_FTS_INSERT = "INSERT INTO items_fts(rowid, content) VALUES (new.rowid, new.content);"


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return  # PostgreSQL keeps 0008's index (see the docstring)
    op.execute("CREATE TABLE items_fts_watermark (upto INTEGER NOT NULL)")
    op.execute(f"INSERT INTO items_fts_watermark (upto) SELECT {_NEWEST}")
    for event in ("insert", "delete", "update"):
        op.execute(f"DROP TRIGGER items_fts_{event}")
    op.execute(
        "CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN "
        "INSERT INTO items_fts(items_fts, rowid, content) "
        f"SELECT 'delete', old.rowid, old.content WHERE old.rowid <= {_WATERMARK}; "
        f"UPDATE items_fts_watermark SET upto = {_NEWEST} WHERE upto > {_NEWEST}; END"
    )
    op.execute(
        "CREATE TRIGGER items_fts_update AFTER UPDATE OF content ON items "
        f"WHEN old.rowid <= {_WATERMARK} BEGIN {_FTS_DELETE} {_FTS_INSERT} END"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        return
    # 0008 indexes every row: index the ones above the watermark first.
    op.get_bind().execute(
        sa.text(
            "INSERT INTO items_fts(rowid, content) SELECT rowid, content FROM items "
            f"WHERE rowid > {_WATERMARK} ORDER BY rowid"
        )
    )
    for event in ("delete", "update"):
        op.execute(f"DROP TRIGGER items_fts_{event}")
    op.execute("DROP TABLE items_fts_watermark")
    op.execute(f"CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN {_FTS_INSERT} END")
    op.execute(f"CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN {_FTS_DELETE} END")
    op.execute(
        "CREATE TRIGGER items_fts_update AFTER UPDATE OF content ON items "
        f"BEGIN {_FTS_DELETE} {_FTS_INSERT} END"
    )
