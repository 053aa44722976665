"""Appends: one short write transaction per item, as a plain function over a connection.

An append, in order:

1. update the session row (version, next seq, cached totals, returned by the same statement);
   on PostgreSQL this statement also takes the row lock that serializes appends;
2. if the session does not exist yet, create it and repeat step 1;
3. with an idempotency key, look the key up: an item already stored under it is returned
   instead (nothing is written), or a conflict raised if it differs;
4. a carried output (``function_call_output`` and kin) must not answer a call of another
   kind, or one already answered (an output whose call left working memory is stored);
5. insert the item.

A batch (:func:`append_items`: one agent turn) runs these steps for each item in one
transaction: the turn is stored whole or not at all.

On SQLite the writer thread commits concurrent appends together, each in its own savepoint
(:mod:`memstore.db.writer`); each caller still hears "stored" only after its COMMIT.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Connection, bindparam, insert, select, update

from memstore.core.carried_items import CALL_OUTPUTS
from memstore.core.values import (
    ITEM_OVERHEAD_TOKENS,
    MemoryItem,
    MemoryKind,
    MemoryLimits,
    MemoryRole,
    Priority,
)
from memstore.db.confined import scope_refusal
from memstore.db.connection import dialect_insert
from memstore.db.engine import Database
from memstore.db.reads import ITEM_COLUMNS, row_to_item, session_total, utcnow
from memstore.db.tables import UTCDateTime, items, sessions
from memstore.errors import EstimatorMismatchError, IdempotencyConflictError, ValidationError


@dataclass(frozen=True)
class NewItem:
    """A validated, counted item about to be appended."""

    role: MemoryRole
    kind: MemoryKind
    priority: Priority
    content: str
    estimated_tokens: int
    idempotency_key: str | None = None
    #: A carried Responses item's JSON text (``None``: a text item).
    payload_json: str | None = None
    #: Its call/output link; with ``is_output``, the call it must find.
    call_id: str | None = None
    is_output: bool = False
    #: How error messages name it (``items[2]``).
    field: str = "item"
    #: The handle appending it (:mod:`memstore.core.turns`); ``None``: unknown.
    handle: str | None = None
    #: For a call (or reasoning) that may wait for its output: for how many seconds.
    wait_seconds: float | None = None


@dataclass(frozen=True)
class AppendResult:
    """What an append committed (or found, for a repeated idempotency key).

    Attributes:
        item: The (last) item stored.
        total_tokens: The session's total after it.
        user_turns: User turns since the last compaction.
        duplicate: The idempotency key was used before: nothing was written.
        items: Every item of the batch (one, for a single append).
    """

    item: MemoryItem
    total_tokens: int
    user_turns: int
    duplicate: bool = False
    items: tuple[MemoryItem, ...] = ()


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
        sessions.c.scope,
    )
)
ESTIMATOR = select(sessions.c.estimator).where(sessions.c.id == bindparam("sid"))
BY_KEY = select(*ITEM_COLUMNS).where(
    items.c.session_id == bindparam("sid"), items.c.idempotency_key == bindparam("key")
)
#: Built once, its values passed at execution: a statement made per append would be
#: constructed and cache-keyed again on every turn.
INSERT_ITEM = insert(items)
#: The active items linked by one call_id (the call, and its output if it has one): one
#: probe of the partial call_id index. A call no longer in working memory does not count:
#: its output would reach the model orphaned.
LINKED = select(items.c.kind, items.c.payload, items.c.seq, items.c.turn).where(
    items.c.session_id == bindparam("sid"),
    items.c.call_id == bindparam("call_id"),
    items.c.fate.is_(None),
)


#: The turn of the handle's newest item: a later item of that handle joins it.
HANDLE_TURN = (
    select(items.c.turn)
    .where(items.c.session_id == bindparam("sid"), items.c.handle == bindparam("handle"))
    .order_by(items.c.seq.desc())
    .limit(1)
)


def _create_session(
    conn: Connection,
    session_id: str,
    estimator: str,
    limits: MemoryLimits,
    now: datetime,
    scope: str | None = None,
) -> None:
    """``INSERT ... ON CONFLICT DO NOTHING``: two workers may create one session at once.
    The session's scope is recorded here, once, by its first append."""
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
            scope=scope,
        )
        .on_conflict_do_nothing()
    )
    conn.execute(statement)


