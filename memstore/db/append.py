"""Appends: one short write transaction per item, as a plain function over a connection.

An append, in order:

1. update the session row (version, next seq, cached totals, returned by the same statement);
   on PostgreSQL this statement also takes the row lock that serializes appends;
2. if the session does not exist yet, create it and repeat step 1;
3. with an idempotency key, look the key up: an item already stored under it is returned
   instead (nothing is written), or a conflict raised if it differs;
4. insert the item.

On SQLite the writer thread commits concurrent appends together, each in its own savepoint
(:mod:`memstore.db.writer`); each caller still hears "stored" only after its COMMIT.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update

from memstore.db.connection import dialect_insert
from memstore.db.engine import Database
from memstore.db.reads import ITEM_COLUMNS, row_to_item, session_total, utcnow
from memstore.db.tables import UTCDateTime, items, sessions
from memstore.errors import EstimatorMismatchError, IdempotencyConflictError
from memstore.model import (
    ITEM_OVERHEAD_TOKENS,
    MemoryItem,
    MemoryKind,
    MemoryLimits,
    MemoryRole,
    Priority,
)


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


class Duplicate(Exception):
    """The key was already used for the same item: roll back, answer with the stored one.

    Attributes:
        result: What the caller gets: the stored item and the session's total as it stands
            (this append's own bump is rolled back with it).
    """

    def __init__(self, result: AppendResult) -> None:
        self.result = result


# -- the statements (bound parameters only; built once) ------------------------------------

BUMP = (
    update(sessions)
    .where(sessions.c.id == bindparam("sid"), sessions.c.estimator == bindparam("est"))
    .values(
        version=sessions.c.version + 1,
        last_seq=sessions.c.last_seq + 1,
        active_items=sessions.c.active_items + 1,
        active_tokens=sessions.c.active_tokens + bindparam("cost"),
        user_turns=sessions.c.user_turns + bindparam("is_user"),
        hard_limit=bindparam("hard"),
        target_limit=bindparam("target"),
        keep_recent=bindparam("keep"),
        updated_at=bindparam("now", type_=UTCDateTime),
    )
    .returning(
        sessions.c.version,
        sessions.c.last_seq,
        sessions.c.active_tokens,
        sessions.c.summary_tokens,
        sessions.c.user_turns,
    )
)
ESTIMATOR = select(sessions.c.estimator).where(sessions.c.id == bindparam("sid"))
BY_KEY = select(*ITEM_COLUMNS).where(
    items.c.session_id == bindparam("sid"), items.c.idempotency_key == bindparam("key")
)
#: Built once, its values passed at execution: a statement made per append would be
#: constructed and cache-keyed again on every turn.
INSERT_ITEM = insert(items)


def _create_session(
    conn: Connection, session_id: str, estimator: str, limits: MemoryLimits, now: datetime
) -> None:
    """``INSERT ... ON CONFLICT DO NOTHING``: two workers may create one session at once."""
    statement = (
        dialect_insert(conn.dialect.name)(sessions)
        .values(
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
        .on_conflict_do_nothing()
    )
    conn.execute(statement)


def _recorded_estimator(conn: Connection, session_id: str) -> str | None:
    return conn.execute(ESTIMATOR, {"sid": session_id}).scalar()


def append_item(
    conn: Connection, session_id: str, estimator: str, limits: MemoryLimits, new: NewItem
) -> AppendResult:
    """The statements of one append, in order (see the module docstring).

    Raises:
        EstimatorMismatchError: the session was counted by another estimator.
        IdempotencyConflictError: the key was used for different content.
        Duplicate: the key was used for this very item (the transaction must roll back).
    """
    now = utcnow()
    bump = {
        "sid": session_id,
        "est": estimator,
        "cost": new.estimated_tokens + ITEM_OVERHEAD_TOKENS,
        "is_user": int(new.kind is MemoryKind.USER_MESSAGE),
        "hard": limits.hard,
        "target": limits.target,
        "keep": limits.keep_recent,
        "now": now,
    }
    row = conn.execute(BUMP, bump).first()
    if row is None:
        existing = _recorded_estimator(conn, session_id)
        if existing is not None and existing != estimator:
            raise EstimatorMismatchError(session_id, expected=existing, actual=estimator)
        # No session, or (PostgreSQL, READ COMMITTED) one committed by another worker between
        # the two statements above: create it if it is still missing, then bump again.
        _create_session(conn, session_id, estimator, limits, now)
        row = conn.execute(BUMP, bump).first()
        if row is None:  # created at the same moment by a worker with another estimator
            existing = _recorded_estimator(conn, session_id)
            raise EstimatorMismatchError(session_id, expected=str(existing), actual=estimator)
    if new.idempotency_key is not None:
        found = conn.execute(BY_KEY, {"sid": session_id, "key": new.idempotency_key}).first()
        if found is not None:
            stored = row_to_item(found)
            if (stored.content, stored.kind, stored.role, stored.priority) != (
                new.content, new.kind, new.role, new.priority,
            ):  # fmt: skip
                raise IdempotencyConflictError(session_id, new.idempotency_key)
            before = row.active_tokens - bump["cost"]  # the rollback undoes our bump
            raise Duplicate(
                AppendResult(stored, session_total(before, row.summary_tokens), 0, duplicate=True)
            )
    item = MemoryItem(
        id=str(uuid.uuid4()),
        session_id=session_id,
        seq=row.last_seq,
        role=new.role,
        kind=new.kind,
        priority=new.priority,
        content=new.content,
        timestamp=now,
        estimated_tokens=new.estimated_tokens,
        version=row.version,
    )
    conn.execute(INSERT_ITEM, _insert_values(item, new.idempotency_key))
    return AppendResult(item, session_total(row.active_tokens, row.summary_tokens), row.user_turns)


def _insert_values(item: MemoryItem, idempotency_key: str | None) -> dict[str, Any]:
    return {
        "id": item.id,
        "session_id": item.session_id,
        "seq": item.seq,
        "role": item.role.value,
        "kind": item.kind.value,
        "priority": int(item.priority),
        "content": item.content,
        "created_at": item.timestamp,
        "estimated_tokens": item.estimated_tokens,
        "added_version": item.version,
        "idempotency_key": idempotency_key,
        "version": 1,
    }


async def append(
    db: Database, session_id: str, estimator: str, limits: MemoryLimits, new: NewItem
) -> AppendResult:
    """Append one item durably; return it with the session's new total.

    Raises:
        EstimatorMismatchError: the session was counted by another estimator.
        IdempotencyConflictError: the key was used for different content.
        LockTimeoutError: the database stayed locked past the busy timeout.
    """
    try:
        return await db.run_write(
            partial(append_item, session_id=session_id, estimator=estimator, limits=limits, new=new)
        )
    except Duplicate as duplicate:  # raised inside the transaction: it rolled back
        return duplicate.result
