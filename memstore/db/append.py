"""Appends: one short write transaction per item.

The session row is updated first (version, next seq, cached totals, returned in the same
statement); that statement is also what serializes concurrent appends on PostgreSQL, where
it takes the row lock. Then the item row is inserted. Nothing else runs under the lock.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Row, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memstore.db.engine import Database
from memstore.db.reads import (
    ITEM_COLUMNS,
    existing_estimator,
    row_to_item,
    session_info,
    session_total,
    utcnow,
)
from memstore.db.tables import items, sessions
from memstore.errors import (
    EstimatorMismatchError,
    IdempotencyConflictError,
)
from memstore.model import (
    MemoryItem,
    MemoryKind,
    MemoryLimits,
    MemoryRole,
    Priority,
)


#: Ids per ``IN (...)`` list: far below SQLite's and PostgreSQL's parameter limits.
@dataclass(frozen=True)
class NewItem:
    """A validated, counted item about to be appended."""

    role: MemoryRole
    kind: MemoryKind
    priority: Priority
    content: str
    estimated_tokens: int
    idempotency_key: str | None = None


@dataclass(frozen=True)
class AppendResult:
    """What an append committed (or found, for a repeated idempotency key)."""

    item: MemoryItem
    total_tokens: int
    user_turns: int
    duplicate: bool = False


async def _create_session_row(
    conn: AsyncConnection, dialect: str, session_id: str, estimator: str, limits: MemoryLimits
) -> None:
    now = utcnow()
    values = dict(
        id=session_id,
        version=0,
        estimator=estimator,
        last_seq=0,
        active_items=0,
        active_tokens=0,
        user_turns=0,
        compaction_count=0,
        hard_limit=limits.hard,
        target_limit=limits.target,
        keep_recent=limits.keep_recent,
        lease_token=0,
        created_at=now,
        updated_at=now,
    )
    dialect_insert = pg_insert if dialect == "postgresql" else sqlite_insert
    # ON CONFLICT DO NOTHING: two workers may create the same session at once.
    await conn.execute(dialect_insert(sessions).values(**values).on_conflict_do_nothing())


async def _bump_for_append(
    conn: AsyncConnection,
    session_id: str,
    estimator: str,
    cost: int,
    is_user: int,
    limits: MemoryLimits,
) -> Row[Any] | None:
    stmt = (
        update(sessions)
        .where(sessions.c.id == session_id, sessions.c.estimator == estimator)
        .values(
            version=sessions.c.version + 1,
            last_seq=sessions.c.last_seq + 1,
            active_items=sessions.c.active_items + 1,
            active_tokens=sessions.c.active_tokens + cost,
            user_turns=sessions.c.user_turns + is_user,
            hard_limit=limits.hard,
            target_limit=limits.target,
            keep_recent=limits.keep_recent,
            updated_at=utcnow(),
        )
        .returning(
            sessions.c.version,
            sessions.c.last_seq,
            sessions.c.active_tokens,
            sessions.c.summary_tokens,
            sessions.c.user_turns,
        )
    )
    return (await conn.execute(stmt)).first()


async def _find_by_key(conn: AsyncConnection, session_id: str, key: str) -> MemoryItem | None:
    row = (
        await conn.execute(
            select(*ITEM_COLUMNS).where(
                items.c.session_id == session_id, items.c.idempotency_key == key
            )
        )
    ).first()
    return None if row is None else row_to_item(row)


class _Duplicate(Exception):
    """Internal: roll the append back, the key was already used for the same item."""

    def __init__(self, item: MemoryItem) -> None:
        self.item = item


async def append(
    db: Database, session_id: str, estimator: str, limits: MemoryLimits, new: NewItem
) -> AppendResult:
    """Append one item in one short write transaction.

    The session row is updated first (version, next seq, cached totals); that statement is
    also what serializes concurrent appends on PostgreSQL. With an idempotency key, an item
    already stored under it is returned instead (or a conflict raised if it differs), and
    nothing is written.

    Raises:
        EstimatorMismatchError: the session was counted by another estimator.
        IdempotencyConflictError: the key was used for different content.
    """
    cost = new.estimated_tokens + 4
    is_user = int(new.kind is MemoryKind.USER_MESSAGE)
    try:
        async with db.write() as conn:
            row = await _bump_for_append(conn, session_id, estimator, cost, is_user, limits)
            if row is None:
                existing = await existing_estimator(conn, session_id)
                if existing is not None:
                    raise EstimatorMismatchError(session_id, expected=existing, actual=estimator)
                await _create_session_row(conn, db.dialect, session_id, estimator, limits)
                row = await _bump_for_append(conn, session_id, estimator, cost, is_user, limits)
                if row is None:  # created concurrently with another estimator
                    existing = await existing_estimator(conn, session_id)
                    raise EstimatorMismatchError(
                        session_id, expected=str(existing), actual=estimator
                    )
            if new.idempotency_key is not None:
                found = await _find_by_key(conn, session_id, new.idempotency_key)
                if found is not None:
                    same = (found.content, found.kind, found.role, found.priority) == (
                        new.content,
                        new.kind,
                        new.role,
                        new.priority,
                    )
                    if not same:
                        raise IdempotencyConflictError(session_id, new.idempotency_key)
                    raise _Duplicate(found)
            item = MemoryItem(
                id=str(uuid.uuid4()),
                session_id=session_id,
                seq=row.last_seq,
                role=new.role,
                kind=new.kind,
                priority=new.priority,
                content=new.content,
                timestamp=utcnow(),
                estimated_tokens=new.estimated_tokens,
                version=row.version,
            )
            await conn.execute(
                insert(items).values(
                    id=item.id,
                    session_id=session_id,
                    seq=item.seq,
                    role=item.role.value,
                    kind=item.kind.value,
                    priority=int(item.priority),
                    content=item.content,
                    created_at=item.timestamp,
                    estimated_tokens=item.estimated_tokens,
                    added_version=item.version,
                    idempotency_key=new.idempotency_key,
                    version=1,
                )
            )
    except _Duplicate as duplicate:
        info = await session_info(db, session_id)
        return AppendResult(duplicate.item, info.total_tokens, 0, duplicate=True)
    return AppendResult(item, session_total(row.active_tokens, row.summary_tokens), row.user_turns)