def _recorded_estimator(conn: Connection, session_id: str) -> str | None:
    return conn.execute(ESTIMATOR, {"sid": session_id}).scalar()


def append_item(
    conn: Connection,
    session_id: str,
    estimator: str,
    limits: MemoryLimits,
    new: NewItem,
    scope: str | None = None,
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
        _create_session(conn, session_id, estimator, limits, now, scope)
        row = conn.execute(BUMP, bump).first()
        if row is None:  # created at the same moment by a worker with another estimator
            existing = _recorded_estimator(conn, session_id)
            raise EstimatorMismatchError(session_id, expected=str(existing), actual=estimator)
    if scope is not None and row.scope not in (None, scope):  # another's: the bump rolls back
        raise scope_refusal(session_id, row.scope, scope)
    if new.idempotency_key is not None:
        found = conn.execute(BY_KEY, {"sid": session_id, "key": new.idempotency_key}).first()
        if found is not None:
            stored = row_to_item(found)
            if not _same(stored, new):
                raise IdempotencyConflictError(session_id, new.idempotency_key)
            before = row.active_tokens - bump["cost"]  # the rollback undoes our bump
            raise Duplicate(
                AppendResult(stored, session_total(before, row.summary_tokens), 0, duplicate=True)
            )
    call_turn = _check_answers_a_call(conn, session_id, new) if new.is_output else None
    turn = _turn_of(conn, session_id, new, row.last_seq, call_turn)
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
        payload=_loads(new.payload_json),
        call_id=new.call_id,
        handle=new.handle,
        turn=turn,
        pending_until=None if new.wait_seconds is None else time.time() + new.wait_seconds,
    )
    conn.execute(INSERT_ITEM, _insert_values(item, new))
    total = session_total(row.active_tokens, row.summary_tokens)
    return AppendResult(item, total, row.user_turns, items=(item,))


def _turn_of(
    conn: Connection, session_id: str, new: NewItem, seq: int, call_turn: int | None
) -> int | None:
    """The turn ``new`` belongs to (:mod:`memstore.core.turns`): its own, for a user message;
    its call's, for an output; else its handle's current one (``None``: a turn of its own)."""
    if new.kind is MemoryKind.USER_MESSAGE:
        return seq
    if call_turn is not None:
        return call_turn
    if new.handle is None:
        return None
    found: int | None = conn.execute(
        HANDLE_TURN, {"sid": session_id, "handle": new.handle}
    ).scalar()
    return found


def _check_answers_a_call(conn: Connection, session_id: str, new: NewItem) -> int | None:
    """An output must answer a call of its kind that has no output yet; the call's turn.

    An output whose call is not in working memory (a compaction removed it while the tool
    ran, or the call was never stored here) is stored all the same: refusing it would lose
    the turn, and the model input leaves it out (:func:`memstore.core.units.valid_input`).
    """
    linked = conn.execute(LINKED, {"sid": session_id, "call_id": new.call_id}).all()
    calls = [json.loads(row.payload) for row in linked if row.kind == "ASSISTANT_MESSAGE"]
    field = f"{new.field}.call_id"
    if not calls:
        return None
    wanted = CALL_OUTPUTS.get(str(calls[0].get("type")))
    given = json.loads(new.payload_json or "{}").get("type")
    if wanted != given:
        raise ValidationError(f"{new.field}.type", f"{given!r} cannot answer a {wanted!r} call")
    if len(linked) > len(calls):
        raise ValidationError(field, f"the call {new.call_id!r} already has its output")
    call = next(row for row in linked if row.kind == "ASSISTANT_MESSAGE")
    return call.seq if call.turn is None else int(call.turn)


