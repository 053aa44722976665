"""Long-term memory: scoped, versioned key-value entries and the history of their changes.

``ltm_entries`` holds the live entries (primary key: scope, key); ``ltm_history`` records
every change (``set``, ``delete``, ``expire``) with the version it produced, so an entry's
versions never repeat across a delete and a re-create.

Revision ID: 0003
Revises: 0002
Create Date: 2026-11-30
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None

UTC = sa.DateTime(timezone=True)
# TEXT on SQLite: a column declared JSON gets NUMERIC affinity there, which would store the
# JSON text 1.0 as the integer 1 (memstore.db.tables.JSONDocument encodes the JSON itself).
JSON_DOCUMENT = sa.JSON().with_variant(sa.Text(), "sqlite")


def upgrade() -> None:
    op.create_table(
        "ltm_entries",
        sa.Column("scope", sa.String(128), nullable=False),
        sa.Column("key", sa.String(256), nullable=False),
        sa.Column("value", JSON_DOCUMENT, nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("created_at", UTC, nullable=False),
        sa.Column("updated_at", UTC, nullable=False),
        sa.Column("expires_at", UTC, nullable=True),
        sa.PrimaryKeyConstraint("scope", "key", name="pk_ltm_entries"),
    )
    op.create_index("ix_ltm_entries_expires_at", "ltm_entries", ["expires_at"])
    op.create_table(
        "ltm_history",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("scope", sa.String(128), nullable=False),
        sa.Column("key", sa.String(256), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("value", JSON_DOCUMENT, nullable=True),
        sa.Column("action", sa.String(16), nullable=False),
        sa.Column("changed_at", UTC, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_ltm_history"),
        sa.UniqueConstraint("scope", "key", "version", name="uq_ltm_history_scope_key_version"),
    )


def downgrade() -> None:
    op.drop_table("ltm_history")
    op.drop_index("ix_ltm_entries_expires_at", table_name="ltm_entries")
    op.drop_table("ltm_entries")
