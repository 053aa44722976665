"""The schema, declared once (SQLAlchemy Core). Alembic migrations must produce exactly this.

Design notes:

* ``sessions`` carries cached aggregates (``active_items``, ``active_tokens``, the current
  summary and its tokens) so an append updates one row instead of re-counting the session,
  and a snapshot is two indexed reads whatever the history length.
* ``sessions.version`` is both the optimistic-concurrency token and the session's event clock:
  every append and every compaction increments it, and items, summaries and compactions
  record the version they were committed at, which is what replay orders by.
* Nothing is deleted by compaction: a removed item keeps its row with ``fate`` and the
  compaction number (``removed_by``) that removed it; the composite foreign key makes a fate
  that points at a compaction that never committed impossible.
* The partial index on active items keeps snapshot reads flat as the history grows; the one
  on removed items is partial too, so appends and compactions maintain only what is read.
  For the same reason the uniqueness of idempotency keys is a partial unique index: an
  append without a key (most of them) writes no entry there.
* Long-term memory is two tables beside the sessions: ``ltm_entries`` holds each live entry
  (one row per scope and key), ``ltm_history`` every change ever made (set, delete, expire).
  A (scope, key)'s versions never repeat, even across a delete and a re-create (the unique
  constraint on the history enforces it), so a stale compare-and-set can never match again.
"""

from __future__ import annotations

from sqlalchemy import (
    JSON,
    BigInteger,
    Column,
    Float,
    ForeignKey,
    ForeignKeyConstraint,
    Index,
    Integer,
    PrimaryKeyConstraint,
    String,
    Table,
    Text,
    UniqueConstraint,
    text,
)

from memstore.db.column_types import JSONDocument, UTCDateTime, metadata

sessions = Table(
    "sessions",
    metadata,
    Column("id", String(128), primary_key=True),
    Column("version", Integer, nullable=False),
    Column("estimator", String(64), nullable=False),
    Column("last_seq", Integer, nullable=False),
    Column("active_items", Integer, nullable=False),
    Column("active_tokens", Integer, nullable=False),
    Column("user_turns", Integer, nullable=False),
    Column("compaction_count", Integer, nullable=False),
    Column("summary", Text, nullable=True),
    Column("summary_tokens", Integer, nullable=True),
    Column("hard_limit", Integer, nullable=False),
    Column("target_limit", Integer, nullable=False),
    Column("keep_recent", Integer, nullable=False),
    Column("lease_owner", String(200), nullable=True),
    Column("lease_token", Integer, nullable=False),
    Column("lease_expires_at", Float, nullable=True),  # seconds since 1970, database clock
    Column("lease_host", String(255), nullable=True),
    Column("lease_pid", Integer, nullable=True),
    Column("lease_started", BigInteger, nullable=True),  # the holder's process start time
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    # Where the recorded history starts after `memstore prune` (0 / NULL: never pruned).
    Column("pruned_items", Integer, nullable=False, server_default="0"),
    Column("pruned_compactions", Integer, nullable=False, server_default="0"),
    Column("base_version", Integer, nullable=False, server_default="0"),
    Column("base_summary", Text, nullable=True),
    Column("base_summary_tokens", Integer, nullable=True),
    # A fork's parent and the parent's version it started at (NULL: not a fork; see
    # memstore.db.fork). Not a foreign key: the fork holds its own copy of that history.
    Column("parent_id", String(128), nullable=True),
    Column("parent_version", Integer, nullable=True),
    Index("ix_sessions_parent_id", "parent_id"),
    # The long-term scope the session belongs to (migration 0012; NULL: none).
    Column("scope", String(128), nullable=True),
    Index("ix_sessions_scope", "scope"),
)

compactions = Table(
    "compactions",
    metadata,
    Column("session_id", String(128), ForeignKey("sessions.id", ondelete="CASCADE")),
    Column("number", Integer, nullable=False),
    Column("snapshot_version", Integer, nullable=False),
    Column("committed_version", Integer, nullable=False),
    Column("trigger", String(32), nullable=False),
    Column("before_tokens", Integer, nullable=False),
    Column("after_tokens", Integer, nullable=False),
    Column("items_dropped", Integer, nullable=False),
    Column("items_summarized", Integer, nullable=False),
    Column("items_evicted", Integer, nullable=False),
    Column("summary_action", String(16), nullable=False),
    Column("summary_tokens", Integer, nullable=True),
    Column("summary_error", Text, nullable=True),
    Column("summarizer", String(200), nullable=True),
    Column("worker_host", String(255), nullable=False),
    Column("worker_pid", Integer, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime, nullable=False),
    Column("summarize_seconds", Float, nullable=False),
    Column("attempts", Integer, nullable=False),
    Column("hard_limit", Integer, nullable=False),
    Column("target_limit", Integer, nullable=False),
    Column("keep_recent", Integer, nullable=False),
    Column("usage", JSON, nullable=True),
    Column("took_over_from", String(200), nullable=True),  # whose abandoned lease it took
    PrimaryKeyConstraint("session_id", "number"),
)