def _rest_of_batch(conn: Connection, session_id: str, news: Sequence[NewItem]) -> list[MemoryItem]:
    """The stored items of a batch whose first key was found: every one must be there and
    be the same, and the stored batch no longer, or the key was used for another batch."""
    key = str(news[0].idempotency_key)
    found = []
    for index, later in enumerate(news[1:], 1):
        hit = conn.execute(BY_KEY, {"sid": session_id, "key": batch_key(key, index)}).first()
        if hit is None or not _same(row_to_item(hit), later):
            raise IdempotencyConflictError(session_id, key)
        found.append(row_to_item(hit))
    if conn.execute(BY_KEY, {"sid": session_id, "key": batch_key(key, len(news))}).first():
        raise IdempotencyConflictError(session_id, key)
    return found


def _same(stored: MemoryItem, new: NewItem) -> bool:
    """Whether a stored item is the one ``new`` describes (an idempotent retry)."""
    return (stored.content, stored.kind, stored.role, stored.priority, stored.payload) == (
        new.content, new.kind, new.role, new.priority, _loads(new.payload_json),
    )  # fmt: skip


def _loads(payload_json: str | None) -> Any:
    return None if payload_json is None else json.loads(payload_json)


def batch_key(key: str | None, index: int) -> str | None:
    """The idempotency key of a batch's item ``index``: the batch's own for the first item,
    then ``key#2``, ``key#3``, ... (the key identifies the whole batch)."""
    return key if key is None or index == 0 else f"{key}#{index + 1}"


def append_items(
    conn: Connection,
    session_id: str,
    estimator: str,
    limits: MemoryLimits,
    news: Sequence[NewItem],
    scope: str | None = None,
) -> AppendResult:
    """Every item of ``news`` in one transaction, in order (a turn: all or nothing).

    Raises:
        As :func:`append_item`; ``Duplicate`` when the batch's key was used for this very
        batch (its result holds every item stored then).
    """
    stored: list[AppendResult] = []
    for index, new in enumerate(news):
        try:
            stored.append(append_item(conn, session_id, estimator, limits, new, scope))
        except Duplicate as duplicate:
            if index:  # only the first item's key decides: the batch was committed whole
                raise
            found = [duplicate.result.item, *_rest_of_batch(conn, session_id, news)]
            result = duplicate.result
            raise Duplicate(
                AppendResult(result.item, result.total_tokens, 0, True, tuple(found))
            ) from None
    last = stored[-1]
    items_ = tuple(result.item for result in stored)
    return AppendResult(last.item, last.total_tokens, last.user_turns, items=items_)


def _insert_values(item: MemoryItem, new: NewItem) -> dict[str, Any]:
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
        "idempotency_key": new.idempotency_key,
        "version": 1,
        "payload": new.payload_json,
        "call_id": new.call_id,
        "handle": item.handle,
        "turn": item.turn,
        "pending_until": item.pending_until,
    }


async def append(
    db: Database,
    session_id: str,
    estimator: str,
    limits: MemoryLimits,
    new: NewItem,
    scope: str | None = None,
) -> AppendResult:
    """Append one item durably; return it with the session's new total.

    Raises:
        EstimatorMismatchError: the session was counted by another estimator.
        IdempotencyConflictError: the key was used for different content.
        LockTimeoutError: the database stayed locked past the busy timeout.
    """
    try:
        return await db.run_write(
            partial(
                append_item,
                session_id=session_id,
                estimator=estimator,
                limits=limits,
                new=new,
                scope=scope,
            )
        )
    except Duplicate as duplicate:  # raised inside the transaction: it rolled back
        return duplicate.result


async def append_batch(
    db: Database,
    session_id: str,
    estimator: str,
    limits: MemoryLimits,
    news: Sequence[NewItem],
    scope: str | None = None,
) -> AppendResult:
    """Append ``news`` durably in one transaction; return them with the session's new total.

    Raises:
        As :func:`append`, and ValidationError for an output that answers a call of another
        kind or one already answered.
    """
    job = partial(
        append_items,
        session_id=session_id,
        estimator=estimator,
        limits=limits,
        news=news,
        scope=scope,
    )
    try:
        return await db.run_write(job)
    except Duplicate as duplicate:
        return duplicate.result
