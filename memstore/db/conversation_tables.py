"""pydantic-ai's conversation store's tables (migration 0014; :mod:`memstore.db.conversation_tree`).
Declared on the schema's one metadata, beside the ledger's tables (:mod:`memstore.db.tables`)."""

from __future__ import annotations

from sqlalchemy import Column, ForeignKey, Index, Integer, PrimaryKeyConstraint, String, Table, Text

from memstore.db.column_types import UTCDateTime, metadata

# pydantic-ai's conversation store (migration 0014; memstore.db.conversation_tree): a tree of
# message entries shared by forks, and one record per conversation naming its newest entry.
# Keys are memstore.core.conversation_keys's; the foreign keys make a record or a branch that
# names a missing entry, or an entry whose parent is missing, impossible.
conversation_entries = Table(
    "conversation_entries",
    metadata,
    Column("id", Text, primary_key=True),
    Column("name", Text, nullable=True),  # the escaped id, when the key is its digest
    Column("parent_id", Text, ForeignKey("conversation_entries.id"), nullable=True),
    Column("kind", String(32), nullable=False),
    Column("message", Text, nullable=False),  # the message's JSON, as pydantic-ai dumped it
    Column("text", Text, nullable=False),  # what it says, for show and search
    Column("created_at", UTCDateTime, nullable=False),
    Index("ix_conversation_entries_parent_id", "parent_id"),  # the walk down a delete makes
)

conversations = Table(
    "conversations",
    metadata,
    Column("key", Text, primary_key=True),
    Column("name", Text, nullable=True),
    Column("scope", Text, nullable=True),
    Column("scope_name", Text, nullable=True),
    Column("head_id", Text, ForeignKey("conversation_entries.id"), nullable=True),
    Column("revision", Text, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("usage", Text, nullable=False),
    Column("deferred_tool_requests", Text, nullable=True),
    Column("forked_from", Text, nullable=True),
    Column("forked_at", Text, nullable=True),
    Column("title", Text, nullable=True),
    Column("metadata", Text, nullable=True),
    Column("format_version", Integer, nullable=False),
    Index("ix_conversations_scope", "scope", "updated_at"),
    Index("ix_conversations_updated_at", "updated_at"),
    Index("ix_conversations_head_id", "head_id"),
)

#: The last entries of the branches a conversation left, in order: with the heads, what keeps
#: entries from being collected.
conversation_branches = Table(
    "conversation_branches",
    metadata,
    Column(
        "conversation", Text, ForeignKey("conversations.key", ondelete="CASCADE"), nullable=False
    ),
    Column("position", Integer, nullable=False),
    Column("entry_id", Text, ForeignKey("conversation_entries.id"), nullable=False),
    PrimaryKeyConstraint("conversation", "position"),
    Index("ix_conversation_branches_entry_id", "entry_id"),
)
