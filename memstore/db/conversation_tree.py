"""pydantic-ai conversations in SQL: the only module that touches ``conversations``,
``conversation_entries`` and ``conversation_branches``.

A conversation is a **record** (its head, revision, scope and what pydantic-ai carries) and a
chain of **entries**, each pointing at the one before it; forks and branches share entries,
so the entries form a tree. The protocol, in the order a write runs it:

1. **Compare-and-swap.** A write reads the record's revision (``FOR UPDATE`` on PostgreSQL)
   and refuses one it did not expect, then writes the record with the expected revision in
   its ``WHERE`` (or inserts it with ``ON CONFLICT DO NOTHING`` when none was expected), and a
   row count other than 1 is a conflict too: of two writers with the same expected revision,
   exactly one commits.
2. **New entries with their record.** The entries a save adds are inserted in the same
   transaction, parents first, and each must follow an entry stored or added before it; the
   head and every branch must name an entry stored or added. A conflict anywhere rolls back
   the whole write: no entry is left behind without its record. Entries are immutable: one
   written again with the same id must hold the same message after the same parent.
3. **Collection.** Deleting a record deletes, in the same transaction, every entry no other
   record reaches any more (through its head or a branch it left): one statement whose
   recursive queries walk up from the deleted record's tips, down to everything continuing
   from there, and up again from the other records' tips found there. Only that part of the
   tree is read, however many other conversations the database holds.

On PostgreSQL writers run concurrently, so a collection takes an exclusive transaction-level
advisory lock and every write a shared one: a write that found an entry stored can count on
it until it commits, and a collection sees every record committed before it started. SQLite
serializes writers anyway (``BEGIN IMMEDIATE``). The foreign keys back all of this up: no
record, branch or entry can name an entry that is gone.

Free-form ids and scopes are stored by their keys (:mod:`memstore.core.conversation_keys`);
:mod:`memstore.db.conversation_reads` reads what is written here.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from sqlalchemy import Connection, bindparam, delete, insert, select, text, update
from sqlalchemy.sql import ColumnElement

from memstore.core.conversation_keys import (
    StoredConversation,
    StoredEntry,
    escape,
    key_of,
    stored_name,
)
from memstore.db.connection import dialect_insert
from memstore.db.conversation_reads import chunks, record_row
from memstore.db.engine import Database
from memstore.db.reads import utcnow
from memstore.db.tables import (
    conversation_branches,
    conversation_entries,
    conversations,
)
from memstore.errors import ConversationConflictError

#: PostgreSQL advisory lock of the entry tree: shared by writes, exclusive for a collection
#: (migrations use 7243520190).
GRAPH_LOCK = 7243520191


def _lock_graph(conn: Connection, *, exclusive: bool) -> None:
    if conn.dialect.name == "postgresql":
        function = "pg_advisory_xact_lock" if exclusive else "pg_advisory_xact_lock_shared"
        conn.execute(text(f"SELECT {function}(:key)"), {"key": GRAPH_LOCK})


def _stored_keys(conn: Connection, keys: Sequence[str]) -> dict[str, Any]:
    found: dict[str, Any] = {}
    for chunk in chunks(keys):
        rows = conn.execute(
            select(
                conversation_entries.c.id,
                conversation_entries.c.parent_id,
                conversation_entries.c.kind,
                conversation_entries.c.message,
            ).where(conversation_entries.c.id.in_(chunk))
        )
        found.update((str(row.id), row) for row in rows)
    return found


def _insert_entries(
    conn: Connection, conversation_id: str, entries: Sequence[StoredEntry], tips: Sequence[str]
) -> None:
    """Insert the new entries (step 2 of the module docstring); ``tips`` (the head and the
    branches) must name an entry stored or added."""
    names = [stored_name(entry.id, "new_entries") for entry in entries]
    parents = [None if e.parent_id is None else key_of(e.parent_id, "parent_id") for e in entries]
    tip_keys = [key_of(tip, "head_id") for tip in tips]
    stored = _stored_keys(
        conn, sorted({*(n.key for n in names), *filter(None, parents), *tip_keys})
    )
    added: set[str] = set()
    now = utcnow()
    rows = []
    for entry, name, parent in zip(entries, names, parents, strict=True):
        if parent is not None and parent not in added and parent not in stored:
            raise ConversationConflictError(
                conversation_id, f"entry {entry.id[:80]!r} follows an entry stored nowhere"
            )
        same = stored.get(name.key)
        if same is not None:
            if (same.parent_id, same.kind, same.message) != (parent, entry.kind, entry.message):
                raise ConversationConflictError(
                    conversation_id, f"entry {entry.id[:80]!r} is stored with other content"
                )
        elif name.key not in added:
            rows.append(
                {
                    "id": name.key,
                    "name": name.name,
                    "parent_id": parent,
                    "kind": entry.kind,
                    "message": entry.message,
                    "text": entry.text,
                    "created_at": now,
                }
            )
        added.add(name.key)
    for tip, key in zip(tips, tip_keys, strict=True):
        if key not in added and key not in stored:
            raise ConversationConflictError(
                conversation_id, f"entry {tip[:80]!r} is stored nowhere (deleted since?)"
            )
    for row in rows:  # parents first: each insert may name the one before it
        conn.execute(insert(conversation_entries).values(row))


def _record_values(record: StoredConversation) -> dict[str, Any]:
    """The columns a save writes (never ``title`` or ``metadata``: an update's)."""
    scope = None if record.scope is None else stored_name(record.scope, "scope")
    return {
        "head_id": None if record.head_id is None else key_of(record.head_id, "head_id"),
        "revision": record.revision,
        "updated_at": record.updated_at,
        "scope": None if scope is None else scope.key,
        "scope_name": None if scope is None else scope.name,
        "usage": record.usage,
        "deferred_tool_requests": record.deferred_tool_requests,
        "forked_from": None if record.forked_from is None else escape(record.forked_from),
        "forked_at": None if record.forked_at is None else escape(record.forked_at),
        "format_version": record.format_version,
    }


def _write_branches(conn: Connection, key: str, branches: Sequence[str]) -> None:
    wanted = [key_of(tip, "branches") for tip in branches]
    now = [
        row.entry_id
        for row in conn.execute(
            select(conversation_branches.c.entry_id)
            .where(conversation_branches.c.conversation == key)
            .order_by(conversation_branches.c.position)
        )
    ]
    if now == wanted:
        return  # most saves leave the branches as they were
    conn.execute(delete(conversation_branches).where(conversation_branches.c.conversation == key))
    for position, entry_id in enumerate(wanted):
        conn.execute(
            insert(conversation_branches).values(
                conversation=key, position=position, entry_id=entry_id
            )
        )


def _conflict(conversation_id: str, expected: str | None, actual: str | None) -> Exception:
    if expected is None:
        return ConversationConflictError(conversation_id, "it is stored already")
    if actual is None:
        return ConversationConflictError(conversation_id, "it is not stored (deleted since?)")
    return ConversationConflictError(conversation_id, "it was saved since it was read")


def write_record_rows(
    conn: Connection,
    record: StoredConversation,
    new_entries: Sequence[StoredEntry],
    expected_revision: str | None,
) -> None:
    """Store ``record`` and its new entries, replacing the record at ``expected_revision``
    (``None``: there must be none), as one write function (module docstring).

    Raises:
        ConversationConflictError: another revision is stored, or an entry is stored nowhere.
    """
    name = stored_name(record.conversation_id, "conversation_id")
    _lock_graph(conn, exclusive=False)
    key_is = conversations.c.key == name.key
    stored = conn.execute(select(conversations.c.revision).where(key_is).with_for_update()).first()
    actual = None if stored is None else stored.revision
    if actual != expected_revision:
        raise _conflict(record.conversation_id, expected_revision, actual)
    tips = [*([] if record.head_id is None else [record.head_id]), *record.branches]
    _insert_entries(conn, record.conversation_id, new_entries, tips)
    values = _record_values(record)
    if expected_revision is None:
        row = {
            **values,
            "key": name.key,
            "name": name.name,
            "title": None if record.title is None else escape(record.title),
            "metadata": record.metadata,
        }
        insert_row = dialect_insert(conn.dialect.name)(conversations).values(row)
        result = conn.execute(insert_row.on_conflict_do_nothing(index_elements=["key"]))
    else:
        result = conn.execute(
            update(conversations)
            .where(key_is, conversations.c.revision == expected_revision)
            .values(values)
        )
    if result.rowcount != 1:  # another writer won in between
        raise _conflict(record.conversation_id, expected_revision, "?")
    _write_branches(conn, name.key, record.branches)


async def write_record(
    db: Database,
    record: StoredConversation,
    new_entries: Sequence[StoredEntry],
    expected_revision: str | None,
) -> None:
    """:func:`write_record_rows` in one write transaction."""
    await db.run_write(
        partial(
            write_record_rows,
            record=record,
            new_entries=new_entries,
            expected_revision=expected_revision,
        )
    )


def write_details_rows(
    conn: Connection,
    conversation_id: str,
    details: dict[str, str | None],
    expected_revision: str,
    expected: dict[str, str | None],
) -> StoredConversation:
    """Set the record's ``title`` / ``metadata`` (``details``) if it is at
    ``expected_revision`` and holds ``expected``; its revision and time stay.

    Raises:
        ConversationConflictError: no such record holds them.
    """
    key = key_of(conversation_id, "conversation_id")

    def stored_form(column: str, value: str | None) -> str | None:
        return escape(value) if column == "title" and value is not None else value

    checks: list[ColumnElement[bool]] = [
        conversations.c[column].is_not_distinct_from(stored_form(column, value))
        for column, value in expected.items()
    ]
    result = conn.execute(
        update(conversations)
        .where(conversations.c.key == key, conversations.c.revision == expected_revision, *checks)
        .values({column: stored_form(column, value) for column, value in details.items()})
    )
    if result.rowcount != 1:
        raise ConversationConflictError(
            conversation_id, "it was saved, deleted or updated since it was read"
        )
    found = record_row(conn, key)
    assert found is not None  # updated in this very transaction
    return found


async def write_details(
    db: Database,
    conversation_id: str,
    details: dict[str, str | None],
    expected_revision: str,
    expected: dict[str, str | None],
) -> StoredConversation:
    """:func:`write_details_rows` in one write transaction."""
    return await db.run_write(
        partial(
            write_details_rows,
            conversation_id=conversation_id,
            details=details,
            expected_revision=expected_revision,
            expected=expected,
        )
    )


#: Step 3 of the module docstring: the entries above the deleted record's tips (``up``),
#: everything that continues from them (``down``), the other records' tips among those
#: (``tips``) and what they reach (``kept``); the rest of ``down`` is deleted in one
#: statement, so the self-referencing foreign key is checked once all of it is gone. The
#: statement begins with ``DELETE`` (the queries are its subquery): the sqlite3 module counts
#: the rows of a statement only then.
_COLLECT = """
DELETE FROM conversation_entries WHERE id IN (
  WITH RECURSIVE
  up(id) AS (
    SELECT id FROM conversation_entries WHERE id IN :roots
    UNION
    SELECT e.parent_id FROM conversation_entries AS e JOIN up ON e.id = up.id
      WHERE e.parent_id IS NOT NULL
  ),
  down(id) AS (
    SELECT id FROM up
    UNION
    SELECT e.id FROM conversation_entries AS e JOIN down ON e.parent_id = down.id
  ),
  tips(id) AS (
    SELECT head_id FROM conversations WHERE head_id IN (SELECT id FROM down)
    UNION
    SELECT entry_id FROM conversation_branches WHERE entry_id IN (SELECT id FROM down)
  ),
  kept(id) AS (
    SELECT id FROM tips
    UNION
    SELECT e.parent_id FROM conversation_entries AS e JOIN kept ON e.id = kept.id
      WHERE e.parent_id IS NOT NULL
  )
  SELECT id FROM down EXCEPT SELECT id FROM kept
)
"""


def delete_record_rows(conn: Connection, conversation_id: str, expected_revision: str) -> int:
    """Delete the record at ``expected_revision`` and collect the entries it alone reached.

    Returns:
        How many entries were deleted with it.

    Raises:
        ConversationConflictError: no record at that revision is stored.
    """
    key = key_of(conversation_id, "conversation_id")
    _lock_graph(conn, exclusive=True)
    key_is = conversations.c.key == key
    row = conn.execute(
        select(conversations.c.revision, conversations.c.head_id).where(key_is).with_for_update()
    ).first()
    if row is None or row.revision != expected_revision:
        actual = None if row is None else row.revision
        raise _conflict(conversation_id, expected_revision, actual)
    roots = [row.head_id] if row.head_id is not None else []
    roots += conn.execute(
        select(conversation_branches.c.entry_id).where(conversation_branches.c.conversation == key)
    ).scalars()
    conn.execute(delete(conversation_branches).where(conversation_branches.c.conversation == key))
    result = conn.execute(
        delete(conversations).where(key_is, conversations.c.revision == expected_revision)
    )
    if result.rowcount != 1:
        raise _conflict(conversation_id, expected_revision, "?")
    if not roots:
        return 0
    collect = text(_COLLECT).bindparams(bindparam("roots", expanding=True))
    return int(conn.execute(collect, {"roots": roots}).rowcount)


async def delete_record(db: Database, conversation_id: str, expected_revision: str) -> int:
    """:func:`delete_record_rows` in one write transaction."""
    return await db.run_write(
        partial(
            delete_record_rows, conversation_id=conversation_id, expected_revision=expected_revision
        )
    )
