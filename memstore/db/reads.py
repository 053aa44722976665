"""Reads: snapshots, session headers, items and reports, as plain values.

Each read is a plain sync function over a SQLAlchemy ``Connection``, run by
:meth:`Database.run_read <memstore.db.engine.Database.run_read>` inside one read transaction
(SQLite: a deferred ``BEGIN`` in WAL mode), so e.g. a session row and its active items are
consistent with each other; on a SQLite file the whole read is one hand-off to a worker
thread, rows turned into values there.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping, Sequence
from datetime import UTC, datetime
from enum import Enum
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import Connection, Row, and_, bindparam, select

from memstore.core.policy import Snapshot
from memstore.core.records import CompactionReport, SessionInfo
from memstore.core.summary_room import KEPT, WROTE, newest_within, summary_fate
from memstore.core.values import (
    SUMMARY_OVERHEAD_TOKENS,
    Fate,
    MemoryItem,
    MemoryKind,
    MemoryLimits,
    MemoryRole,
    Priority,
)
from memstore.db.engine import Database
from memstore.db.tables import compactions, items, sessions, summaries
from memstore.errors import (
    SessionNotFoundError,
)

E = TypeVar("E", bound=Enum)
#: The columns an item is read with, in the order :func:`row_to_item` unpacks them.
ITEM_COLUMNS = (
    items.c.id,
    items.c.session_id,
    items.c.seq,
    items.c.role,
    items.c.kind,
    items.c.priority,
    items.c.content,
    items.c.created_at,
    items.c.estimated_tokens,
    items.c.added_version,
    items.c.fate,
    items.c.removed_by,
    items.c.payload,
    items.c.call_id,
    items.c.handle,
    items.c.turn,
    items.c.pending_until,
)


def utcnow() -> datetime:
    """Timezone-aware now."""
    return datetime.now(UTC)


_MEMBERS: dict[type[Enum], dict[Any, Any]] = {
    enum: {member.value: member for member in enum}
    for enum in (MemoryRole, MemoryKind, Priority, Fate)
}


def _member(enum: type[E], value: Any) -> E:
    # A dict lookup: every row read pays it, and calling the enum costs ten times more.
    member: E | None = _MEMBERS[enum].get(value)
    return enum(value) if member is None else member  # the enum's own error for a bad value


def row_to_item(row: Sequence[Any]) -> MemoryItem:
    """A row of ``ITEM_COLUMNS`` (the values in that order) as a :class:`MemoryItem`."""
    (item_id, session_id, seq, role, kind, priority, content, created_at, tokens, version,
     fate, removed_by, payload, call_id, handle, turn, pending_until) = row  # fmt: skip
    return MemoryItem(
        id=item_id,
        session_id=session_id,
        seq=seq,
        role=_member(MemoryRole, role),
        kind=_member(MemoryKind, kind),
        priority=_member(Priority, priority),
        content=content,
        timestamp=created_at,
        estimated_tokens=tokens,
        version=version,
        fate=_member(Fate, fate) if fate else None,
        removed_by=removed_by,
        # The JSON text as given: json.loads keeps its key order and every value's type.
        payload=None if payload is None else json.loads(payload),
        call_id=call_id,
        handle=handle,
        turn=turn,
        pending_until=pending_until,
    )


def session_total(active_tokens: int, summary_tokens: int | None) -> int:
    """The session's total from the cached columns of a session row."""
    return active_tokens + (
        0 if summary_tokens is None else summary_tokens + SUMMARY_OVERHEAD_TOKENS
    )


def row_to_info(row: Row[Any]) -> SessionInfo:
    """A ``sessions`` row as a :class:`SessionInfo`."""
    return SessionInfo(
        id=row.id,
        version=row.version,
        estimator=row.estimator,
        items_total=row.last_seq,
        active_items=row.active_items,
        total_tokens=session_total(row.active_tokens, row.summary_tokens),
        summary_tokens=row.summary_tokens,
        compaction_count=row.compaction_count,
        limits=MemoryLimits(
            hard=row.hard_limit, target=row.target_limit, keep_recent=row.keep_recent
        ),
        created_at=row.created_at,
        updated_at=row.updated_at,
        parent_id=row.parent_id,
        parent_version=row.parent_version,
        scope=row.scope,
    )


#: The statements of every snapshot, built once: one built per call is constructed and
#: cache-keyed again each time, which costs more than the primary-key lookup itself.
SESSION_ROW = select(sessions).where(sessions.c.id == bindparam("sid"))
ALL_ITEMS = (
    select(*ITEM_COLUMNS).where(items.c.session_id == bindparam("sid")).order_by(items.c.seq)
)
#: The active items, through the partial index on them.
ACTIVE_ITEMS = (
    select(*ITEM_COLUMNS)
    .where(items.c.session_id == bindparam("sid"), items.c.fate.is_(None))
    .order_by(items.c.seq)
)


def fetch_session_row(conn: Connection, session_id: str) -> Row[Any] | None:
    """The session's row within an open transaction (``None``: no such session)."""
    return conn.execute(SESSION_ROW, {"sid": session_id}).first()


async def session_info(db: Database, session_id: str) -> SessionInfo:
    """The session's header.

    Raises:
        SessionNotFoundError: no such session.
    """
    row = await db.run_read(partial(fetch_session_row, session_id=session_id))
    if row is None:
        raise SessionNotFoundError(session_id)
    return row_to_info(row)


def _session_infos(conn: Connection) -> list[SessionInfo]:
    result = conn.execute(select(sessions).order_by(sessions.c.updated_at.desc()))
    return [row_to_info(row) for row in result]


async def session_infos(db: Database) -> list[SessionInfo]:
    """Every session's header, most recently updated first."""
    return await db.run_read(_session_infos)


