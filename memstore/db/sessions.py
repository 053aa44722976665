"""Session queries: append, snapshot, lease, and the one primitive that commits a compaction.

The concurrency protocol (SPEC 3), in the order a compaction meets it:

1. ``acquire_lease``: a short write that takes the session's lease if it is free or expired
   and increments ``lease_token`` (the fencing token). Only the holder calls the summarizer.
2. ``snapshot``: a read transaction; no transaction stays open while the summarizer runs.
3. ``commit_compaction``: one write transaction whose first statement is a compare-and-swap
   on the session row: it matches only if no other compaction committed since the snapshot
   (``compaction_count``) and this worker still holds the lease (``lease_owner`` and
   ``lease_token``). Appends made meanwhile change neither column, so they never make a
   compaction fail; they are counted in the returned totals. Every item update then checks
   ``fate IS NULL`` and the row counts must add up, or everything rolls back.

Every statement that changes a session starts by updating its row, which on PostgreSQL
takes the row lock first: the same protocol holds under READ COMMITTED.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any

from sqlalchemy import Row, and_, func, insert, select, update
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.dialects.sqlite import insert as sqlite_insert
from sqlalchemy.ext.asyncio import AsyncConnection

from memstore.db.engine import Database
from memstore.db.tables import compactions, items, sessions, summaries
from memstore.errors import (
    CompactionConflictError,
    EstimatorMismatchError,
    IdempotencyConflictError,
    SessionNotFoundError,
)
from memstore.model import (
    SUMMARY_OVERHEAD_TOKENS,
    CompactionReport,
    Fate,
    MemoryItem,
    MemoryKind,
    MemoryLimits,
    MemoryRole,
    Priority,
    SessionInfo,
)
from memstore.policy import CompactionPlan, Snapshot

#: Ids per ``IN (...)`` list: far below SQLite's and PostgreSQL's parameter limits.
ID_CHUNK = 500

_ITEM_COLUMNS = (
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
)


def utcnow() -> datetime:
    """Timezone-aware now."""
    return datetime.now(timezone.utc)


def row_to_item(row: Row[Any]) -> MemoryItem:
    """A database row (``_ITEM_COLUMNS``) as a :class:`MemoryItem`."""
    return MemoryItem(
        id=row.id,
        session_id=row.session_id,
        seq=row.seq,
        role=MemoryRole(row.role),
        kind=MemoryKind(row.kind),
        priority=Priority(row.priority),
        content=row.content,
        timestamp=row.created_at,
        estimated_tokens=row.estimated_tokens,
        version=row.added_version,
        fate=Fate(row.fate) if row.fate else None,
        removed_by=row.removed_by,
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


def _total(active_tokens: int, summary_tokens: int | None) -> int:
    return active_tokens + (0 if summary_tokens is None else summary_tokens + SUMMARY_OVERHEAD_TOKENS)


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
    conn: AsyncConnection, session_id: str, estimator: str, cost: int, is_user: int, limits: MemoryLimits
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


async def _existing_estimator(conn: AsyncConnection, session_id: str) -> str | None:
    return (
        await conn.execute(select(sessions.c.estimator).where(sessions.c.id == session_id))
    ).scalar_one_or_none()


async def _find_by_key(conn: AsyncConnection, session_id: str, key: str) -> MemoryItem | None:
    row = (
        await conn.execute(
            select(*_ITEM_COLUMNS).where(
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
                existing = await _existing_estimator(conn, session_id)
                if existing is not None:
                    raise EstimatorMismatchError(session_id, expected=existing, actual=estimator)
                await _create_session_row(conn, db.dialect, session_id, estimator, limits)
                row = await _bump_for_append(conn, session_id, estimator, cost, is_user, limits)
                if row is None:  # created concurrently with another estimator
                    existing = await _existing_estimator(conn, session_id)
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
    return AppendResult(item, _total(row.active_tokens, row.summary_tokens), row.user_turns)


def row_to_info(row: Row[Any]) -> SessionInfo:
    """A ``sessions`` row as a :class:`SessionInfo`."""
    return SessionInfo(
        id=row.id,
        version=row.version,
        estimator=row.estimator,
        items_total=row.last_seq,
        active_items=row.active_items,
        total_tokens=_total(row.active_tokens, row.summary_tokens),
        summary_tokens=row.summary_tokens,
        compaction_count=row.compaction_count,
        limits=MemoryLimits(
            hard=row.hard_limit, target=row.target_limit, keep_recent=row.keep_recent
        ),
        created_at=row.created_at,
        updated_at=row.updated_at,
    )


async def session_info(db: Database, session_id: str) -> SessionInfo:
    """The session's header.

    Raises:
        SessionNotFoundError: no such session.
    """
    async with db.read() as conn:
        row = (await conn.execute(select(sessions).where(sessions.c.id == session_id))).first()
    if row is None:
        raise SessionNotFoundError(session_id)
    return row_to_info(row)


async def session_infos(db: Database) -> list[SessionInfo]:
    """Every session's header, most recently updated first."""
    async with db.read() as conn:
        result = await conn.execute(select(sessions).order_by(sessions.c.updated_at.desc()))
        return [row_to_info(row) for row in result]


