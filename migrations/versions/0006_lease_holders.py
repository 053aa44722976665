"""Leases that know their holder: host, pid and process start time; takeovers on record.

A worker that finds the compaction lease held by a process of its own host that no longer
runs takes it over at once instead of waiting for it to expire; for that the lease records
the holder's host, pid and start time (pids are reused). The compaction that follows a
takeover records whose lease it took (``took_over_from``), so ``memstore reports`` shows
crashed compactors.

Revision ID: 0006
Revises: 0005
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0006"
down_revision = "0005"
branch_labels = None
depends_on = None


# Plain ADD / DROP COLUMN on both backends (SQLite has both since 3.35), never a batch
# rebuild: rebuilding ``sessions`` or ``compactions`` on SQLite drops the old table, and with
# foreign keys on that cascades into every item.


def upgrade() -> None:
    op.add_column("sessions", sa.Column("lease_host", sa.String(255), nullable=True))
    op.add_column("sessions", sa.Column("lease_pid", sa.Integer, nullable=True))
    op.add_column("sessions", sa.Column("lease_started", sa.BigInteger, nullable=True))
    op.add_column("compactions", sa.Column("took_over_from", sa.String(200), nullable=True))


def downgrade() -> None:
    op.drop_column("compactions", "took_over_from")
    op.drop_column("sessions", "lease_started")
    op.drop_column("sessions", "lease_pid")
    op.drop_column("sessions", "lease_host")
