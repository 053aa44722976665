"""Removals the application asks for: ``pop_item`` and ``clear_session``, on the record.

Nothing is deleted. Popping takes back the newest active item (fate ``popped``: an agent
framework rewinding a failed turn); clearing takes every active item (fate ``cleared``) and
the summary. Each commits as a compaction of its own, trigger ``pop`` or ``clear``, through
:func:`~memstore.db.compaction.commit_plan`, so reports, replay, ``memstore show --all`` and
``memstore check`` account for them like for any other change of working memory.

The plan is made inside the write transaction (the session row locked first on PostgreSQL;
SQLite's writer holds the database lock), so no lease is needed: a compaction planned
meanwhile by another worker finds the compaction count moved and plans again.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, replace
from functools import partial

from sqlalchemy import Connection, bindparam, select, update

from memstore.core.policy import CompactionPlan
from memstore.core.records import CompactionReport
from memstore.core.values import MemoryItem, MemoryLimits
from memstore.db.compaction import CommitContext, commit_plan
from memstore.db.engine import Database
from memstore.db.reads import read_snapshot, utcnow
from memstore.db.tables import items, sessions


@dataclass(frozen=True)
class Rewound:
    """What a pop or a clear removed.

    Attributes:
        report: The compaction record it committed as.
        items: The items it removed, oldest first.
    """

    report: CompactionReport
    items: tuple[MemoryItem, ...]


def rewind(
    conn: Connection,
    session_id: str,
    limits: MemoryLimits,
    worker_host: str,
    *,
    clear: bool,
    handle: str | None = None,
) -> Rewound | None:
    """Pop the newest active item (of ``handle``, when given: never another writer's), or
    clear them all and the summary; ``None`` if there is nothing to remove."""
    conn.execute(select(sessions.c.id).where(sessions.c.id == session_id).with_for_update())
    snap = read_snapshot(conn, session_id)
    if snap is None or not (snap.items or (clear and snap.summary is not None)):
        return None
    own = [item for item in snap.items if handle is None or item.handle == handle]
    if not clear and not own:
        return None
    removed = snap.items if clear else tuple(own[-1:])
    ids = tuple(item.id for item in removed)
    if clear:
        plan = CompactionPlan(
            snapshot=snap,
            kept=(),
            cleared=ids,
            summary=None,
            summary_action="removed" if snap.summary is not None else "kept",
            removed_cost=sum(item.cost for item in removed),
        )
    else:  # the turns counted toward summarize_every stay counted
        snap = replace(snap, user_turns=0)
        plan = CompactionPlan(
            snapshot=snap,
            kept=tuple(item for item in snap.items if item.id != removed[0].id),
            popped=ids,
            summary=snap.summary,
            summary_tokens=snap.summary_tokens,
            removed_cost=removed[0].cost,
        )
    ctx = CommitContext(
        owner=None,
        lease_token=0,
        trigger="clear" if clear else "pop",
        summarizer=None,
        limits=limits,
        worker_host=worker_host,
        worker_pid=os.getpid(),
        started_at=utcnow(),
        summarize_seconds=0.0,
        attempts=1,
    )
    return Rewound(commit_plan(conn, plan, ctx), tuple(removed))


async def pop_item(
    db: Database, session_id: str, limits: MemoryLimits, worker_host: str, handle: str | None
) -> Rewound | None:
    """Take back the newest active item ``handle`` added (any writer's when ``None``);
    ``None``: there is none."""
    job = partial(rewind, session_id=session_id, limits=limits, worker_host=worker_host)
    return await db.run_write(partial(job, clear=False, handle=handle))


#: A closed handle's calls wait no more: their deadline is now past (0).
END_PENDING = (
    update(items)
    .where(
        items.c.session_id == bindparam("sid"),
        items.c.handle == bindparam("by_handle"),
        items.c.fate.is_(None),
        items.c.pending_until.is_not(None),
    )
    .values(pending_until=0.0)
)


async def end_pending(db: Database, session_id: str, handle: str) -> int:
    """A handle closed: none of its calls waits for an output any more (compaction may
    remove them like any incomplete unit). Returns how many items it changed."""

    def job(conn: Connection) -> int:
        return conn.execute(END_PENDING, {"sid": session_id, "by_handle": handle}).rowcount

    return await db.run_write(job)


async def clear(
    db: Database, session_id: str, limits: MemoryLimits, worker_host: str
) -> Rewound | None:
    """Take back every active item and the summary (``None``: nothing to clear)."""
    job = partial(rewind, session_id=session_id, limits=limits, worker_host=worker_host)
    return await db.run_write(partial(job, clear=True))
