"""Vectors beside what they embed: items (of any fate) and long-term entries, per embedder.

* ``embedders``: one row per embedder that ever stored a vector here: its name, its
  dimension count (a name never changes its dimensions: mixing them is refused) and
  ``generation``, bumped by every transaction that writes its vectors, so an in-process cache
  of them knows, with one read, whether another process wrote since it loaded.
* ``item_vectors``: one row per item and embedder: the vector (float32, little-endian, as a
  BLOB on SQLite and bytea on PostgreSQL), or, when embedding failed, no vector and the error.
  Goes with its item (ON DELETE CASCADE): prune and purge need not know about it.
* ``entry_vectors``: the same for long-term entries, with the entry version it embeds (a new
  value is a new version and needs a new vector). Goes with its entry.

Only new tables: nothing existing is rebuilt, on either backend.

Revision ID: 0015
Revises: 0014
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0015"
down_revision = "0014"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "embedders",
        sa.Column("name", sa.String(200), nullable=False),
        sa.Column("dimensions", sa.Integer, nullable=False),
        sa.Column("generation", sa.BigInteger, nullable=False),
        sa.PrimaryKeyConstraint("name", name="pk_embedders"),
    )
    op.create_table(
        "item_vectors",
        sa.Column("item_id", sa.String(36), nullable=False),
        sa.Column("embedder", sa.String(200), nullable=False),
        sa.Column("generation", sa.BigInteger, nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("item_id", "embedder", name="pk_item_vectors"),
        sa.ForeignKeyConstraint(
            ["item_id"], ["items.id"], name="fk_item_vectors_item_id_items", ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["embedder"], ["embedders.name"], name="fk_item_vectors_embedder_embedders"
        ),
    )
    op.create_index("ix_item_vectors_embedder", "item_vectors", ["embedder", "generation"])
    op.create_table(
        "entry_vectors",
        sa.Column("scope", sa.String(128), nullable=False),
        sa.Column("key", sa.String(256), nullable=False),
        sa.Column("embedder", sa.String(200), nullable=False),
        sa.Column("entry_version", sa.Integer, nullable=False),
        sa.Column("vector", sa.LargeBinary, nullable=True),
        sa.Column("error", sa.Text, nullable=True),
        sa.PrimaryKeyConstraint("scope", "key", "embedder", name="pk_entry_vectors"),
        sa.ForeignKeyConstraint(
            ["scope", "key"],
            ["ltm_entries.scope", "ltm_entries.key"],
            name="fk_entry_vectors_scope_ltm_entries",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["embedder"], ["embedders.name"], name="fk_entry_vectors_embedder_embedders"
        ),
    )


def downgrade() -> None:
    op.drop_table("entry_vectors")
    op.drop_index("ix_item_vectors_embedder", table_name="item_vectors")
    op.drop_table("item_vectors")
    op.drop_table("embedders")