def _active_items_query(session_id: str) -> Any:
    return (
        select(*_ITEM_COLUMNS)
        .where(items.c.session_id == session_id, items.c.fate.is_(None))
        .order_by(items.c.seq)
    )


async def snapshot(db: Database, session_id: str) -> Snapshot | None:
    """A consistent read of the session (``None`` if it does not exist yet)."""
    async with db.read() as conn:
        row = (await conn.execute(select(sessions).where(sessions.c.id == session_id))).first()
        if row is None:
            return None
        active = [row_to_item(r) for r in await conn.execute(_active_items_query(session_id))]
    return Snapshot(
        session_id=session_id,
        version=row.version,
        compaction_count=row.compaction_count,
        items=tuple(active),
        summary=row.summary,
        summary_tokens=row.summary_tokens or 0,
        user_turns=row.user_turns,
        estimator=row.estimator,
    )


async def estimator_of(db: Database, session_id: str) -> str | None:
    """The estimator name recorded on the session (``None``: no such session)."""
    async with db.read() as conn:
        return await _existing_estimator(conn, session_id)


async def acquire_lease(
    db: Database, session_id: str, owner: str, lease_s: float, now: float
) -> int | None:
    """Take the compaction lease if free or expired; return the fencing token, else ``None``."""
    async with db.write() as conn:
        stmt = (
            update(sessions)
            .where(
                sessions.c.id == session_id,
                (sessions.c.lease_owner.is_(None)) | (sessions.c.lease_expires_at < now),
            )
            .values(
                lease_owner=owner,
                lease_token=sessions.c.lease_token + 1,
                lease_expires_at=now + lease_s,
            )
            .returning(sessions.c.lease_token)
        )
        token: int | None = (await conn.execute(stmt)).scalar_one_or_none()
    return token


async def release_lease(db: Database, session_id: str, owner: str, token: int) -> None:
    """Give the lease back early (no-op if it was taken over meanwhile)."""
    async with db.write() as conn:
        await conn.execute(
            update(sessions)
            .where(
                sessions.c.id == session_id,
                sessions.c.lease_owner == owner,
                sessions.c.lease_token == token,
            )
            .values(lease_owner=None, lease_expires_at=None)
        )


@dataclass(frozen=True)
class CommitContext:
    """Who commits a plan, under which lease, and what the report should say about it."""

    owner: str
    lease_token: int
    trigger: str
    summarizer: str | None
    limits: MemoryLimits
    worker_host: str
    worker_pid: int
    started_at: datetime
    summarize_seconds: float
    attempts: int
    usage: dict[str, Any] | None = None


def _chunks(ids: Sequence[str]) -> Iterable[Sequence[str]]:
    for start in range(0, len(ids), ID_CHUNK):
        yield ids[start : start + ID_CHUNK]


