"""Appends: the statements of one append, written once, run by two drivers.

An append is one short write transaction:

1. update the session row (version, next seq, cached totals, returned by the same statement);
   on PostgreSQL this statement also takes the row lock that serializes appends;
2. if the session does not exist yet, create it and repeat step 1;
3. with an idempotency key, look the key up: an item already stored under it is returned
   instead (nothing is written), or a conflict raised if it differs;
4. insert the item.

:func:`append_steps` is that sequence as a step generator (:mod:`memstore.db.steps`); the
drivers run it: SQLAlchemy's async engine (PostgreSQL), or SQLite's writer, which commits
concurrent appends together (on the event loop's thread when nothing else is writing).
"""

from __future__ import annotations

import functools
import os
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import bindparam, insert, select, update

from memstore.db.engine import Database, dialect_insert
from memstore.db.reads import ITEM_COLUMNS, row_to_item, session_total, utcnow
from memstore.db.steps import Statement, Steps, run_steps
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


class NewItem(NamedTuple):
    """A validated, counted item about to be appended (a tuple: built on every append, and a
    frozen dataclass costs three times as much to build)."""

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


#: Item ids made ahead, from one read of the OS's random source (see :func:`new_item_id`).
_spare_ids: list[str] = []
#: A forked child must never hand out ids its parent holds too.
os.register_at_fork(after_in_child=_spare_ids.clear)


def new_item_id() -> str:
    """A random (version 4) UUID, as ``str(uuid.uuid4())`` gives, at a third of its cost.

    Ids are made 64 at a time from one ``os.urandom`` read and formatted as text directly,
    without a ``UUID`` object each: 0.9 against 2.6 us an id here, on every append. Threads
    share the pool: ``list.pop`` is atomic, so no id is handed out twice, and a thread that
    makes a batch keeps one of it for itself (other threads may empty the pool meanwhile).
    """
    try:
        return _spare_ids.pop()
    except IndexError:
        pass
    h = os.urandom(16 * 64).hex()
    made = [
        # The version nibble is 4, the variant bits 10 (RFC 9562), the other 122 bits random.
        f"{h[i : i + 8]}-{h[i + 8 : i + 12]}-4{h[i + 13 : i + 16]}-"
        f"{'89ab'[int(h[i + 16], 16) & 3]}{h[i + 17 : i + 20]}-{h[i + 20 : i + 32]}"
        for i in range(0, len(h), 32)
    ]
    mine = made.pop()
    _spare_ids.extend(made)
    return mine


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
_SESSION_COLUMNS = (
    "id", "version", "estimator", "last_seq", "active_items", "active_tokens", "user_turns",
    "compaction_count", "hard_limit", "target_limit", "keep_recent", "lease_token",
    "created_at", "updated_at",
)  # fmt: skip
_ITEM_INSERT_COLUMNS = (
    "id", "session_id", "seq", "role", "kind", "priority", "content", "created_at",
    "estimated_tokens", "added_version", "idempotency_key", "version",
)  # fmt: skip
INSERT_ITEM = insert(items).values({name: bindparam(name) for name in _ITEM_INSERT_COLUMNS})


@functools.cache
def create_session(dialect: str) -> Statement:
    """``INSERT ... ON CONFLICT DO NOTHING``: two workers may create one session at once.

    Cached, so each dialect's statement is one constant object (the SQLite writer compiles
    statements once, keyed by identity).
    """
    statement: Statement = (
        dialect_insert(dialect)(sessions)
        .values({name: bindparam(name) for name in _SESSION_COLUMNS})
        .on_conflict_do_nothing()
    )
    return statement


