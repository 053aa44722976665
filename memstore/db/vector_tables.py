"""The stored vectors' tables (migration 0015; :mod:`memstore.db.vectors`). Declared on the
schema's one metadata, beside the ledger's tables (:mod:`memstore.db.tables`)."""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Column,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    LargeBinary,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
)

from memstore.db.column_types import metadata

#: Each embedder that stored vectors here: its dimensions, and a generation every vector
#: write bumps, so an in-process cache sees another process's writes (migration 0015).
embedders = Table(
    "embedders",
    metadata,
    Column("name", String(200), primary_key=True),
    Column("dimensions", Integer, nullable=False),
    Column("generation", BigInteger, nullable=False),
)

#: An item's vector per embedder (float32 bytes), or the error that kept it from having one.
item_vectors = Table(
    "item_vectors",
    metadata,
    Column("item_id", String(36), ForeignKey("items.id", ondelete="CASCADE"), nullable=False),
    Column("embedder", String(200), ForeignKey("embedders.name"), nullable=False),
    Column("generation", BigInteger, nullable=False),
    Column("vector", LargeBinary, nullable=True),
    Column("error", Text, nullable=True),
    PrimaryKeyConstraint("item_id", "embedder"),
    # The cache loads what is newer than the generation it holds; check counts per embedder.
    Index("ix_item_vectors_embedder", "embedder", "generation"),
)

#: A long-term entry's vector per embedder, for the entry version it embeds.
entry_vectors = Table(
    "entry_vectors",
    metadata,
    Column("scope", String(128), nullable=False),
    Column("key", String(256), nullable=False),
    Column("embedder", String(200), ForeignKey("embedders.name"), nullable=False),
    Column("entry_version", Integer, nullable=False),
    Column("vector", LargeBinary, nullable=True),
    Column("error", Text, nullable=True),
    PrimaryKeyConstraint("scope", "key", "embedder"),
    ForeignKeyConstraint(
        ["scope", "key"],
        ["ltm_entries.scope", "ltm_entries.key"],
        name="fk_entry_vectors_scope_ltm_entries",
        ondelete="CASCADE",
    ),
)
