"""Leases and the one primitive that commits a compaction under compare-and-swap.

The concurrency protocol (SPEC 3), in the order a compaction meets it:

1. :func:`acquire_lease`: a short write that takes the session's lease if it is free or
   expired and increments ``lease_token`` (the fencing token). Only the holder calls the
   summarizer, so contention wastes no model calls.
2. a snapshot (:mod:`memstore.db.reads`); no transaction stays open while the summarizer runs.
3. :func:`commit_compaction`: one write transaction whose first statement is a
   compare-and-swap on the session row. It matches only if no other compaction committed
   since the snapshot (``compaction_count``) and this worker still holds the lease
   (``lease_owner`` and ``lease_token``: a worker whose lease expired and was taken over is
   fenced off). Appends made meanwhile change neither column, so they never make a
   compaction fail; they are included in the totals it returns. Every item update then
   checks ``fate IS NULL`` and the row counts must add up, or everything rolls back.

The lease is coordination metadata, not memory state: taking or releasing it does not
increment the session version (the event clock counts appends and compactions only).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import func, insert, select, update

from memstore.db.engine import Database
from memstore.db.reads import (
    report_from_record,
    session_total,
    utcnow,
)
from memstore.db.tables import compactions, items, sessions, summaries
from memstore.errors import (
    CompactionConflictError,
)
from memstore.model import (
    CompactionReport,
    Fate,
    MemoryLimits,
)
from memstore.policy import CompactionPlan

#: Ids per ``IN (...)`` list: far below SQLite's and PostgreSQL's parameter limits.
ID_CHUNK = 500


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
        after_tokens = session_total(row.active_tokens, row.summary_tokens)
        record = {
            "session_id": snap.session_id,
            "number": number,
            "snapshot_version": snap.version,
            "committed_version": version,
            "trigger": ctx.trigger,
            "before_tokens": plan.before_tokens,
            "after_tokens": after_tokens,
            "items_dropped": len(plan.dropped),
            "items_summarized": len(plan.summarized),
            "items_evicted": len(plan.evicted),
            "summary_action": plan.summary_action,
            "summary_tokens": plan.summary_tokens if plan.summary is not None else None,
            "summary_error": plan.summary_error,
            "summarizer": ctx.summarizer,
            "worker_host": ctx.worker_host,
            "worker_pid": ctx.worker_pid,
            "started_at": ctx.started_at,
            "finished_at": finished,
            "summarize_seconds": ctx.summarize_seconds,
            "attempts": ctx.attempts,
            "hard_limit": ctx.limits.hard,
            "target_limit": ctx.limits.target,
            "keep_recent": ctx.limits.keep_recent,
            "usage": ctx.usage,
        }
        await conn.execute(insert(compactions).values(**record))
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
            raise CompactionConflictError(snap.session_id, expected=len(removed), actual=updated)
    return report_from_record(record, removed)
