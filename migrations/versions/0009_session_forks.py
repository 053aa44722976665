"""Forked sessions, and how far memstore's count of a model input was from the model's.

* ``sessions.parent_id`` / ``parent_version``: the session this one was forked from, and the
  parent's version it started at (both ``NULL``: not a fork). Plain columns, not a foreign
  key: a fork holds its own copy of the history it started with, so nothing in it depends on
  the parent's rows; ``purge`` refuses to leave a fork naming a purged parent. The index
  finds a session's forks.
* ``items.origin_id`` / ``summaries.origin_id``: for a copied row, the id of the row it was
  first copied from (the same for every copy of one passage), so a search across sessions
  shows a passage once however many forks share it. ``NULL``: an original row.
* ``input_counts``: one row per model request an agent made with a session's memory: what
  memstore counted (memory, instructions and tool schemas) and the ``input_tokens`` the model
  reported, so ``show`` can say whether the estimator fits the model.

Plain ADD COLUMN and CREATE TABLE on both backends: existing rows get ``NULL``, which is what
they are (no session was forked before this revision).

Revision ID: 0009_forks
Revises: 0008
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0009_forks"
down_revision = "0008"
branch_labels = None
depends_on = None

UTC = sa.DateTime(timezone=True)


def upgrade() -> None:
    op.add_column("sessions", sa.Column("parent_id", sa.String(128), nullable=True))
    op.add_column("sessions", sa.Column("parent_version", sa.Integer, nullable=True))
    op.create_index("ix_sessions_parent_id", "sessions", ["parent_id"])
    op.add_column("items", sa.Column("origin_id", sa.String(36), nullable=True))
    op.add_column("summaries", sa.Column("origin_id", sa.Integer, nullable=True))
    op.create_table(
        "input_counts",
        sa.Column("id", sa.Integer, autoincrement=True, nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("session_version", sa.Integer, nullable=False),
        sa.Column("model", sa.String(200), nullable=False),
        sa.Column("estimated_tokens", sa.Integer, nullable=False),
        sa.Column("reported_tokens", sa.Integer, nullable=False),
        sa.Column("recorded_at", UTC, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_input_counts"),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name="fk_input_counts_session_id_sessions",
            ondelete="CASCADE",
        ),
    )
    op.create_index("ix_input_counts_session_id", "input_counts", ["session_id", "id"])


def downgrade() -> None:
    op.drop_index("ix_input_counts_session_id", table_name="input_counts")
    op.drop_table("input_counts")
    op.drop_column("summaries", "origin_id")
    op.drop_column("items", "origin_id")
    op.drop_index("ix_sessions_parent_id", table_name="sessions")
    op.drop_column("sessions", "parent_version")
    op.drop_column("sessions", "parent_id")
