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

The SQLite writer first tries :meth:`Append.run_sqlite`: the common case (the session exists
and was counted by the same estimator, no idempotency key), steps 1 and 4 as two plain
``sqlite3`` calls with parameter tuples built in the statements' own order. It runs on every
turn of every worker, between two fsyncs, where each microsecond of Python costs two or three
(a cold cache after the commit): the step generator's dicts, result rows and conversions cost
about 40 us an append there. The values it binds come from the same helpers as the
generator's (:func:`_bump_values`, :func:`_insert_values`) and its timestamp from the same
conversion (``sqlite_timestamp``); the order of parameters and returned columns is checked
against the compiled statements on first use.
"""

from __future__ import annotations

import functools
import os
import sqlite3
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from sqlalchemy import Integer, bindparam, insert, literal_column, select, update

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

_ONE = literal_column("1", Integer)  # in the SQL, not a parameter: one value fewer to bind
BUMP = (
    update(sessions)
    .where(sessions.c.id == bindparam("sid"), sessions.c.estimator == bindparam("est"))
    .values(
        version=sessions.c.version + _ONE,
        last_seq=sessions.c.last_seq + _ONE,
        active_items=sessions.c.active_items + _ONE,
        active_tokens=sessions.c.active_tokens + bindparam("cost"),
        user_turns=sessions.c.user_turns + bindparam("is_user"),
        hard_limit=bindparam("hard"),
        target_limit=bindparam("target"),
        keep_recent=bindparam("keep"),
        updated_at=bindparam("now", type_=UTCDateTime),
    )
    # In this order (_BUMP_RETURNS): Append.run_sqlite unpacks the row by position.
    .returning(
        sessions.c.version,
        sessions.c.last_seq,
        sessions.c.active_tokens,
        sessions.c.summary_tokens,
        sessions.c.user_turns,
    )
)
#: BUMP's parameters in the order of its SQL (the SET clause follows the table's columns), as
#: :func:`_bump_values` gives them.
BUMP_PARAMS = ("cost", "is_user", "hard", "target", "keep", "now", "sid", "est")
_BUMP_RETURNS = ("version", "last_seq", "active_tokens", "summary_tokens", "user_turns")
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
    values = _bump_values(session_id, estimator, limits, new, now)
    bump = dict(zip(BUMP_PARAMS, values, strict=True))
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
    item = _appended(session_id, new, now, row["version"], row["last_seq"])
    values = _insert_values(item, new.idempotency_key, now)
    yield INSERT_ITEM, dict(zip(_ITEM_INSERT_COLUMNS, values, strict=True))
    return AppendResult(
        item, session_total(row["active_tokens"], row["summary_tokens"]), row["user_turns"]
    )


def _bump_values(
    session_id: str, estimator: str, limits: MemoryLimits, new: NewItem, now: datetime | str
) -> tuple[Any, ...]:
    """BUMP's parameters, in ``BUMP_PARAMS`` order (``now`` as a datetime, or as the text
    SQLite stores for it)."""
    return (
        new.estimated_tokens + ITEM_OVERHEAD_TOKENS,
        int(new.kind is MemoryKind.USER_MESSAGE),
        limits.hard,
        limits.target,
        limits.keep_recent,
        now,
        session_id,
        estimator,
    )


def _appended(session_id: str, new: NewItem, now: datetime, version: int, seq: int) -> MemoryItem:
    """The item an append stores, at the ``version`` and ``seq`` its BUMP returned."""
    return MemoryItem(
        id=new_item_id(),
        session_id=session_id,
        seq=seq,
        role=new.role,
        kind=new.kind,
        priority=new.priority,
        content=new.content,
        timestamp=now,
        estimated_tokens=new.estimated_tokens,
        version=version,
    )


def _insert_values(
    item: MemoryItem, idempotency_key: str | None, created_at: datetime | str
) -> tuple[Any, ...]:
    """INSERT_ITEM's parameters for ``item``, in ``_ITEM_INSERT_COLUMNS`` order (its timestamp
    as given: a datetime, or the text SQLite stores for it)."""
    return (
        item.id, item.session_id, item.seq, item.role.value, item.kind.value,
        int(item.priority), item.content, created_at, item.estimated_tokens, item.version,
        idempotency_key, 1,
    )  # fmt: skip


class Append:
    """One append, as the write drivers take it.

    Called with a dialect name, it is the append's step generator (:func:`append_steps`),
    which every driver can run; the SQLite writer tries :meth:`run_sqlite` first.
    """

    __slots__ = ("estimator", "limits", "new", "session_id")

    def __init__(self, session_id: str, estimator: str, limits: MemoryLimits, new: NewItem):
        self.session_id = session_id
        self.estimator = estimator
        self.limits = limits
        self.new = new

    def __call__(self, dialect: str) -> Steps[AppendResult]:
        return append_steps(dialect, self.session_id, self.estimator, self.limits, self.new)

    def run_sqlite(self, conn: sqlite3.Connection) -> AppendResult | None:
        """The append in the common case, on the SQLite writer's connection, inside its
        transaction: the BUMP, then the INSERT, as :func:`append_steps` runs them.

        Returns:
            What the append committed once the transaction does; or ``None``, having written
            nothing, when the step generator must run instead: the append has an
            idempotency key (it is looked up first), or the BUMP matched no row (no session
            yet, or one counted by another estimator).
        """
        new = self.new
        if new.idempotency_key is not None:
            return None
        bump_sql, insert_sql, timestamp = _sqlite_statements()
        now = utcnow()
        stamp = timestamp(now)  # the only parameter with a type processor, in both statements
        values = _bump_values(self.session_id, self.estimator, self.limits, new, stamp)
        rows = conn.execute(bump_sql, values).fetchall()  # drained, or it would hold up COMMIT
        if not rows:
            return None
        version, seq, active_tokens, summary_tokens, user_turns = rows[0]
        item = _appended(self.session_id, new, now, version, seq)
        conn.execute(insert_sql, _insert_values(item, None, stamp))
        return AppendResult(item, session_total(active_tokens, summary_tokens), user_turns)


@functools.cache
def _sqlite_statements() -> tuple[str, str, Callable[[datetime], str]]:
    """BUMP's and INSERT_ITEM's SQL for the stdlib driver, and the timestamp conversion.

    Checked on first use (a failed check is not cached: every append raises it): both bind
    in the order :func:`_bump_values` and :func:`_insert_values` give, only their timestamp
    is converted on the way (by ``sqlite_timestamp``, as the generator's path converts it),
    and BUMP returns its columns in the order ``run_sqlite`` unpacks them. Else binding tuples
    directly would store something else than the step generator's path does.
    """
    from memstore.db.sqlite_statements import compile_once, sqlite_timestamp  # SQLite only

    bump, insert_item = compile_once(BUMP), compile_once(INSERT_ITEM)
    returned = tuple(column["name"] for column in BUMP.returning_column_descriptions)
    if (
        (bump.order, bump.processed) != (BUMP_PARAMS, ("now",))
        or (insert_item.order, insert_item.processed) != (_ITEM_INSERT_COLUMNS, ("created_at",))
        or returned != _BUMP_RETURNS
    ):
        raise RuntimeError("the append's statements no longer bind as Append.run_sqlite does")
    return bump.sql, insert_item.sql, sqlite_timestamp


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
            db, Append(session_id, estimator, limits, new), size=len(new.content)
        )
    except Duplicate as duplicate:  # raised inside the transaction: it rolled back
        return duplicate.result