async def commit_compaction(
    db: Database, plan: CompactionPlan, ctx: CommitContext
) -> CompactionReport:
    """Commit ``plan`` atomically under compare-and-swap, or write nothing.

    Raises:
        CompactionConflictError: another compaction committed since the plan's snapshot, or
            this worker's lease was taken over (fencing); nothing was written.
    """
    snap = plan.snapshot
    removed = plan.removed
    finished = utcnow()
    async with db.write() as conn:
        cas = (
            update(sessions)
            .where(
                sessions.c.id == snap.session_id,
                sessions.c.compaction_count == snap.compaction_count,
                sessions.c.lease_owner == ctx.owner,
                sessions.c.lease_token == ctx.lease_token,
            )
            .values(
                version=sessions.c.version + 1,
                compaction_count=sessions.c.compaction_count + 1,
                active_items=sessions.c.active_items - len(removed),
                active_tokens=sessions.c.active_tokens - plan.removed_cost,
                user_turns=func.max(sessions.c.user_turns - snap.user_turns, 0)
                if db.dialect == "sqlite"
                else func.greatest(sessions.c.user_turns - snap.user_turns, 0),
                summary=plan.summary,
                summary_tokens=plan.summary_tokens if plan.summary is not None else None,
                lease_owner=None,
                lease_expires_at=None,
                updated_at=finished,
            )
            .returning(
                sessions.c.version,
                sessions.c.compaction_count,
                sessions.c.active_tokens,
                sessions.c.summary_tokens,
            )
        )
        row = (await conn.execute(cas)).first()
        if row is None:
            actual = (
                await conn.execute(
                    select(sessions.c.compaction_count).where(sessions.c.id == snap.session_id)
                )
            ).scalar_one_or_none()
            raise CompactionConflictError(
                snap.session_id, expected=snap.compaction_count, actual=actual
            )
        number, version = row.compaction_count, row.version
        after_tokens = _total(row.active_tokens, row.summary_tokens)
        await conn.execute(
            insert(compactions).values(
                session_id=snap.session_id,
                number=number,
                snapshot_version=snap.version,
                committed_version=version,
                trigger=ctx.trigger,
                before_tokens=plan.before_tokens,
                after_tokens=after_tokens,
                items_dropped=len(plan.dropped),
                items_summarized=len(plan.summarized),
                items_evicted=len(plan.evicted),
                summary_action=plan.summary_action,
                summary_tokens=plan.summary_tokens if plan.summary is not None else None,
                summary_error=plan.summary_error,
                summarizer=ctx.summarizer,
                worker_host=ctx.worker_host,
                worker_pid=ctx.worker_pid,
                started_at=ctx.started_at,
                finished_at=finished,
                summarize_seconds=ctx.summarize_seconds,
                attempts=ctx.attempts,
                hard_limit=ctx.limits.hard,
                target_limit=ctx.limits.target,
                keep_recent=ctx.limits.keep_recent,
                usage=ctx.usage,
            )
        )
        if plan.summary is not None and plan.summary_action in ("replaced", "trimmed"):
            await conn.execute(
                insert(summaries).values(
                    session_id=snap.session_id,
                    compaction_number=number,
                    content=plan.summary,
                    estimated_tokens=plan.summary_tokens,
                    created_version=version,
                )
            )
        updated = 0
        for fate, ids in (
            (Fate.DROPPED, plan.dropped),
            (Fate.SUMMARIZED, plan.summarized),
            (Fate.EVICTED, plan.evicted),
        ):
            for chunk in _chunks(ids):
                result = await conn.execute(
                    update(items)
                    .where(
                        items.c.session_id == snap.session_id,
                        items.c.id.in_(chunk),
                        items.c.fate.is_(None),
                    )
                    .values(
                        fate=fate.value,
                        removed_by=number,
                        removed_version=version,
                        version=items.c.version + 1,
                    )
                )
                updated += result.rowcount
        if updated != len(removed):
            # Defence in depth: the CAS above makes this unreachable unless the ledger was
            # edited by hand. Raising rolls the whole compaction back.
            raise CompactionConflictError(
                snap.session_id, expected=len(removed), actual=updated
            )
    return CompactionReport(
        session_id=snap.session_id,
        compaction_count=number,
        before_tokens=plan.before_tokens,
        after_tokens=after_tokens,
        items_dropped=len(plan.dropped),
        items_summarized=len(plan.summarized),
        items_evicted=len(plan.evicted),
        summary_error=plan.summary_error,
        removed=removed,
        summarizer=ctx.summarizer,
        trigger=ctx.trigger,
        summary_action=plan.summary_action,
        summary_tokens=plan.summary_tokens if plan.summary is not None else None,
        worker_host=ctx.worker_host,
        worker_pid=ctx.worker_pid,
        started_at=ctx.started_at,
        finished_at=finished,
        summarize_seconds=ctx.summarize_seconds,
        snapshot_version=snap.version,
        committed_version=version,
        attempts=ctx.attempts,
        usage=ctx.usage,
    )


def row_to_report(row: Row[Any], removed: dict[str, str]) -> CompactionReport:
    """A ``compactions`` row (+ its removed items) as a :class:`CompactionReport`."""
    return CompactionReport(
        session_id=row.session_id,
        compaction_count=row.number,
        before_tokens=row.before_tokens,
        after_tokens=row.after_tokens,
        items_dropped=row.items_dropped,
        items_summarized=row.items_summarized,
        items_evicted=row.items_evicted,
        summary_error=row.summary_error,
        removed=removed,
        summarizer=row.summarizer,
        trigger=row.trigger,
        summary_action=row.summary_action,
        summary_tokens=row.summary_tokens,
        worker_host=row.worker_host,
        worker_pid=row.worker_pid,
        started_at=row.started_at,
        finished_at=row.finished_at,
        summarize_seconds=row.summarize_seconds,
        snapshot_version=row.snapshot_version,
        committed_version=row.committed_version,
        attempts=row.attempts,
        usage=row.usage,
    )


async def reports(db: Database, session_id: str) -> list[CompactionReport]:
    """Every committed compaction of the session, oldest first."""
    async with db.read() as conn:
        rows = list(
            await conn.execute(
                select(compactions)
                .where(compactions.c.session_id == session_id)
                .order_by(compactions.c.number)
            )
        )
        fates = await conn.execute(
            select(items.c.id, items.c.fate, items.c.removed_by)
            .where(and_(items.c.session_id == session_id, items.c.removed_by.is_not(None)))
            .order_by(items.c.seq)
        )
        removed: dict[int, dict[str, str]] = {}
        for item_id, fate, number in fates:
            removed.setdefault(number, {})[item_id] = fate
    return [row_to_report(row, removed.get(row.number, {})) for row in rows]


async def active_items(db: Database, session_id: str) -> list[MemoryItem]:
    """The session's active items, oldest first."""
    async with db.read() as conn:
        return [row_to_item(r) for r in await conn.execute(_active_items_query(session_id))]


async def all_items(db: Database, session_id: str) -> list[MemoryItem]:
    """Every item ever appended to the session (active and removed), by seq."""
    async with db.read() as conn:
        result = await conn.execute(
            select(*_ITEM_COLUMNS).where(items.c.session_id == session_id).order_by(items.c.seq)
        )
        return [row_to_item(r) for r in result]