def append_steps(
    dialect: str, session_id: str, estimator: str, limits: MemoryLimits, new: NewItem
) -> Steps[AppendResult]:
    """The statements of one append, in order (see the module docstring).

    Raises:
        EstimatorMismatchError: the session was counted by another estimator.
        IdempotencyConflictError: the key was used for different content.
        Duplicate: the key was used for this very item (the driver rolls back).
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
    row = (yield BUMP, bump).first()
    if row is None:
        existing = (yield ESTIMATOR, {"sid": session_id}).first()
        if existing is not None and existing["estimator"] != estimator:
            raise EstimatorMismatchError(
                session_id, expected=existing["estimator"], actual=estimator
            )
        # No session, or (PostgreSQL, READ COMMITTED) one committed by another worker between
        # the two reads above: create it if it is still missing, then bump again.
        yield create_session(dialect), {
            "id": session_id, "version": 0, "estimator": estimator, "last_seq": 0,
            "active_items": 0, "active_tokens": 0, "user_turns": 0, "compaction_count": 0,
            "hard_limit": limits.hard, "target_limit": limits.target,
            "keep_recent": limits.keep_recent, "lease_token": 0, "created_at": now,
            "updated_at": now,
        }  # fmt: skip
        row = (yield BUMP, bump).first()
        if row is None:  # created at the same moment by a worker with another estimator
            existing = (yield ESTIMATOR, {"sid": session_id}).first()
            raise EstimatorMismatchError(
                session_id, expected=str(existing and existing["estimator"]), actual=estimator
            )
    if new.idempotency_key is not None:
        found = (yield BY_KEY, {"sid": session_id, "key": new.idempotency_key}).first()
        if found is not None:
            stored = row_to_item(_item_values(found))
            if (stored.content, stored.kind, stored.role, stored.priority) != (
                new.content, new.kind, new.role, new.priority,
            ):  # fmt: skip
                raise IdempotencyConflictError(session_id, new.idempotency_key)
            before = row["active_tokens"] - bump["cost"]  # the rollback undoes our bump
            total = session_total(before, row["summary_tokens"])
            raise Duplicate(AppendResult(stored, total, 0, duplicate=True))
    item = MemoryItem(
        id=new_item_id(),
        session_id=session_id,
        seq=row["last_seq"],
        role=new.role,
        kind=new.kind,
        priority=new.priority,
        content=new.content,
        timestamp=now,
        estimated_tokens=new.estimated_tokens,
        version=row["version"],
    )
    yield INSERT_ITEM, {
        "id": item.id, "session_id": session_id, "seq": item.seq, "role": item.role.value,
        "kind": item.kind.value, "priority": int(item.priority), "content": item.content,
        "created_at": now, "estimated_tokens": item.estimated_tokens,
        "added_version": item.version, "idempotency_key": new.idempotency_key, "version": 1,
    }  # fmt: skip
    return AppendResult(
        item, session_total(row["active_tokens"], row["summary_tokens"]), row["user_turns"]
    )


_CREATED_AT = [column.name for column in ITEM_COLUMNS].index("created_at")


def _item_values(found: Mapping[str, Any]) -> list[Any]:
    """A row of ``ITEM_COLUMNS`` fetched by the steps' driver, as :func:`row_to_item` takes it."""
    values = [found[column.name] for column in ITEM_COLUMNS]
    created = _CREATED_AT
    if isinstance(values[created], str):  # the stdlib driver's raw text (the SQLite writer)
        decoded = datetime.fromisoformat(values[created])
        values[created] = UTCDateTime().process_result_value(decoded, None)  # type: ignore[arg-type]
    return values


async def append(
    db: Database, session_id: str, estimator: str, limits: MemoryLimits, new: NewItem
) -> AppendResult:
    """Append one item durably; return it with the session's new total.

    On SQLite the writer commits concurrent appends together (each caller still gets its own
    durable acknowledgement); elsewhere each append is its own transaction.

    Raises:
        EstimatorMismatchError: the session was counted by another estimator.
        IdempotencyConflictError: the key was used for different content.
        LockTimeoutError: the database stayed locked past the busy timeout.
    """
    try:
        return await run_steps(
            db,
            lambda dialect: append_steps(dialect, session_id, estimator, limits, new),
            size=len(new.content),
        )
    except Duplicate as duplicate:  # raised inside the transaction: it rolled back
        return duplicate.result
