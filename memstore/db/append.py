"""Appends: one short write transaction per call, as a plain function over a connection.

One function writes every append, a single item (``add``) or an agent turn's items
(``add_items``), in one transaction, in order:

1. update the session row once for the whole batch (version, next seq and cached totals
   advance by the batch, returned by the same statement); on PostgreSQL this statement also
   takes the row lock that serializes appends;
2. if the session does not exist yet, create it and repeat step 1;
3. with an idempotency key, look the key up: the items already stored under it are returned
   instead (nothing is written), or a conflict raised if they differ;
4. give each item its seq and version (one each, as if appended one by one), its turn, and
   check that a carried output (``function_call_output`` and kin) does not answer a call of
   another kind, or one already answered (an output whose call left working memory is
   stored); a call earlier in the same batch counts as stored;
5. insert the items, with one statement.

The batch is stored whole or not at all.

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

from sqlalchemy import Connection, Row, bindparam, insert, select, update

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
from memstore.db.driver_insert import compiled_insert
from memstore.db.engine import Database
from memstore.db.item_links import check_answers_a_call, turn_of
from memstore.db.reads import ITEM_COLUMNS, row_to_item, session_total, utcnow
from memstore.db.tables import UTCDateTime, items, sessions
from memstore.errors import EstimatorMismatchError, IdempotencyConflictError


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

#: The batch's ``n`` items advance the session's version and next seq by ``n``: each item
#: keeps the seq and version it would have had appended alone.
BUMP = (
    update(sessions)
    .where(sessions.c.id == bindparam("sid"), sessions.c.estimator == bindparam("est"))
    .values(
        version=sessions.c.version + bindparam("n"),
        last_seq=sessions.c.last_seq + bindparam("n"),
        active_items=sessions.c.active_items + bindparam("n"),
        active_tokens=sessions.c.active_tokens + bindparam("cost"),
        user_turns=sessions.c.user_turns + bindparam("users"),
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


def _bump(
    conn: Connection,
    session_id: str,
    estimator: str,
    limits: MemoryLimits,
    news: Sequence[NewItem],
    now: datetime,
    scope: str | None,
) -> Row[Any]:
    """Steps 1 and 2: the session row after the batch's bump (the session created if new).

    Raises:
        EstimatorMismatchError: the session was counted by another estimator.
        ValidationError: (``scope``) the session belongs to another scope.
    """
    bump = {
        "sid": session_id,
        "est": estimator,
        "n": len(news),
        "cost": sum(new.estimated_tokens for new in news) + ITEM_OVERHEAD_TOKENS * len(news),
        "users": sum(new.kind is MemoryKind.USER_MESSAGE for new in news),
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
    return row


def append_items(
    conn: Connection,
    session_id: str,
    estimator: str,
    limits: MemoryLimits,
    news: Sequence[NewItem],
    scope: str | None = None,
) -> AppendResult:
    """The statements of one append of ``news`` (one item, or a turn), in order (see the
    module docstring).

    Raises:
        EstimatorMismatchError: the session was counted by another estimator.
        IdempotencyConflictError: the key was used for different content.
        ValidationError: an output that answers a call of another kind, or one answered
            already; (``scope``) the session belongs to another scope.
        Duplicate: the key was used for these very items (the transaction must roll back;
            its result holds every item stored then).
    """
    now = utcnow()
    row = _bump(conn, session_id, estimator, limits, news, now, scope)
    if news[0].idempotency_key is not None:
        _check_keys(conn, session_id, news, row)
    first = row.last_seq - len(news) + 1  # the batch's first seq; its version likewise
    stored: list[MemoryItem] = []
    for index, new in enumerate(news):
        seq = first + index
        call_turn = check_answers_a_call(conn, session_id, new, stored) if new.is_output else None
        stored.append(
            MemoryItem(
                id=str(uuid.uuid4()),
                session_id=session_id,
                seq=seq,
                role=new.role,
                kind=new.kind,
                priority=new.priority,
                content=new.content,
                timestamp=now,
                estimated_tokens=new.estimated_tokens,
                version=row.version - row.last_seq + seq,
                payload=_loads(new.payload_json),
                call_id=new.call_id,
                handle=new.handle,
                turn=turn_of(conn, session_id, new, seq, call_turn, stored),
                pending_until=None if new.wait_seconds is None else time.time() + new.wait_seconds,
            )
        )
    insert_items(conn, stored, news)
    total = session_total(row.active_tokens, row.summary_tokens)
    return AppendResult(stored[-1], total, row.user_turns, items=tuple(stored))


def _check_keys(conn: Connection, session_id: str, news: Sequence[NewItem], row: Row[Any]) -> None:
    """Step 3, for a batch whose first item has a key (its others have ``key#2``...).

    Raises:
        Duplicate: every item was stored under these keys (a retry): nothing is written.
        IdempotencyConflictError: a key was used for other content, or another batch.
    """
    key = str(news[0].idempotency_key)
    found = conn.execute(BY_KEY, {"sid": session_id, "key": key}).first()
    if found is None:
        # The batch is new, so none of its later keys may be in use either (taken by an
        # append of its own, they would make this batch half a retry of something else).
        for later in news[1:]:
            if conn.execute(BY_KEY, {"sid": session_id, "key": later.idempotency_key}).first():
                raise IdempotencyConflictError(session_id, key)
        return
    stored = row_to_item(found)
    if not _same(stored, news[0]):
        raise IdempotencyConflictError(session_id, key)
    rest = _rest_of_batch(conn, session_id, news)
    cost = sum(new.estimated_tokens + ITEM_OVERHEAD_TOKENS for new in news)
    before = row.active_tokens - cost  # the rollback undoes this batch's bump
    total = session_total(before, row.summary_tokens)
    raise Duplicate(AppendResult(stored, total, 0, True, (stored, *rest)))


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


def insert_items(conn: Connection, stored: Sequence[MemoryItem], news: Sequence[NewItem]) -> None:
    """Step 5: the batch's rows, in one statement (on SQLite, :mod:`memstore.db.driver_insert`:
    SQLAlchemy's SQL and bind processors without Core's per-execution work)."""
    rows = [_insert_values(item, new) for item, new in zip(stored, news, strict=True)]
    compiled = compiled_insert(items, tuple(rows[0]), conn.dialect)
    if compiled is None:
        conn.execute(INSERT_ITEM, rows)
    else:
        compiled.run(conn, rows)


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
    news: Sequence[NewItem],
    scope: str | None = None,
) -> AppendResult:
    """Append ``news`` (one item, or a turn's) durably in one transaction; return them with
    the session's new total.

    Raises:
        EstimatorMismatchError: the session was counted by another estimator.
        IdempotencyConflictError: the key was used for different content.
        ValidationError: an output that answers a call of another kind, or one answered
            already.
        LockTimeoutError: the database stayed locked past the busy timeout.
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
    except Duplicate as duplicate:  # raised inside the transaction: it rolled back
        return duplicate.result
