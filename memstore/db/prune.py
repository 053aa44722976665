"""Explicit deletion of history: ``prune`` (old compactions and what they removed), ``purge``.

Compaction never deletes; these operator actions do. ``prune`` keeps the ledger verifiable:
it records on the session row where the remaining history starts (``base_version``), the
summary in force there, and how many items and compactions were deleted, which is what
replay and ``check`` start from. Neither action is a change of working memory, so neither
increments the session version.

Each runs in one write transaction that starts by locking the session row (PostgreSQL:
``FOR UPDATE``; SQLite: every write holds the write lock), so two of them, or one and a fork,
never act on what the other is deleting. ``with_derived`` deletes, in the same transaction,
the long-term entries consolidation derived from what is deleted and erases their history
versions' text and source (:func:`memstore.db.ltm.forget_derived`). Nothing of the deleted
text is left in a SQLite file afterwards: free space is zeroed as it is freed, the full-text
index is merged without the deleted rows, and the write-ahead log is truncated once the
transaction committed (:mod:`memstore.db.erasure`).
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from functools import partial
from typing import Any

from sqlalchemy import Connection, delete, select, update

from memstore.config import pause_point
from memstore.db.engine import Database
from memstore.db.erasure import erase_index_residue, truncate_wal
from memstore.db.fork import descendants
from memstore.db.ltm import forget_derived
from memstore.db.reads import utcnow
from memstore.db.tables import compactions, input_counts, items, sessions, summaries
from memstore.errors import ForkedHistoryError, SessionNotFoundError, ValidationError

#: Versions live in integer columns: PostgreSQL's ``integer`` ends here, and a larger bound
#: would fail inside the driver instead of naming the argument.
MAX_VERSION = 2**31 - 1


async def prune(
    db: Database,
    session_id: str,
    *,
    before_version: int | None = None,
    before_time: datetime | None = None,
    with_derived: bool = False,
    now: datetime | None = None,
) -> tuple[int, int]:
    """Delete compactions committed before a version (or time) and the items they removed.

    ``with_derived``: also the long-term entries consolidated from items of the session that
    no longer exist (these, or those of an earlier prune), and their history's text; ``now``
    is when their deletes are recorded (default: the clock).

    Returns:
        (compactions deleted, items deleted).

    Raises:
        SessionNotFoundError: no such session.
        ValidationError: naming ``before``: neither or both of ``before_version`` /
            ``before_time`` given, a version that is not an integer in 0..2**31-1, or a
            time that is not a timezone-aware datetime.
    """
    if (before_version is None) == (before_time is None):
        raise ValidationError("before", "give exactly one of a version or a time")
    if before_version is not None and (
        isinstance(before_version, bool)
        or not isinstance(before_version, int)
        or not 0 <= before_version <= MAX_VERSION
    ):
        raise ValidationError(
            "before", f"a version must be an integer in 0..{MAX_VERSION}, got {before_version!r}"
        )
    if before_time is not None and (
        not isinstance(before_time, datetime) or before_time.tzinfo is None
    ):
        raise ValidationError("before", "a time must be a timezone-aware datetime")
    job = partial(
        _prune,
        session_id=session_id,
        before_version=before_version,
        before_time=before_time,
        with_derived=with_derived,
        now=now or utcnow(),
    )
    done: tuple[int, int] = await db.run_write(job)
    await truncate_wal(db, f"the prune of {session_id!r}")
    return done


def _prune(
    conn: Connection,
    session_id: str,
    before_version: int | None,
    before_time: datetime | None,
    with_derived: bool,
    now: datetime,
) -> tuple[int, int]:
    done = _prune_history(conn, session_id, before_version, before_time)
    touched = ["items", "summaries"] if done != (0, 0) else []
    if with_derived:
        kept = set(
            conn.execute(select(items.c.seq).where(items.c.session_id == session_id)).scalars()
        )

        def gone_items(source: Mapping[str, Any]) -> bool:
            seqs = source.get("seqs") or ()
            return source.get("session") == session_id and not set(seqs) <= kept

        if forget_derived(conn, gone_items, now):
            touched.append("ltm_entries")
    erase_index_residue(conn, touched)
    return done


def _prune_history(
    conn: Connection,
    session_id: str,
    before_version: int | None,
    before_time: datetime | None,
) -> tuple[int, int]:
    # FOR UPDATE (PostgreSQL): a second prune waits here, then reads what the first one left;
    # without the lock both read the same counters, and both added their deletions to them.
    session = conn.execute(
        select(sessions).where(sessions.c.id == session_id).with_for_update()
    ).first()
    if session is None:
        raise SessionNotFoundError(session_id)
    query = select(compactions).where(compactions.c.session_id == session_id)
    if before_version is not None:
        query = query.where(compactions.c.committed_version < before_version)
    else:
        query = query.where(compactions.c.finished_at < before_time)
    doomed = conn.execute(query.order_by(compactions.c.number)).all()
    pause_point("prune-read")
    if not doomed:
        return 0, 0
    # Compactions are pruned oldest first and without gaps, so the rest stays replayable.
    first_kept = session.pruned_compactions + len(doomed) + 1
    if [c.number for c in doomed] != list(range(session.pruned_compactions + 1, first_kept)):
        raise ValidationError("before", "would leave a gap in the compaction history")
    numbers = [c.number for c in doomed]
    produced = dict(
        conn.execute(
            select(summaries.c.compaction_number, summaries.c.content).where(
                summaries.c.session_id == session_id,
                summaries.c.compaction_number.in_(numbers),
            )
        ).all()
    )
    base_summary, base_tokens = session.base_summary, session.base_summary_tokens
    for comp in doomed:
        if comp.summary_action in ("replaced", "trimmed"):
            base_summary, base_tokens = produced[comp.number], comp.summary_tokens
        elif comp.summary_action == "removed":
            base_summary, base_tokens = None, None
    in_doomed = (items.c.session_id == session_id) & items.c.removed_by.in_(numbers)
    removed = conn.execute(delete(items).where(in_doomed))
    conn.execute(
        delete(summaries).where(
            summaries.c.session_id == session_id, summaries.c.compaction_number.in_(numbers)
        )
    )
    conn.execute(
        delete(compactions).where(
            compactions.c.session_id == session_id, compactions.c.number.in_(numbers)
        )
    )
    conn.execute(
        update(sessions)
        .where(sessions.c.id == session_id)
        .values(
            pruned_items=sessions.c.pruned_items + removed.rowcount,
            pruned_compactions=sessions.c.pruned_compactions + len(doomed),
            base_version=doomed[-1].committed_version,
            base_summary=base_summary,
            base_summary_tokens=base_tokens,
        )
    )
    return len(doomed), removed.rowcount


async def purge(
    db: Database,
    session_id: str,
    *,
    with_forks: bool = False,
    with_derived: bool = False,
    now: datetime | None = None,
) -> int:
    """Delete the session and everything recorded about it; return the items deleted.

    A fork holds a copy of the history it started with (:mod:`memstore.db.fork`), so
    purging a session with forks would leave that history behind: refused, unless
    ``with_forks`` deletes them (and their forks) in the same transaction. ``with_derived``
    also deletes the long-term entries consolidated from any session deleted, and erases
    the text and source of every history version consolidated from one (``now``: when the
    deletes are recorded; default: the clock).

    Raises:
        SessionNotFoundError: no such session.
        ForkedHistoryError: the session has forks and ``with_forks`` is false.
    """
    job = partial(
        _purge,
        session_id=session_id,
        with_forks=with_forks,
        with_derived=with_derived,
        now=now or utcnow(),
    )
    deleted: int = await db.run_write(job)
    await truncate_wal(db, f"the purge of {session_id!r}")
    return deleted


def _purge(
    conn: Connection, session_id: str, with_forks: bool, with_derived: bool, now: datetime
) -> int:
    # Locked before its forks are listed (PostgreSQL): a fork or an import of a fork being
    # made right now holds the row FOR SHARE, so it has either committed (and is listed) or
    # waits for this transaction, and then finds its parent gone.
    where = sessions.c.id == session_id
    if conn.execute(select(sessions.c.id).where(where).with_for_update()).first() is None:
        raise SessionNotFoundError(session_id)
    forks = descendants(conn, session_id, lock=True)
    if forks and not with_forks:
        raise ForkedHistoryError(session_id, tuple(forks))
    pause_point("purge-read")
    # The farthest forks first: no session row ever names a parent that is gone.
    doomed = [*reversed(forks), session_id]
    deleted = sum(_delete_session(conn, sid) for sid in doomed)
    touched = ["items", "summaries"]
    if with_derived:

        def from_doomed(source: Mapping[str, Any]) -> bool:
            return source.get("session") in doomed

        if forget_derived(conn, from_doomed, now):
            touched.append("ltm_entries")
    erase_index_residue(conn, touched)
    return deleted


def _delete_session(conn: Connection, session_id: str) -> int:
    conn.execute(delete(summaries).where(summaries.c.session_id == session_id))
    gone = conn.execute(delete(items).where(items.c.session_id == session_id))
    conn.execute(delete(compactions).where(compactions.c.session_id == session_id))
    conn.execute(delete(input_counts).where(input_counts.c.session_id == session_id))
    conn.execute(delete(sessions).where(sessions.c.id == session_id))
    count: int = gone.rowcount
    return count
