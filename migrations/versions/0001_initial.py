"""Initial schema: sessions, items, compactions, summaries.

Revision ID: 0001
Revises:
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None

UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.create_table(
        "sessions",
        sa.Column("id", sa.String(128), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.Column("estimator", sa.String(64), nullable=False),
        sa.Column("last_seq", sa.Integer, nullable=False),
        sa.Column("active_items", sa.Integer, nullable=False),
        sa.Column("active_tokens", sa.Integer, nullable=False),
        sa.Column("user_turns", sa.Integer, nullable=False),
        sa.Column("compaction_count", sa.Integer, nullable=False),
        sa.Column("summary", sa.Text, nullable=True),
        sa.Column("summary_tokens", sa.Integer, nullable=True),
        sa.Column("hard_limit", sa.Integer, nullable=False),
        sa.Column("target_limit", sa.Integer, nullable=False),
        sa.Column("keep_recent", sa.Integer, nullable=False),
        sa.Column("lease_owner", sa.String(200), nullable=True),
        sa.Column("lease_token", sa.Integer, nullable=False),
        sa.Column("lease_expires_at", sa.Float, nullable=True),
        sa.Column("created_at", UTC, nullable=False),
        sa.Column("updated_at", UTC, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_sessions"),
    )
    op.create_table(
        "compactions",
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("snapshot_version", sa.Integer, nullable=False),
        sa.Column("committed_version", sa.Integer, nullable=False),
        sa.Column("trigger", sa.String(32), nullable=False),
        sa.Column("before_tokens", sa.Integer, nullable=False),
        sa.Column("after_tokens", sa.Integer, nullable=False),
        sa.Column("items_dropped", sa.Integer, nullable=False),
        sa.Column("items_summarized", sa.Integer, nullable=False),
        sa.Column("items_evicted", sa.Integer, nullable=False),
        sa.Column("summary_action", sa.String(16), nullable=False),
        sa.Column("summary_tokens", sa.Integer, nullable=True),
        sa.Column("summary_error", sa.Text, nullable=True),
        sa.Column("summarizer", sa.String(200), nullable=True),
        sa.Column("worker_host", sa.String(255), nullable=False),
        sa.Column("worker_pid", sa.Integer, nullable=False),
        sa.Column("started_at", UTC, nullable=False),
        sa.Column("finished_at", UTC, nullable=False),
        sa.Column("summarize_seconds", sa.Float, nullable=False),
        sa.Column("attempts", sa.Integer, nullable=False),
        sa.Column("hard_limit", sa.Integer, nullable=False),
        sa.Column("target_limit", sa.Integer, nullable=False),
        sa.Column("keep_recent", sa.Integer, nullable=False),
        sa.Column("usage", sa.JSON, nullable=True),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name="fk_compactions_session_id_sessions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "number", name="pk_compactions"),
    )
    op.create_table(
        "items",
        sa.Column("id", sa.String(36), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("role", sa.String(16), nullable=False),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("priority", sa.Integer, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("created_at", UTC, nullable=False),
        sa.Column("estimated_tokens", sa.Integer, nullable=False),
        sa.Column("added_version", sa.Integer, nullable=False),
        sa.Column("idempotency_key", sa.String(200), nullable=True),
        sa.Column("fate", sa.String(16), nullable=True),
        sa.Column("removed_by", sa.Integer, nullable=True),
        sa.Column("removed_version", sa.Integer, nullable=True),
        sa.Column("version", sa.Integer, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name="fk_items_session_id_sessions",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["session_id", "removed_by"],
            ["compactions.session_id", "compactions.number"],
            name="fk_items_removed_by_compactions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_items"),
        sa.UniqueConstraint("session_id", "seq", name="uq_items_session_id_seq"),
        sa.UniqueConstraint(
            "session_id", "idempotency_key", name="uq_items_session_id_idempotency_key"
        ),
    )
    op.create_index(
        "ix_items_active",
        "items",
        ["session_id", "seq"],
        sqlite_where=sa.text("fate IS NULL"),
        postgresql_where=sa.text("fate IS NULL"),
    )
    op.create_index("ix_items_removed", "items", ["session_id", "removed_by"])
    op.create_table(
        "summaries",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("compaction_number", sa.Integer, nullable=False),
        sa.Column("content", sa.Text, nullable=False),
        sa.Column("estimated_tokens", sa.Integer, nullable=False),
        sa.Column("created_version", sa.Integer, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id", "compaction_number"],
            ["compactions.session_id", "compactions.number"],
            name="fk_summaries_compaction",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_summaries"),
    )
    op.create_index("ix_summaries_session", "summaries", ["session_id", "compaction_number"])


def downgrade() -> None:
    op.drop_table("summaries")
    op.drop_index("ix_items_removed", table_name="items")
    op.drop_index("ix_items_active", table_name="items")
    op.drop_table("items")
    op.drop_table("compactions")
    op.drop_table("sessions")
