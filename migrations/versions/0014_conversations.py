"""pydantic-ai conversations: a tree of message entries shared by forks, a record per
conversation naming its newest entry, and the branches each record left.

* ``conversation_entries``: one row per stored message (its JSON as pydantic-ai dumped it,
  and its plain text), pointing at the entry before it; indexed by parent for the walk down
  that a delete makes to find what other conversations still reach.
* ``conversations``: one row per conversation; its head, revision (the compare-and-swap
  token), scope, usage and the rest of pydantic-ai's record.
* ``conversation_branches``: the last entries of the branches a conversation left; they and
  the heads are what keeps entries from being collected.

Keys are text: pydantic-ai's ids and scopes are free-form (memstore.core.conversation_keys).

The entries' plain text is searchable, indexed as migration 0008 indexes summaries: on SQLite
an FTS5 table with external content (``conversation_entries_fts``) kept by triggers, on
PostgreSQL a GIN index over ``to_tsvector('english', text)``. New tables only: nothing
existing is touched.

Revision ID: 0014
Revises: 0012
"""

from __future__ import annotations

import sqlalchemy as sa
from alembic import op

revision = "0014"
down_revision = "0012"
branch_labels = None
depends_on = None

UTC = sa.DateTime(timezone=True)
#: The tokenizer of migration 0008's indexes: a query is split the same way for every source.
TOKENIZER = "porter unicode61 remove_diacritics 2"
FTS = "conversation_entries_fts"
PG_INDEX = "ix_conversation_entries_search"


def upgrade() -> None:
    op.create_table(
        "conversation_entries",
        sa.Column("id", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=True),
        sa.Column("parent_id", sa.Text, nullable=True),
        sa.Column("kind", sa.String(32), nullable=False),
        sa.Column("message", sa.Text, nullable=False),
        sa.Column("text", sa.Text, nullable=False),
        sa.Column("created_at", UTC, nullable=False),
        sa.ForeignKeyConstraint(
            ["parent_id"],
            ["conversation_entries.id"],
            name="fk_conversation_entries_parent_id_conversation_entries",
        ),
        sa.PrimaryKeyConstraint("id", name="pk_conversation_entries"),
    )
    op.create_index("ix_conversation_entries_parent_id", "conversation_entries", ["parent_id"])
    op.create_table(
        "conversations",
        sa.Column("key", sa.Text, nullable=False),
        sa.Column("name", sa.Text, nullable=True),
        sa.Column("scope", sa.Text, nullable=True),
        sa.Column("scope_name", sa.Text, nullable=True),
        sa.Column("head_id", sa.Text, nullable=True),
        sa.Column("revision", sa.Text, nullable=False),
        sa.Column("updated_at", UTC, nullable=False),
        sa.Column("usage", sa.Text, nullable=False),
        sa.Column("deferred_tool_requests", sa.Text, nullable=True),
        sa.Column("forked_from", sa.Text, nullable=True),
        sa.Column("forked_at", sa.Text, nullable=True),
        sa.Column("title", sa.Text, nullable=True),
        sa.Column("metadata", sa.Text, nullable=True),
        sa.Column("format_version", sa.Integer, nullable=False),
        sa.ForeignKeyConstraint(
            ["head_id"],
            ["conversation_entries.id"],
            name="fk_conversations_head_id_conversation_entries",
        ),
        sa.PrimaryKeyConstraint("key", name="pk_conversations"),
    )
    op.create_index("ix_conversations_scope", "conversations", ["scope", "updated_at"])
    op.create_index("ix_conversations_updated_at", "conversations", ["updated_at"])
    op.create_index("ix_conversations_head_id", "conversations", ["head_id"])
    op.create_table(
        "conversation_branches",
        sa.Column("conversation", sa.Text, nullable=False),
        sa.Column("position", sa.Integer, nullable=False),
        sa.Column("entry_id", sa.Text, nullable=False),
        sa.ForeignKeyConstraint(
            ["conversation"],
            ["conversations.key"],
            name="fk_conversation_branches_conversation_conversations",
            ondelete="CASCADE",
        ),
        sa.ForeignKeyConstraint(
            ["entry_id"],
            ["conversation_entries.id"],
            name="fk_conversation_branches_entry_id_conversation_entries",
        ),
        sa.PrimaryKeyConstraint("conversation", "position", name="pk_conversation_branches"),
    )
    op.create_index("ix_conversation_branches_entry_id", "conversation_branches", ["entry_id"])
    if op.get_bind().dialect.name == "sqlite":
        _create_fts()
    else:
        op.execute(
            f"CREATE INDEX {PG_INDEX} ON conversation_entries "
            "USING gin (to_tsvector('english'::regconfig, text))"
        )


def _create_fts() -> None:
    op.execute(
        f"CREATE VIRTUAL TABLE {FTS} USING fts5(text, content='conversation_entries', "
        f"content_rowid='rowid', tokenize='{TOKENIZER}')"
    )
    # External content: FTS5 is told every change, with the old text for a delete (it removes
    # exactly the tokens it indexed). Entries are never updated, but an update would be told.
    insert = f"INSERT INTO {FTS}(rowid, text) VALUES (new.rowid, new.text);"
    delete = f"INSERT INTO {FTS}({FTS}, rowid, text) VALUES ('delete', old.rowid, old.text);"
    table = "conversation_entries"
    op.execute(f"CREATE TRIGGER {FTS}_insert AFTER INSERT ON {table} BEGIN {insert} END")
    op.execute(f"CREATE TRIGGER {FTS}_delete AFTER DELETE ON {table} BEGIN {delete} END")
    op.execute(
        f"CREATE TRIGGER {FTS}_update AFTER UPDATE OF text ON {table} BEGIN {delete} {insert} END"
    )


def downgrade() -> None:
    if op.get_bind().dialect.name == "sqlite":
        for event in ("insert", "delete", "update"):
            op.execute(f"DROP TRIGGER {FTS}_{event}")
        op.execute(f"DROP TABLE {FTS}")  # its shadow tables go with it
    op.drop_table("conversation_branches")
    op.drop_table("conversations")
    op.drop_table("conversation_entries")
