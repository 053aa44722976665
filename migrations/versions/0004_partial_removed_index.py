"""The index on removed items covers removed items only.

``ix_items_removed (session_id, removed_by)`` serves the reports' "which items did compaction N
remove" and the foreign key from items to compactions; neither looks at active items, whose
``removed_by`` is NULL. Indexing them anyway cost every append an index entry, and every
compaction a move of each removed item's entry out of the session's NULL run (measured on a
100-item compaction, raw sqlite3 on memstore's table: 1.00 ms -> 0.65 ms). ``removed_by = ?``
implies ``removed_by IS NOT NULL``, so both SQLite and PostgreSQL still use it for those.

Revision ID: 0004
Revises: 0003
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None

_REMOVED = "removed_by IS NOT NULL"


def upgrade() -> None:
    op.drop_index("ix_items_removed", table_name="items")
    op.create_index(
        "ix_items_removed",
        "items",
        ["session_id", "removed_by"],
        sqlite_where=sa.text(_REMOVED),
        postgresql_where=sa.text(_REMOVED),
    )


def downgrade() -> None:
    op.drop_index("ix_items_removed", table_name="items")
    op.create_index("ix_items_removed", "items", ["session_id", "removed_by"])