def read_items(conn: Connection, session_id: str, *, active_only: bool) -> list[MemoryItem]:
    """The session's items (or only the active ones), by seq, within an open transaction."""
    query = ACTIVE_ITEMS if active_only else ALL_ITEMS
    rows = conn.execute(query, {"sid": session_id}).all()  # one fetchall
    return [row_to_item(row) for row in rows]


def read_snapshot(conn: Connection, session_id: str) -> Snapshot | None:
    """The session as it stands, within an open transaction (``None``: no such session)."""
    row = fetch_session_row(conn, session_id)
    if row is None:
        return None
    active = read_items(conn, session_id, active_only=True)
    return Snapshot(
        session_id=session_id,
        version=row.version,
        compaction_count=row.compaction_count,
        items=tuple(active),
        summary=row.summary,
        summary_tokens=row.summary_tokens or 0,
        user_turns=row.user_turns,
        estimator=row.estimator,
        read_at=time.time(),  # what pending calls' deadlines are judged against
    )


_FOLD_HISTORY = (
    select(
        compactions.c.number,
        compactions.c.trigger,
        compactions.c.summary_action,
        compactions.c.items_summarized,
        compactions.c.items_evicted,
        compactions.c.summary_error,
        summaries.c.content,
    )
    .select_from(
        compactions.outerjoin(
            summaries,
            and_(
                summaries.c.session_id == compactions.c.session_id,
                summaries.c.compaction_number == compactions.c.number,
            ),
        )
    )
    .where(compactions.c.session_id == bindparam("sid"))
    .order_by(compactions.c.number.desc())
)
_EVICTED_BY = (
    select(*ITEM_COLUMNS)
    .where(
        items.c.session_id == bindparam("sid"),
        items.c.removed_by.in_(bindparam("numbers", expanding=True)),
        items.c.fate == Fate.EVICTED.value,
    )
    .order_by(items.c.seq)
)


def read_fold_start(
    conn: Connection, session_id: str, max_tokens: int
) -> tuple[str | None, tuple[MemoryItem, ...]]:
    """What the session's next fold starts from, beyond its snapshot: the last summary a
    summarizer wrote, and the items phase 3 evicted since without a summarizer reading them
    (no room, or it failed), the newest that cost at most ``max_tokens``; unless a summarizer
    found nothing worth keeping, or the session was cleared, since
    (:func:`memstore.core.summary_room.summary_fate`). The compactions are read newest first,
    only as far as the first that decides."""
    written: str | None = None
    unread: list[int] = []
    for row in conn.execute(_FOLD_HISTORY, {"sid": session_id}):
        fate = summary_fate(
            row.trigger, row.summary_action, row.items_summarized, row.summary_error
        )
        if fate != KEPT:
            written = row.content if fate == WROTE else None
            break
        if row.items_evicted:
            unread.append(row.number)
    if not unread:
        return written, ()
    evicted = [
        row_to_item(row)
        for row in conn.execute(_EVICTED_BY, {"sid": session_id, "numbers": unread})
    ]
    return written, newest_within(evicted, max_tokens)


async def snapshot(db: Database, session_id: str) -> Snapshot | None:
    """A consistent read of the session (``None`` if it does not exist yet)."""
    return await db.run_read(partial(read_snapshot, session_id=session_id))


def report_from_record(record: Mapping[Any, Any], removed: Mapping[str, str]) -> CompactionReport:
    """A ``compactions`` record (a row mapping, or the values just inserted) as a report."""
    return CompactionReport(
        session_id=record["session_id"],
        compaction_count=record["number"],
        removed=removed,
        **{name: record[name] for name in _REPORT_COLUMNS},
    )


#: Report fields stored under their own name in the ``compactions`` table.
_REPORT_COLUMNS = (
    "before_tokens",
    "after_tokens",
    "items_dropped",
    "items_summarized",
    "items_evicted",
    "summary_error",
    "summarizer",
    "trigger",
    "summary_action",
    "summary_tokens",
    "worker_host",
    "worker_pid",
    "started_at",
    "finished_at",
    "summarize_seconds",
    "snapshot_version",
    "committed_version",
    "attempts",
    "usage",
    "took_over_from",
)


def compaction_rows(conn: Connection, session_id: str) -> Sequence[Row[Any]]:
    """The session's ``compactions`` rows, by number, within an open transaction."""
    return conn.execute(
        select(compactions)
        .where(compactions.c.session_id == session_id)
        .order_by(compactions.c.number)
    ).all()


def _reports(conn: Connection, session_id: str) -> list[CompactionReport]:
    rows = compaction_rows(conn, session_id)
    fates = conn.execute(
        select(items.c.id, items.c.fate, items.c.removed_by)
        .where(and_(items.c.session_id == session_id, items.c.removed_by.is_not(None)))
        .order_by(items.c.seq)
    )
    removed: dict[int, dict[str, str]] = {}
    for item_id, fate, number in fates:
        removed.setdefault(number, {})[item_id] = fate
    return [report_from_record(row._mapping, removed.get(row.number, {})) for row in rows]


async def reports(db: Database, session_id: str) -> list[CompactionReport]:
    """Every committed compaction of the session, oldest first."""
    return await db.run_read(partial(_reports, session_id=session_id))


async def active_items(db: Database, session_id: str) -> list[MemoryItem]:
    """The session's active items, oldest first."""
    return await db.run_read(partial(read_items, session_id=session_id, active_only=True))


async def all_items(db: Database, session_id: str) -> list[MemoryItem]:
    """Every item ever appended to the session (active and removed), by seq."""
    return await db.run_read(partial(read_items, session_id=session_id, active_only=False))
