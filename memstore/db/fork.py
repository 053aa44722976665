"""Forks: a new session that starts as another one was at a given version.

A fork **copies** the history it starts with: every item appended up to that version (with
the fate it had then: an item removed later is active in the fork), every compaction
committed by then and the summaries they produced, into rows of its own, in one write
transaction. Copying costs a row per item, but keeps every other part of memstore unaware of
forks: ``check``, ``replay``, ``prune``, export and search read a fork's rows like any
session's, and nothing the parent does later (a compaction, a prune, a purge) can change
what the fork holds. Referencing the parent's rows instead would make every one of them
follow a chain of ancestors.

The copy is the parent's ledger cut at the version: the fork's version equals it (the fork
itself is no change of working memory, as ``prune`` is none), so ``replay FORK --at V``
rebuilds what ``replay PARENT --at V`` does, and the fork's own appends continue at V+1.
Idempotency keys travel with their items, so a retry of an append the parent already held
at that version is recognised in the fork. The session row records ``parent_id`` and
``parent_version``; a copied item or summary records in ``origin_id`` the row it was first
copied from, the same for every copy, which is how a search across sessions shows a shared
passage once (:func:`unique_hits`).

Everything else on the session row is the parent's (limits, estimator, and columns added
later, such as a scope), except what describes the moment: the lease (free), the times.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from functools import partial
from typing import Any

from sqlalchemy import Connection, Row, insert, select, tuple_

from memstore.core.search_terms import SearchHit
from memstore.core.values import ITEM_OVERHEAD_TOKENS, MemoryKind, SessionInfo
from memstore.db.connection import dialect_insert
from memstore.db.engine import Database
from memstore.db.reads import fetch_session_row, row_to_info, utcnow
from memstore.db.tables import compactions, items, sessions, summaries
from memstore.errors import SessionExistsError, SessionNotFoundError, ValidationError

#: What a fork's session row starts with instead of the parent's: nobody compacting it.
_FRESH_LEASE = {
    "lease_owner": None,
    "lease_token": 0,
    "lease_expires_at": None,
    "lease_host": None,
    "lease_pid": None,
    "lease_started": None,
}
#: An item still active at the fork's version: no removal recorded, its first row version.
_ACTIVE = {"fate": None, "removed_by": None, "removed_version": None, "version": 1}


async def fork(db: Database, session_id: str, new_session_id: str, at: int | None) -> SessionInfo:
    """Create ``new_session_id`` as ``session_id`` was at version ``at`` (latest: ``None``).

    Returns:
        The new session's header.

    Raises:
        SessionNotFoundError: ``session_id`` does not exist (``field`` ``session_id``).
        SessionExistsError: ``new_session_id`` exists already.
        ValidationError: ``at`` is no version of the session, or one whose history was
            pruned (``field`` ``at``).
    """
    if at is not None and (isinstance(at, bool) or not isinstance(at, int)):
        raise ValidationError("at", f"must be an integer version, got {at!r}")
    return await db.run_write(
        partial(fork_rows, session_id=session_id, new_session_id=new_session_id, at=at)
    )


def fork_rows(
    conn: Connection, session_id: str, new_session_id: str, at: int | None
) -> SessionInfo:
    """The fork, as one write function (module docstring)."""
    # FOR SHARE on PostgreSQL: a prune or compaction of the parent waits for the copy.
    parent = conn.execute(
        select(sessions).where(sessions.c.id == session_id).with_for_update(read=True)
    ).first()
    if parent is None:
        raise SessionNotFoundError(session_id, field="session_id")
    version = parent.version if at is None else at
    if not 1 <= version <= parent.version:
        raise ValidationError(
            "at", f"session {session_id!r} has versions 1..{parent.version}, not {version}"
        )
    if version < parent.base_version:
        raise ValidationError(
            "at",
            f"the history of {session_id!r} before version {parent.base_version} was pruned",
        )
    comps = conn.execute(
        select(compactions)
        .where(compactions.c.session_id == session_id, compactions.c.committed_version <= version)
        .order_by(compactions.c.number)
    ).all()
    rows = conn.execute(
        select(items)
        .where(items.c.session_id == session_id, items.c.added_version <= version)
        .order_by(items.c.seq)
    ).all()
    numbers = [comp.number for comp in comps]
    produced = (
        conn.execute(
            select(summaries)
            .where(summaries.c.session_id == session_id, summaries.c.compaction_number.in_(numbers))
            .order_by(summaries.c.id)
        ).all()
        if numbers
        else []
    )
    active = [row for row in rows if row.removed_version is None or row.removed_version > version]
    summary, summary_tokens = _summary_at(parent, comps, produced)
    now = utcnow()
    values = dict(parent._mapping)
    values.update(_FRESH_LEASE)
    values.update(
        id=new_session_id,
        version=version,
        last_seq=parent.pruned_items + len(rows),
        active_items=len(active),
        active_tokens=sum(row.estimated_tokens + ITEM_OVERHEAD_TOKENS for row in active),
        user_turns=_user_turns(comps, rows),
        compaction_count=parent.pruned_compactions + len(comps),
        summary=summary,
        summary_tokens=summary_tokens,
        created_at=now,
        updated_at=now,
        parent_id=session_id,
        parent_version=version,
    )
    created = conn.execute(
        dialect_insert(conn.dialect.name)(sessions).values(values).on_conflict_do_nothing()
    )
    if created.rowcount != 1:
        raise SessionExistsError(new_session_id, field="new_session_id")
    if comps:
        conn.execute(
            insert(compactions), [{**c._mapping, "session_id": new_session_id} for c in comps]
        )
    if rows:
        conn.execute(insert(items), [_copied_item(row, new_session_id, version) for row in rows])
    if produced:
        conn.execute(insert(summaries), [_copied_summary(row, new_session_id) for row in produced])
    info = fetch_session_row(conn, new_session_id)
    assert info is not None
    return row_to_info(info)


def _copied_item(row: Row[Any], new_session_id: str, version: int) -> dict[str, Any]:
    values = dict(row._mapping)
    values.update(
        id=str(uuid.uuid4()), session_id=new_session_id, origin_id=row.origin_id or row.id
    )
    if row.removed_version is not None and row.removed_version > version:
        values.update(_ACTIVE)  # removed after the fork's version: active in the fork
    return values


def _copied_summary(row: Row[Any], new_session_id: str) -> dict[str, Any]:
    values = {k: v for k, v in row._mapping.items() if k != "id"}
    values.update(session_id=new_session_id, origin_id=row.origin_id or row.id)
    return values


def _summary_at(
    parent: Row[Any], comps: Sequence[Row[Any]], produced: Sequence[Row[Any]]
) -> tuple[str | None, int | None]:
    """The summary in force after the last copied compaction (as ``prune`` walks it)."""
    text = {row.compaction_number: row.content for row in produced}
    summary, tokens = parent.base_summary, parent.base_summary_tokens
    for comp in comps:
        if comp.summary_action in ("replaced", "trimmed"):
            summary, tokens = text[comp.number], comp.summary_tokens
        elif comp.summary_action == "removed":
            summary, tokens = None, None
    return summary, tokens


def _user_turns(comps: Sequence[Row[Any]], rows: Sequence[Row[Any]]) -> int:
    """User messages that count toward ``summarize_every`` at the fork's version: those after
    the snapshot of the last compaction that reset the count (a pop does not)."""
    resets = [comp.snapshot_version for comp in comps if comp.trigger != "pop"]
    since = resets[-1] if resets else 0
    user = MemoryKind.USER_MESSAGE.value
    return sum(1 for row in rows if row.kind == user and row.added_version > since)


# -- forks of a session, and a passage shared by several -----------------------------------


def descendants(conn: Connection, session_id: str) -> list[str]:
    """Every fork of the session, and their forks, nearest first (a read)."""
    found: list[str] = []
    frontier = [session_id]
    while frontier:
        children = (
            conn.execute(
                select(sessions.c.id)
                .where(sessions.c.parent_id.in_(frontier))
                .order_by(sessions.c.id)
            )
            .scalars()
            .all()
        )
        children = [child for child in children if child not in found and child != session_id]
        found += children
        frontier = children
    return found


async def forks_of(db: Database, session_id: str) -> list[str]:
    """:func:`descendants` in one read transaction.

    Raises:
        SessionNotFoundError: no such session.
    """

    def read(conn: Connection) -> list[str]:
        if fetch_session_row(conn, session_id) is None:
            raise SessionNotFoundError(session_id)
        return descendants(conn, session_id)

    return await db.run_read(read)


def unique_hits(conn: Connection, hits: Sequence[SearchHit]) -> list[SearchHit]:
    """``hits`` (best first) without later copies of a passage already listed: an item or a
    summary and its copies in forks share one origin."""
    if len({hit.session_id for hit in hits if hit.session_id is not None}) < 2:
        return list(hits)  # one session holds no two copies of one passage
    item_ids = [hit.item.id for hit in hits if hit.item is not None]
    item_origin: dict[str, str] = {}
    if item_ids:
        query = select(items.c.id, items.c.origin_id).where(items.c.id.in_(item_ids))
        item_origin = {row.id: row.origin_id or row.id for row in conn.execute(query)}
    keys = [(hit.session_id, hit.compaction) for hit in hits if hit.source == "summary"]
    summary_origin: dict[tuple[Any, Any], int] = {}
    if keys:
        query = select(
            summaries.c.session_id,
            summaries.c.compaction_number,
            summaries.c.id,
            summaries.c.origin_id,
        ).where(tuple_(summaries.c.session_id, summaries.c.compaction_number).in_(keys))
        summary_origin = {
            (row.session_id, row.compaction_number): row.origin_id or row.id
            for row in conn.execute(query)
        }
    seen: set[tuple[str, Any]] = set()
    unique: list[SearchHit] = []
    for hit in hits:
        if hit.item is not None:
            key: tuple[str, Any] = ("item", item_origin.get(hit.item.id, hit.item.id))
        elif hit.source == "summary":
            key = ("summary", summary_origin.get((hit.session_id, hit.compaction), id(hit)))
        else:
            key = ("other", id(hit))
        if key not in seen:
            seen.add(key)
            unique.append(hit)
    return unique
