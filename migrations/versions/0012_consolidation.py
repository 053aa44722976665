"""Consolidation: sessions that belong to a scope, provenance on long-term entries, and the
record of every consolidation run and of the items it consumed.

* ``sessions.scope``: the long-term scope a session belongs to (``user:alice``; NULL: none),
  indexed because recall lists the sessions of a scope.
* ``ltm_entries.source`` and ``ltm_history.source``: where an entry's version came from
  (session, item seqs, compaction, extractor) when consolidation wrote it; NULL when a person
  or the application did (``ltm set``, ``remember``), which consolidation never overwrites.
* ``consolidations``: one row per committed run, with its report; ``consolidated_items``: one
  row per item a run consumed (primary key: session and seq, so no item is consumed twice);
  ``consolidated_facts``: each fact (slot and text digest) a run wrote or left out for its
  budget, so a copy of the same conversation never brings it back. All go with their
  session (ON DELETE CASCADE).

Plain ADD COLUMN on both backends, never a batch rebuild: rebuilding ``sessions`` on SQLite
would cascade into every item, and rebuilding ``ltm_entries`` would renumber the rowids its
full-text index points at.

Revision ID: 0012
Revises: 0011_item_index
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011_item_index"
branch_labels = None
depends_on = None

UTC = sa.DateTime(timezone=True)
# TEXT on SQLite, as in 0003: a column declared JSON gets NUMERIC affinity there.
JSON_DOCUMENT = sa.JSON().with_variant(sa.Text(), "sqlite")


def upgrade() -> None:
    op.add_column("sessions", sa.Column("scope", sa.String(128), nullable=True))
    op.create_index("ix_sessions_scope", "sessions", ["scope"])
    op.add_column("ltm_entries", sa.Column("source", JSON_DOCUMENT, nullable=True))
    op.add_column("ltm_history", sa.Column("source", JSON_DOCUMENT, nullable=True))
    op.create_table(
        "consolidations",
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("number", sa.Integer, nullable=False),
        sa.Column("scope", sa.String(128), nullable=False),
        sa.Column("extractor", sa.String(200), nullable=False),
        sa.Column("compaction", sa.Integer, nullable=True),
        sa.Column("worker", sa.String(300), nullable=False),
        sa.Column("started_at", UTC, nullable=False),
        sa.Column("finished_at", UTC, nullable=False),
        sa.Column("source_tokens", sa.Integer, nullable=False),
        sa.Column("entry_tokens", sa.Integer, nullable=False),
        sa.Column("report", JSON_DOCUMENT, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id"],
            ["sessions.id"],
            name="fk_consolidations_session_id_sessions",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "number", name="pk_consolidations"),
    )
    op.create_table(
        "consolidated_items",
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("seq", sa.Integer, nullable=False),
        sa.Column("run", sa.Integer, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id", "run"],
            ["consolidations.session_id", "consolidations.number"],
            name="fk_consolidated_items_run",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("session_id", "seq", name="pk_consolidated_items"),
    )
    op.create_table(
        "consolidated_facts",
        sa.Column("scope", sa.String(128), nullable=False),
        sa.Column("key", sa.String(256), nullable=False),
        sa.Column("digest", sa.String(64), nullable=False),
        sa.Column("session_id", sa.String(128), nullable=False),
        sa.Column("run", sa.Integer, nullable=False),
        sa.ForeignKeyConstraint(
            ["session_id", "run"],
            ["consolidations.session_id", "consolidations.number"],
            name="fk_consolidated_facts_run",
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("scope", "key", "digest", name="pk_consolidated_facts"),
    )


def downgrade() -> None:
    op.drop_table("consolidated_facts")
    op.drop_table("consolidated_items")
    op.drop_table("consolidations")
    op.drop_column("ltm_history", "source")
    op.drop_column("ltm_entries", "source")
    op.drop_index("ix_sessions_scope", table_name="sessions")
    op.drop_column("sessions", "scope")
