"""Appends no longer index their item: the full-text index of items catches up in bulk.

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

PostgreSQL: the GIN index over items becomes partial, ``WHERE fate IS NOT NULL``: an append
inserts an active item and the index skips it; the compaction that removes the item (an
UPDATE of its row, which writes every index entry anew anyway) indexes it. A search scans
the active items it looks at, which working memory keeps few per session. ``ts_rank`` scores
a row alone, so scanned and indexed rows rank alike.

Revision ID: 0009
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009"
down_revision = "0008"
branch_labels = None
depends_on = None

_WATERMARK = "(SELECT upto FROM items_fts_watermark)"
_NEWEST = "(SELECT coalesce(max(rowid), 0) FROM items)"
_FTS_DELETE = (
    "INSERT INTO items_fts(items_fts, rowid, content) VALUES ('delete', old.rowid, old.content);"
)
_FTS_INSERT = "INSERT INTO items_fts(rowid, content) VALUES (new.rowid, new.content);"

#: What 0008 made of the PostgreSQL index, and what this makes of it.
_PG_INDEX = "ix_items_search"
_PG_EXPRESSION = "to_tsvector('english'::regconfig, content)"


def upgrade() -> None:
    if op.get_bind().dialect.name != "sqlite":
        op.execute(f"DROP INDEX {_PG_INDEX}")
        op.execute(
            f"CREATE INDEX {_PG_INDEX} ON items USING gin ({_PG_EXPRESSION}) WHERE fate IS NOT NULL"
        )
        return
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
        op.execute(f"DROP INDEX {_PG_INDEX}")
        op.execute(f"CREATE INDEX {_PG_INDEX} ON items USING gin ({_PG_EXPRESSION})")
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
