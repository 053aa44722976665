"""Prune support: where a session's recorded history now starts.

``memstore prune`` deletes the oldest compactions and the items they removed. The session row
keeps what replay and ``check`` need to start from that point instead of from the first append.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-29
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None


def upgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.add_column(sa.Column("pruned_items", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(
            sa.Column("pruned_compactions", sa.Integer, nullable=False, server_default="0")
        )
        batch.add_column(sa.Column("base_version", sa.Integer, nullable=False, server_default="0"))
        batch.add_column(sa.Column("base_summary", sa.Text, nullable=True))
        batch.add_column(sa.Column("base_summary_tokens", sa.Integer, nullable=True))


def downgrade() -> None:
    with op.batch_alter_table("sessions") as batch:
        batch.drop_column("base_summary_tokens")
        batch.drop_column("base_summary")
        batch.drop_column("base_version")
        batch.drop_column("pruned_compactions")
        batch.drop_column("pruned_items")
