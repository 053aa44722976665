"""The one primitive that commits a compaction under compare-and-swap.

The concurrency protocol, in the order a compaction meets it:

1. :func:`~memstore.db.lease.acquire_lease`: a short write that takes the session's lease
   (free, expired, or held by a dead process of this host) and increments ``lease_token``
   (the fencing token). Only the holder calls the summarizer, so contention wastes no model
   calls; it renews the lease while the summarizer runs.
2. a snapshot (:mod:`memstore.db.reads`); no transaction stays open while the summarizer runs.
3. :func:`commit_compaction`: one write transaction whose first statement is a
   compare-and-swap on the session row. It matches only if no other compaction committed
   since the snapshot (``compaction_count``) and this worker still holds the lease
   (``lease_owner`` and ``lease_token``: a worker whose lease expired and was taken over is
   fenced off). Appends made meanwhile change neither column, so they never make a
   compaction fail; they are included in the totals it returns. Every item update then
   checks ``fate IS NULL`` and the row counts must add up, or everything rolls back. A
   refused commit says why: another compaction committed first, or the lease was taken over.

Removals the application asks for (``pop_item``, ``clear_session``: :mod:`memstore.db.rewind`)
commit through the same statements, planned inside the write transaction itself; they take
no lease (nothing runs between their read and their write), so their compare-and-swap checks
only the compaction count and leaves the lease columns alone.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Connection, bindparam, case, insert, select, update

from memstore.core.policy import CompactionPlan
from memstore.core.records import CompactionReport
from memstore.core.values import MemoryLimits
from memstore.db.engine import Database
from memstore.db.lease import CLEARED
from memstore.db.reads import report_from_record, session_total, utcnow
from memstore.db.tables import UTCDateTime, compactions, items, sessions, summaries
from memstore.errors import CompactionConflictError, LeaseLostError

# -- the statements (bound parameters only; built once) ------------------------------------

_turns_left = sessions.c.user_turns - bindparam("turns")
_RETURNED = (
    sessions.c.version,
    sessions.c.compaction_count,
    sessions.c.active_tokens,
    sessions.c.summary_tokens,
)
#: What every committed compaction changes in the session row.
_SWAPPED = {
    "version": sessions.c.version + 1,
    "compaction_count": sessions.c.compaction_count + 1,
    "active_items": sessions.c.active_items - bindparam("removed_items"),
    "active_tokens": sessions.c.active_tokens - bindparam("removed_cost"),
    # User turns that arrived after the snapshot still count toward summarize_every.
    "user_turns": case((_turns_left > 0, _turns_left), else_=0),
    "summary": bindparam("summary"),
    "summary_tokens": bindparam("summary_tokens"),
    "updated_at": bindparam("now", type_=UTCDateTime),
}
_UNCHANGED_SINCE_SNAPSHOT = (
    sessions.c.id == bindparam("sid"),
    sessions.c.compaction_count == bindparam("expected_count"),
)
CAS = (
    update(sessions)
    .where(
        *_UNCHANGED_SINCE_SNAPSHOT,
        sessions.c.lease_owner == bindparam("owner"),
        sessions.c.lease_token == bindparam("token"),
    )
    .values(**_SWAPPED, **CLEARED)
    .returning(*_RETURNED)
)
#: The same swap for a plan made inside its own write transaction: no lease to check or clear.
UNFENCED_CAS = (
    update(sessions).where(*_UNCHANGED_SINCE_SNAPSHOT).values(**_SWAPPED).returning(*_RETURNED)
)
WHY_REFUSED = select(
    sessions.c.compaction_count, sessions.c.lease_owner, sessions.c.lease_token
).where(sessions.c.id == bindparam("sid"))
_RECORD_COLUMNS = [column.name for column in compactions.columns]
INSERT_REPORT = insert(compactions).values({name: bindparam(name) for name in _RECORD_COLUMNS})
INSERT_SUMMARY = insert(summaries).values(
    session_id=bindparam("sid"),
    compaction_number=bindparam("number"),
    content=bindparam("content"),
    estimated_tokens=bindparam("tokens"),
    created_version=bindparam("v"),
)
#: Marks the removed items of one fate: one statement per fate and chunk of ids, not one per
#: item, so a compaction's commit costs a few statements whatever it removes.
MARK_REMOVED = (
    update(items)
    .where(
        items.c.session_id == bindparam("sid"),
        items.c.id.in_(bindparam("item_ids", expanding=True)),
        items.c.fate.is_(None),
    )
    .values(
        fate=bindparam("fate"),
        removed_by=bindparam("number"),
        removed_version=bindparam("v"),
        version=items.c.version + 1,
    )
)
#: Ids per MARK_REMOVED statement: its parameters stay under SQLite's oldest limit (999).
MARK_CHUNK = 500


@dataclass(frozen=True)
class CommitContext:
    """Who commits a plan, under which lease, and what the report should say about it.

    ``owner`` is ``None`` for a plan made inside its own write transaction (no lease).
    """

    owner: str | None
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
    took_over_from: str | None = None


def commit_plan(conn: Connection, plan: CompactionPlan, ctx: CommitContext) -> CompactionReport:
    """The statements of one compaction commit (see the module docstring).

    Raises:
        CompactionConflictError: the compare-and-swap or the row counts failed.
    """
    snap = plan.snapshot
    sid = snap.session_id
    removed = plan.removed
    finished = utcnow()
    summary_tokens = plan.summary_tokens if plan.summary is not None else None
    row = conn.execute(
        CAS if ctx.owner is not None else UNFENCED_CAS,
        {
            "sid": sid,
            "expected_count": snap.compaction_count,
            "owner": ctx.owner,
            "token": ctx.lease_token,
            "removed_items": len(removed),
            "removed_cost": plan.removed_cost,
            "turns": snap.user_turns,
            "summary": plan.summary,
            "summary_tokens": summary_tokens,
            "now": finished,
        },
    ).first()
    if row is None:
        now = conn.execute(WHY_REFUSED, {"sid": sid}).first()
        if now is not None and now.compaction_count == snap.compaction_count:
            raise LeaseLostError(sid, taken_by=now.lease_owner, token=now.lease_token)
        actual = None if now is None else now.compaction_count
        raise CompactionConflictError(sid, expected=snap.compaction_count, actual=actual)
    number, version = row.compaction_count, row.version
    record = {
        "session_id": sid,
        "number": number,
        "snapshot_version": snap.version,
        "committed_version": version,
        "trigger": ctx.trigger,
        "before_tokens": plan.before_tokens,
        "after_tokens": session_total(row.active_tokens, row.summary_tokens),
        "items_dropped": len(plan.dropped),
        "items_summarized": len(plan.summarized),
        "items_evicted": len(plan.evicted),
        "summary_action": plan.summary_action,
        "summary_tokens": summary_tokens,
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
        "took_over_from": ctx.took_over_from,
    }
    conn.execute(INSERT_REPORT, record)
    if plan.summary is not None and plan.summary_action in ("replaced", "trimmed"):
        conn.execute(INSERT_SUMMARY, {
            "sid": sid, "number": number, "content": plan.summary,
            "tokens": plan.summary_tokens, "v": version,
        })  # fmt: skip
    by_fate: dict[str, list[str]] = {}
    for item_id, fate in removed.items():
        by_fate.setdefault(fate, []).append(item_id)
    marked = 0
    for fate, ids in by_fate.items():
        for start in range(0, len(ids), MARK_CHUNK):
            params = {
                "sid": sid, "item_ids": ids[start : start + MARK_CHUNK], "fate": fate,
                "number": number, "v": version,
            }  # fmt: skip
            marked += conn.execute(MARK_REMOVED, params).rowcount
    # Defence in depth: the compare-and-swap makes a mismatch unreachable unless the ledger
    # was edited by hand (an item removed outside a compaction). Each statement is a single
    # execution, whose row count every driver reports (asyncpg does not for executemany).
    if marked != len(removed):
        raise CompactionConflictError(sid, expected=len(removed), actual=marked)
    return report_from_record(record, removed)


async def commit_compaction(
    db: Database, plan: CompactionPlan, ctx: CommitContext
) -> CompactionReport:
    """Commit ``plan`` atomically under compare-and-swap, or write nothing.

    Raises:
        CompactionConflictError: another compaction committed since the plan's snapshot, or
            this worker's lease was taken over (fencing); nothing was written.
    """
    return await db.run_write(partial(commit_plan, plan=plan, ctx=ctx))