#: Active items: the partial index keeps snapshot reads flat as the history grows.
_ACTIVE = text("fate IS NULL")
#: Removed items: what reports and the foreign key to compactions look up (migration 0004).
_REMOVED = text("removed_by IS NOT NULL")
#: Keyed items: only they are looked up by key, or can conflict (migration 0005).
_KEYED = text("idempotency_key IS NOT NULL")
#: Calls and outputs: an output's call is looked up by call_id (migration 0007).
_HANDLED = text("handle IS NOT NULL")
_LINKED = text("call_id IS NOT NULL")

items = Table(
    "items",
    metadata,
    Column("id", String(36), primary_key=True),
    Column(
        "session_id",
        String(128),
        ForeignKey("sessions.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("seq", Integer, nullable=False),
    Column("role", String(16), nullable=False),
    Column("kind", String(32), nullable=False),
    Column("priority", Integer, nullable=False),
    Column("content", Text, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("estimated_tokens", Integer, nullable=False),
    Column("added_version", Integer, nullable=False),
    Column("idempotency_key", String(200), nullable=True),
    Column("fate", String(16), nullable=True),
    Column("removed_by", Integer, nullable=True),
    Column("removed_version", Integer, nullable=True),
    Column("version", Integer, nullable=False),
    # A carried Responses item's JSON text, exactly as given (NULL: a text item).
    Column("payload", Text, nullable=True),
    Column("call_id", String(200), nullable=True),
    # A fork's copy: the id of the item first copied (shared by every copy of the passage).
    Column("origin_id", String(36), nullable=True),
    # Who added it, the turn it belongs to, until when a call waits (migration 0010).
    Column("handle", String(64), nullable=True),
    Column("turn", Integer, nullable=True),
    Column("pending_until", Float, nullable=True),
    UniqueConstraint("session_id", "seq"),
    ForeignKeyConstraint(
        ["session_id", "removed_by"],
        ["compactions.session_id", "compactions.number"],
        name="fk_items_removed_by_compactions",
        ondelete="CASCADE",
    ),
    Index("ix_items_active", "session_id", "seq", sqlite_where=_ACTIVE),
    Index("ix_items_removed", "session_id", "removed_by", sqlite_where=_REMOVED),
    Index(
        "uq_items_session_id_idempotency_key",
        "session_id",
        "idempotency_key",
        unique=True,
        sqlite_where=_KEYED,
    ),
    Index("ix_items_call_id", "session_id", "call_id", sqlite_where=_LINKED),
    Index("ix_items_handle", "session_id", "handle", "seq", sqlite_where=_HANDLED),
)


def add_postgresql_options() -> None:
    """Give the partial indexes their PostgreSQL ``WHERE`` too (idempotent).

    Declared in the ``Index(...)`` call, ``postgresql_where`` would import the PostgreSQL
    dialect with this module (~20 ms of every CLI start-up, SQLite users included), so it is
    added when a PostgreSQL database is opened (``Database``). The schema itself is Alembic's
    (migration 0001 creates the index partial on both backends); this keeps the models equal
    to it.
    """
    for index in items.indexes:
        where = index.dialect_options["sqlite"]["where"]
        if where is not None:  # the same WHERE on both backends
            index.dialect_options["postgresql"]["where"] = where


summaries = Table(
    "summaries",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("session_id", String(128), nullable=False),
    Column("compaction_number", Integer, nullable=False),
    Column("content", Text, nullable=False),
    Column("estimated_tokens", Integer, nullable=False),
    Column("created_version", Integer, nullable=False),
    Column("origin_id", Integer, nullable=True),  # a fork's copy: the summary first copied
    ForeignKeyConstraint(
        ["session_id", "compaction_number"],
        ["compactions.session_id", "compactions.number"],
        name="fk_summaries_compaction",
        ondelete="CASCADE",
    ),
    Index("ix_summaries_session", "session_id", "compaction_number"),
)

ltm_entries = Table(
    "ltm_entries",
    metadata,
    Column("scope", String(128), nullable=False),
    Column("key", String(256), nullable=False),
    Column("value", JSONDocument, nullable=False),
    Column("version", Integer, nullable=False),
    Column("created_at", UTCDateTime, nullable=False),
    Column("updated_at", UTCDateTime, nullable=False),
    Column("expires_at", UTCDateTime, nullable=True),
    # Where this version came from when consolidation wrote it; NULL: a person or the
    # application wrote it, and consolidation never overwrites it (migration 0012).
    Column("source", JSONDocument, nullable=True),
    PrimaryKeyConstraint("scope", "key"),
    # `ltm prune` and the visibility filter look for expired rows.
    Index("ix_ltm_entries_expires_at", "expires_at"),
)

ltm_history = Table(
    "ltm_history",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column("scope", String(128), nullable=False),
    Column("key", String(256), nullable=False),
    Column("version", Integer, nullable=False),
    Column("value", JSONDocument, nullable=True),  # NULL for a delete or an expiry
    Column("action", String(16), nullable=False),
    Column("changed_at", UTCDateTime, nullable=False),
    Column("source", JSONDocument, nullable=True),
    UniqueConstraint("scope", "key", "version"),
)

#: Per model request an agent made with a session's memory: what memstore counted (memory,
#: instructions, tools) and the input tokens the model reported (memstore.core.input_counts).
input_counts = Table(
    "input_counts",
    metadata,
    Column("id", Integer, primary_key=True, autoincrement=True),
    Column(
        "session_id",
        String(128),
        ForeignKey("sessions.id", ondelete="CASCADE"),
        nullable=False,
    ),
    Column("session_version", Integer, nullable=False),
    Column("model", String(200), nullable=False),
    Column("estimated_tokens", Integer, nullable=False),
    Column("reported_tokens", Integer, nullable=False),
    Column("recorded_at", UTCDateTime, nullable=False),
    Index("ix_input_counts_session_id", "session_id", "id"),
)

#: One row per committed consolidation run, with its report (migration 0012).
consolidations = Table(
    "consolidations",
    metadata,
    Column("session_id", String(128), ForeignKey("sessions.id", ondelete="CASCADE")),
    Column("number", Integer, nullable=False),
    Column("scope", String(128), nullable=False),
    Column("extractor", String(200), nullable=False),
    Column("compaction", Integer, nullable=True),
    Column("worker", String(300), nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("finished_at", UTCDateTime, nullable=False),
    # What the run consumed and wrote, in tokens: the session's budget is cumulative.
    Column("source_tokens", Integer, nullable=False),
    Column("entry_tokens", Integer, nullable=False),
    Column("report", JSONDocument, nullable=False),
    PrimaryKeyConstraint("session_id", "number"),
)

#: One row per item a run consumed: the primary key makes consuming an item twice impossible.
consolidated_items = Table(
    "consolidated_items",
    metadata,
    Column("session_id", String(128), nullable=False),
    Column("seq", Integer, nullable=False),
    Column("run", Integer, nullable=False),
    PrimaryKeyConstraint("session_id", "seq"),
    ForeignKeyConstraint(
        ["session_id", "run"],
        ["consolidations.session_id", "consolidations.number"],
        name="fk_consolidated_items_run",
        ondelete="CASCADE",
    ),
)

#: Each fact (slot and a digest of its text) a run wrote or left out for its budget: a copy of
#: the same conversation consolidated again proposes it again, and must write nothing.
consolidated_facts = Table(
    "consolidated_facts",
    metadata,
    Column("scope", String(128), nullable=False),
    Column("key", String(256), nullable=False),
    Column("digest", String(64), nullable=False),
    Column("session_id", String(128), nullable=False),
    Column("run", Integer, nullable=False),
    PrimaryKeyConstraint("scope", "key", "digest"),
    ForeignKeyConstraint(
        ["session_id", "run"],
        ["consolidations.session_id", "consolidations.number"],
        name="fk_consolidated_facts_run",
        ondelete="CASCADE",
    ),
)

# The tables of the conversation store and of stored vectors live beside these, on the same
# metadata: imported here so the schema (migrations' comparisons, tests) is whole.
from memstore.db.conversation_tables import (  # noqa: E402
    conversation_branches,
    conversation_entries,
    conversations,
)
from memstore.db.vector_tables import embedders, entry_vectors, item_vectors  # noqa: E402

__all__ = [
    "JSONDocument",
    "UTCDateTime",
    "compactions",
    "consolidated_facts",
    "consolidated_items",
    "consolidations",
    "conversation_branches",
    "conversation_entries",
    "conversations",
    "embedders",
    "entry_vectors",
    "input_counts",
    "item_vectors",
    "items",
    "ltm_entries",
    "ltm_history",
    "metadata",
    "sessions",
    "summaries",
]
