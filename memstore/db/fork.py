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

Everything else on the session row is the parent's (the estimator, the limits it stores now:
limits are not recorded per version, and columns added later, such as a scope), except what
describes the moment: the lease (free), the times. A fork's own appends store the limits of
the handle that makes them, as any session's do.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any

from sqlalchemy import (
    Connection,
    Row,
    String,
    and_,
    bindparam,
    case,
    cast,
    func,
    insert,
    literal_column,
    or_,
    select,
    tuple_,
)

from memstore.core.records import SessionInfo
from memstore.core.search_terms import SearchHit
from memstore.core.values import ITEM_OVERHEAD_TOKENS, MemoryKind
from memstore.db.connection import dialect_insert
from memstore.db.engine import Database
from memstore.db.reads import fetch_session_row, row_to_info, utcnow
from memstore.db.search_index import index_tail
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
    # FOR SHARE on PostgreSQL: a prune or compaction of the parent waits for the copy; a
    # purge that locked the parent first makes the copy wait, then find no parent.
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
    counts = _item_counts(conn, session_id, version, comps)
    summary, summary_tokens = _summary_at(parent, comps, produced)
    now = utcnow()
    values = dict(parent._mapping)
    values.update(_FRESH_LEASE)
    values.update(
        id=new_session_id,
        version=version,
        last_seq=parent.pruned_items + counts.copied,
        active_items=counts.active,
        active_tokens=counts.active_tokens,
        user_turns=counts.user_turns,
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
    if counts.copied:
        conn.execute(
            _copy_items(conn.dialect.name), {"p": session_id, "new": new_session_id, "v": version}
        )
    if produced:
        conn.execute(insert(summaries), [_copied_summary(row, new_session_id) for row in produced])
    index_tail(conn)  # the copies are searchable through the index at once
    info = fetch_session_row(conn, new_session_id)
    assert info is not None
    return row_to_info(info)


@dataclass(frozen=True)
class _ItemCounts:
    copied: int
    active: int
    active_tokens: int
    user_turns: int


def _item_counts(
    conn: Connection, session_id: str, version: int, comps: Sequence[Row[Any]]
) -> _ItemCounts:
    """What the fork's session row caches about its items, counted by the database.

    ``user_turns``: user messages that count toward ``summarize_every`` at the version, those
    after the snapshot of the last compaction that reset the count (a pop does not).
    """
    resets = [comp.snapshot_version for comp in comps if comp.trigger != "pop"]
    since = resets[-1] if resets else 0
    active = or_(items.c.removed_version.is_(None), items.c.removed_version > version)
    user = and_(items.c.kind == MemoryKind.USER_MESSAGE.value, items.c.added_version > since)
    row = conn.execute(
        select(
            func.count(),
            func.count().filter(active),
            func.coalesce(
                func.sum(items.c.estimated_tokens + ITEM_OVERHEAD_TOKENS).filter(active), 0
            ),
            func.count().filter(user),
        ).where(items.c.session_id == session_id, items.c.added_version <= version)
    ).one()
    return _ItemCounts(*(int(value) for value in row))


#: A random (version 4) UUID in SQLite's SQL: 122 random bits, the version and variant digits.
_SQLITE_UUID4 = (
    "lower(hex(randomblob(4)) || '-' || hex(randomblob(2)) || '-4' || "
    "substr(hex(randomblob(2)), 2) || '-' || substr('89ab', 1 + abs(random()) % 4, 1) || "
    "substr(hex(randomblob(2)), 2) || '-' || hex(randomblob(6)))"
)


def _new_uuid(dialect: str) -> Any:
    """A random UUID made by the database, one per copied row."""
    if dialect == "postgresql":
        return cast(func.gen_random_uuid(), String)
    return literal_column(_SQLITE_UUID4, String)


def _copy_items(dialect: str) -> Any:
    """``INSERT ... SELECT``: every item appended up to the version ``:v``, with the fate
    it had then (one removed later is active in the copy), in one statement: no row travels
    through Python, whatever the history's length."""
    removed_then = and_(
        items.c.removed_version.is_not(None), items.c.removed_version <= bindparam("v")
    )
    source: dict[str, Any] = {column.name: column for column in items.columns}
    source.update(
        id=_new_uuid(dialect),
        session_id=bindparam("new", type_=String),
        origin_id=func.coalesce(items.c.origin_id, items.c.id),
        fate=case((removed_then, items.c.fate), else_=None),
        removed_by=case((removed_then, items.c.removed_by), else_=None),
        removed_version=case((removed_then, items.c.removed_version), else_=None),
        version=case((removed_then, items.c.version), else_=1),
    )
    names = [column.name for column in items.columns]
    query = select(*(source[name] for name in names)).where(
        items.c.session_id == bindparam("p"), items.c.added_version <= bindparam("v")
    )
    return insert(items).from_select(names, query)


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


# -- forks of a session, and a passage shared by several -----------------------------------


def descendants(conn: Connection, session_id: str, *, lock: bool = False) -> list[str]:
    """Every fork of the session, and their forks, nearest first (a read).

    ``lock``, for a write that deletes them (the caller has locked ``session_id``): each fork's
    row is locked ``FOR UPDATE`` (PostgreSQL) before its own forks are listed, so a fork of it
    being taken right now is listed or finds its parent gone (:func:`fork_rows` holds the
    parent ``FOR SHARE``).
    """
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
        if lock and children:
            conn.execute(select(sessions.c.id).where(sessions.c.id.in_(children)).with_for_update())
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
