"""pydantic-ai conversations in SQL, the reading side: records, entries and a history in one
recursive query. :mod:`memstore.db.conversation_tree` writes them and says how they fit.

Every function here is a plain read over a Core ``Connection`` (``Database.run_read`` runs it
in one snapshot); ids arrive as their keys (:mod:`memstore.core.conversation_keys`) and leave
as the strings they were, long ones restored from the ``name`` stored beside their digest.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from functools import partial
from typing import Any

from sqlalchemy import Connection, Row, select, text

from memstore.core.conversation_keys import StoredConversation, StoredEntry, key_of, original
from memstore.db.engine import Database
from memstore.db.tables import (
    UTCDateTime,
    conversation_branches,
    conversation_entries,
    conversations,
)

#: Ids per ``IN (...)`` list: under SQLite's oldest limit of 999 parameters a statement.
CHUNK = 500
#: A record's head entry, joined for the name its key may stand for.
_HEAD = conversation_entries.alias("head")


def chunks(values: Sequence[str]) -> Iterator[Sequence[str]]:
    """``values`` in lists of at most :data:`CHUNK`."""
    for start in range(0, len(values), CHUNK):
        yield values[start : start + CHUNK]


_RECORD_COLUMNS = (*conversations.c, _HEAD.c.name.label("head_name"))


def _records_query() -> Any:
    return select(*_RECORD_COLUMNS).outerjoin(_HEAD, _HEAD.c.id == conversations.c.head_id)


def _branches(conn: Connection, keys: Sequence[str]) -> dict[str, tuple[str, ...]]:
    found: dict[str, list[str]] = {}
    for chunk in chunks(keys):
        rows = conn.execute(
            select(
                conversation_branches.c.conversation,
                conversation_entries.c.id,
                conversation_entries.c.name,
            )
            .join(
                conversation_entries, conversation_entries.c.id == conversation_branches.c.entry_id
            )
            .where(conversation_branches.c.conversation.in_(chunk))
            .order_by(conversation_branches.c.conversation, conversation_branches.c.position)
        )
        for row in rows:
            found.setdefault(row.conversation, []).append(original(row.id, row.name))
    return {key: tuple(tips) for key, tips in found.items()}


def _unescaped(value: str | None) -> str | None:
    return None if value is None else original(value, None)


def _record(row: Row[Any], branches: tuple[str, ...]) -> StoredConversation:
    return StoredConversation(
        conversation_id=original(row.key, row.name),
        head_id=None if row.head_id is None else original(row.head_id, row.head_name),
        revision=row.revision,
        updated_at=row.updated_at,
        scope=None if row.scope is None else original(row.scope, row.scope_name),
        usage=row.usage,
        deferred_tool_requests=row.deferred_tool_requests,
        forked_from=_unescaped(row.forked_from),
        forked_at=_unescaped(row.forked_at),
        title=_unescaped(row.title),
        metadata=row.metadata,
        branches=branches,
        format_version=row.format_version,
    )


def record_row(conn: Connection, key: str) -> StoredConversation | None:
    """The record stored under ``key``, as one read function."""
    row = conn.execute(_records_query().where(conversations.c.key == key)).first()
    return None if row is None else _record(row, _branches(conn, [key]).get(key, ()))


def record_rows(conn: Connection, scope: str | None, limit: int | None) -> list[StoredConversation]:
    """The records (of ``scope``'s key, if given), newest ``updated_at`` first."""
    query = _records_query().order_by(conversations.c.updated_at.desc(), conversations.c.key)
    if scope is not None:
        query = query.where(conversations.c.scope == scope)
    if limit is not None:
        query = query.limit(limit)
    rows = conn.execute(query).all()
    branches = _branches(conn, [row.key for row in rows])
    return [_record(row, branches.get(row.key, ())) for row in rows]


_PARENT = conversation_entries.alias("parent")
_ENTRY_COLUMNS = (*conversation_entries.c, _PARENT.c.name.label("parent_name"))


def _entry(row: Row[Any]) -> StoredEntry:
    return StoredEntry(
        id=original(row.id, row.name),
        parent_id=None if row.parent_id is None else original(row.parent_id, row.parent_name),
        kind=row.kind,
        message=row.message,
        text=row.text,
        created_at=row.created_at,
    )


def entry_row(conn: Connection, key: str) -> StoredEntry | None:
    """The entry stored under ``key``."""
    row = conn.execute(
        select(*_ENTRY_COLUMNS)
        .outerjoin(_PARENT, _PARENT.c.id == conversation_entries.c.parent_id)
        .where(conversation_entries.c.id == key)
    ).first()
    return None if row is None else _entry(row)


#: The chain from an entry back to the first, one row per entry with its distance from the
#: head; ``:limit`` bounds the walk (``load(limit=)`` reads only the newest entries).
_CHAIN = """
WITH RECURSIVE chain(id, depth) AS (
  SELECT id, 0 FROM conversation_entries WHERE id = :head
  UNION ALL
  SELECT e.parent_id, chain.depth + 1 FROM conversation_entries AS e
    JOIN chain ON e.id = chain.id
    WHERE e.parent_id IS NOT NULL{bound}
)
SELECT e.id, e.name, e.parent_id, e.kind, e.message, e.text, e.created_at,
       parent.name AS parent_name
FROM chain JOIN conversation_entries AS e ON e.id = chain.id
LEFT JOIN conversation_entries AS parent ON parent.id = e.parent_id
ORDER BY chain.depth DESC
"""


def history_rows(conn: Connection, head: str, limit: int | None) -> list[StoredEntry]:
    """The entries from the first up to ``head``'s key, oldest first (the newest ``limit``);
    empty when ``head`` is stored nowhere."""
    bound = "" if limit is None else " AND chain.depth + 1 < :limit"
    params: dict[str, Any] = {"head": head}
    if limit is not None:
        params["limit"] = limit
    rows = conn.execute(
        # created_at read as the column's type: timezone-aware on every backend.
        text(_CHAIN.format(bound=bound)).columns(created_at=UTCDateTime()),
        params,
    )
    return [_entry(row) for row in rows]


async def read_record(db: Database, conversation_id: str) -> StoredConversation | None:
    """The record of ``conversation_id``, or ``None``."""
    return await db.run_read(partial(record_row, key=key_of(conversation_id, "conversation_id")))


async def read_records(
    db: Database, scope: str | None, limit: int | None
) -> list[StoredConversation]:
    """The records (of ``scope``), newest ``updated_at`` first, at most ``limit``."""
    key = None if scope is None else key_of(scope, "scope")
    return await db.run_read(partial(record_rows, scope=key, limit=limit))


async def read_entry(db: Database, entry_id: str) -> StoredEntry | None:
    """The entry ``entry_id``, or ``None``."""
    return await db.run_read(partial(entry_row, key=key_of(entry_id, "entry_id")))


async def read_history(db: Database, head_id: str, limit: int | None) -> list[StoredEntry]:
    """The history ending at ``head_id``, oldest first (the newest ``limit`` entries)."""
    return await db.run_read(partial(history_rows, head=key_of(head_id, "head_id"), limit=limit))
