"""Long-term memory in SQL: the only module that touches ``ltm_entries`` and ``ltm_history``.

Every write is one short write transaction (SQLite: ``BEGIN IMMEDIATE``) that reads the row,
checks the caller's expected version, writes the row and appends one history record; a stale
compare-and-set raises :class:`~memstore.errors.VersionConflictError` inside the transaction,
so it rolls back and writes nothing. On PostgreSQL the row is locked with ``FOR UPDATE`` and
the write re-checks the version (a row count of 0 means another writer won; the transaction is
retried, which then reports the conflict or applies an unconditional write on top).

Values arrive validated (:mod:`memstore.core.ltm_entries`); records leave as plain dicts whose keys
are the fields of :class:`~memstore.core.ltm_entries.LongTermEntry` and
:class:`~memstore.core.ltm_entries.LongTermChange`.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import Any

from sqlalchemy import ColumnElement, Connection, and_, delete, func, insert, or_, select, update

from memstore.db.connection import dialect_insert
from memstore.db.engine import Database
from memstore.db.tables import ltm_entries, ltm_history
from memstore.errors import StorageError, VersionConflictError

#: Attempts of one write when concurrent writers keep changing the row under it. SQLite
#: serializes writers (BEGIN IMMEDIATE), so there a write never needs a second attempt.
WRITE_ATTEMPTS = 5

ENTRY_COLUMNS = (
    ltm_entries.c.scope,
    ltm_entries.c.key,
    ltm_entries.c.value,
    ltm_entries.c.version,
    ltm_entries.c.created_at,
    ltm_entries.c.updated_at,
    ltm_entries.c.expires_at,
    ltm_entries.c.source,
)
HISTORY_COLUMNS = (
    ltm_history.c.scope,
    ltm_history.c.key,
    ltm_history.c.version,
    ltm_history.c.value,
    ltm_history.c.action,
    ltm_history.c.changed_at,
    ltm_history.c.source,
)


class EntryRaced(Exception):
    """Another writer changed the row between our read and our write (PostgreSQL): the
    transaction must roll back and be retried."""


def _pk(scope: str, key: str) -> ColumnElement[bool]:
    return and_(ltm_entries.c.scope == scope, ltm_entries.c.key == key)


def _live(now: datetime) -> ColumnElement[bool]:
    return or_(ltm_entries.c.expires_at.is_(None), ltm_entries.c.expires_at > now)


def is_live(expires_at: datetime | None, now: datetime) -> bool:
    """Whether an entry with this expiry is visible at ``now``."""
    return expires_at is None or expires_at > now


def _locked_row(conn: Connection, scope: str, key: str) -> Any:
    stmt = select(*ENTRY_COLUMNS).where(_pk(scope, key)).with_for_update()
    return conn.execute(stmt).first()


def _record(
    conn: Connection,
    scope: str,
    key: str,
    version: int,
    value: Any,
    action: str,
    changed_at: datetime,
    source: Any = None,
) -> None:
    conn.execute(
        insert(ltm_history).values(
            scope=scope,
            key=key,
            version=version,
            value=value,
            action=action,
            changed_at=changed_at,
            source=source,
        )
    )


def _last_recorded_version(conn: Connection, scope: str, key: str) -> int:
    """The newest version the history holds for (scope, key); 0 if it was never written."""
    stmt = select(func.max(ltm_history.c.version)).where(
        ltm_history.c.scope == scope, ltm_history.c.key == key
    )
    return int(conn.execute(stmt).scalar_one_or_none() or 0)


def _check_expected(scope: str, key: str, expected: int | None, actual: int) -> None:
    if expected is not None and expected != actual:
        raise VersionConflictError(scope, key, expected=expected, actual=actual)


async def _retrying(db: Database, write: Any) -> Any:
    for _ in range(WRITE_ATTEMPTS):
        try:
            return await db.run_write(write)
        except EntryRaced:
            continue
    raise StorageError(f"a long-term write lost {WRITE_ATTEMPTS} races in a row; try again")


def write_entry(
    conn: Connection,
    scope: str,
    key: str,
    value: Any,
    *,
    expected_version: int | None,
    expires_at: datetime | None,
    now: datetime,
    source: Any = None,
) -> dict[str, Any]:
    """The statements of one set, inside the caller's write transaction; return the record.

    The new version is the previous one + 1; an entry re-created after a delete or an expiry
    continues from the version its history ended at. An expired row being replaced first gets
    its ``expire`` record. ``source`` is the version's provenance (``None``: a person or the
    application wrote it).

    Raises:
        VersionConflictError: ``expected_version`` is not the live version (0: no live entry).
        EntryRaced: another writer changed the row meanwhile (roll back and retry).
    """
    row = _locked_row(conn, scope, key)
    live = row is not None and is_live(row.expires_at, now)
    _check_expected(scope, key, expected_version, row.version if live else 0)
    if row is None:
        last = _last_recorded_version(conn, scope, key)
    elif not live:
        last = row.version + 1
        _record(conn, scope, key, last, None, "expire", row.expires_at)
    else:
        last = row.version
    record = {
        "scope": scope,
        "key": key,
        "value": value,
        "version": last + 1,
        "created_at": row.created_at if live else now,
        "updated_at": now,
        "expires_at": expires_at,
        "source": source,
    }
    if row is None:
        stmt: Any = (
            dialect_insert(conn.dialect.name)(ltm_entries).values(**record).on_conflict_do_nothing()
        )
    else:
        stmt = (
            update(ltm_entries)
            .where(_pk(scope, key), ltm_entries.c.version == row.version)
            .values({k: v for k, v in record.items() if k not in ("scope", "key")})
        )
    if conn.execute(stmt).rowcount != 1:
        raise EntryRaced
    _record(conn, scope, key, record["version"], value, "set", now, source)
    return record


async def set_entry(
    db: Database,
    scope: str,
    key: str,
    value: Any,
    *,
    expected_version: int | None,
    expires_at: datetime | None,
    now: datetime,
) -> dict[str, Any]:
    """Create or replace an entry as a person or the application (no ``source``), in one
    write transaction (:func:`write_entry`); return the stored record.

    Raises:
        VersionConflictError: ``expected_version`` is not the live version (0: no live entry).
    """

    def write(conn: Connection) -> dict[str, Any]:
        return write_entry(
            conn, scope, key, value, expected_version=expected_version, expires_at=expires_at,
            now=now,
        )  # fmt: skip

    result: dict[str, Any] = await _retrying(db, write)
    return result


async def delete_entry(
    db: Database, scope: str, key: str, *, expected_version: int | None, now: datetime
) -> bool:
    """Delete the live entry (one write transaction), recording a ``delete`` at version + 1.

    Returns:
        ``True`` if a live entry was deleted, ``False`` if there was none (nothing written).

    Raises:
        VersionConflictError: ``expected_version`` is not the live version (0: no live entry).
    """

    def write(conn: Connection) -> bool:
        row = _locked_row(conn, scope, key)
        live = row is not None and is_live(row.expires_at, now)
        _check_expected(scope, key, expected_version, row.version if live else 0)
        if not live:
            return False
        stmt = delete(ltm_entries).where(_pk(scope, key), ltm_entries.c.version == row.version)
        if conn.execute(stmt).rowcount != 1:
            raise EntryRaced
        _record(conn, scope, key, row.version + 1, None, "delete", now)
        return True

    deleted: bool = await _retrying(db, write)
    return deleted


#: History rows updated per statement: under SQLite's oldest limit of 999 bound parameters.
_ERASE_CHUNK = 500


def forget_derived(
    conn: Connection, derived: Callable[[Mapping[str, Any]], bool], now: datetime
) -> int:
    """Delete what consolidation derived from deleted history, in the caller's transaction.

    Every entry whose current version's ``source`` ``derived`` claims is deleted (a live one
    recorded as a ``delete``, an expired one as its ``expire``), and every history version
    whose source it claims loses its value and source: the record stays, with the action
    ``purged``, so the versions keep their numbers (a stale compare-and-set still never
    matches) and the history says a version was erased, not what it held.

    Returns:
        How many entries were deleted (live or expired).
    """
    rows = conn.execute(
        select(*ENTRY_COLUMNS).where(ltm_entries.c.source.is_not(None)).with_for_update()
    ).all()
    deleted = 0
    for row in rows:
        if not (isinstance(row.source, Mapping) and derived(row.source)):
            continue
        conn.execute(delete(ltm_entries).where(_pk(row.scope, row.key)))
        deleted += 1
        if is_live(row.expires_at, now):
            _record(conn, row.scope, row.key, row.version + 1, None, "delete", now)
        else:
            _record(conn, row.scope, row.key, row.version + 1, None, "expire", row.expires_at)
    versions = conn.execute(
        select(ltm_history.c.id, ltm_history.c.source).where(ltm_history.c.source.is_not(None))
    ).all()
    erased = [r.id for r in versions if isinstance(r.source, Mapping) and derived(r.source)]
    for start in range(0, len(erased), _ERASE_CHUNK):
        conn.execute(
            update(ltm_history)
            .where(ltm_history.c.id.in_(erased[start : start + _ERASE_CHUNK]))
            .values(value=None, source=None, action="purged")
        )
    return deleted


async def get_entry(db: Database, scope: str, key: str, now: datetime) -> dict[str, Any] | None:
    """The live entry's record, or ``None`` (never written, deleted or expired)."""
    stmt = select(*ENTRY_COLUMNS).where(_pk(scope, key), _live(now))
    row = await db.run_read(lambda conn: conn.execute(stmt).first())
    return None if row is None else dict(row._mapping)


async def list_entries(
    db: Database, *, scope: str | None, prefix: str | None, now: datetime
) -> list[dict[str, Any]]:
    """Live entries, by scope then key; optionally one scope, optionally keys with a prefix.

    The order is code-point order on every backend (sorted here, not by the database's
    collation, which on PostgreSQL may be locale-dependent).
    """
    stmt = select(*ENTRY_COLUMNS).where(_live(now))
    if scope is not None:
        stmt = stmt.where(ltm_entries.c.scope == scope)
    if prefix:
        # substr, not LIKE: LIKE is case-insensitive on SQLite and treats % and _ as wildcards.
        stmt = stmt.where(func.substr(ltm_entries.c.key, 1, len(prefix)) == prefix)
    records = await db.run_read(lambda conn: [dict(row._mapping) for row in conn.execute(stmt)])
    return sorted(records, key=lambda record: (record["scope"], record["key"]))


async def live_scopes(db: Database, now: datetime) -> list[tuple[str, int]]:
    """Each scope that holds live entries, with how many, in code-point order."""
    stmt = select(ltm_entries.c.scope, func.count()).where(_live(now)).group_by(ltm_entries.c.scope)
    rows = await db.run_read(lambda conn: [(row[0], int(row[1])) for row in conn.execute(stmt)])
    return sorted(rows)


async def entries_in_scopes(
    db: Database, scopes: Sequence[str], now: datetime, *, limit: int
) -> tuple[list[dict[str, Any]], int]:
    """Live entries of ``scopes`` in priority order, at most ``limit``, and how many exist.

    Priority: the order of ``scopes``, then the most recently updated first (then by key).
    One read transaction, so the count and the entries agree.
    """

    def read(conn: Connection) -> tuple[list[dict[str, Any]], int]:
        found: list[dict[str, Any]] = []
        total = conn.execute(
            select(func.count())
            .select_from(ltm_entries)
            .where(ltm_entries.c.scope.in_(list(scopes)), _live(now))
        ).scalar_one()
        for scope in scopes:
            if len(found) >= limit:
                break
            stmt = (
                select(*ENTRY_COLUMNS)
                .where(ltm_entries.c.scope == scope, _live(now))
                .order_by(ltm_entries.c.updated_at.desc(), ltm_entries.c.key)
                .limit(limit - len(found))
            )
            found += [dict(row._mapping) for row in conn.execute(stmt)]
        return found, int(total)

    return await db.run_read(read)


async def history(db: Database, scope: str, key: str) -> list[dict[str, Any]]:
    """Every recorded change of (scope, key), oldest (lowest version) first."""
    stmt = (
        select(*HISTORY_COLUMNS)
        .where(ltm_history.c.scope == scope, ltm_history.c.key == key)
        .order_by(ltm_history.c.version)
    )
    return await db.run_read(lambda conn: [dict(row._mapping) for row in conn.execute(stmt)])


async def prune_expired(db: Database, now: datetime, *, batch: int) -> int:
    """Delete entries expired at ``now``, recording an ``expire`` for each; return how many.

    Works in batches of ``batch`` rows, one short write transaction each, so pruning a large
    backlog never holds the write lock for long.
    """

    def prune_batch(conn: Connection) -> tuple[int, int]:
        rows = conn.execute(
            select(
                ltm_entries.c.scope,
                ltm_entries.c.key,
                ltm_entries.c.version,
                ltm_entries.c.expires_at,
            )
            .where(ltm_entries.c.expires_at <= now)
            .order_by(ltm_entries.c.expires_at)
            .limit(batch)
            .with_for_update(skip_locked=True)
        ).all()
        pruned = 0
        for row in rows:
            gone = conn.execute(
                delete(ltm_entries).where(
                    _pk(row.scope, row.key), ltm_entries.c.version == row.version
                )
            )
            if gone.rowcount == 1:  # else: replaced meanwhile (PostgreSQL), not expired
                _record(conn, row.scope, row.key, row.version + 1, None, "expire", row.expires_at)
                pruned += 1
        return len(rows), pruned

    total = 0
    while True:
        seen, pruned = await db.run_write(prune_batch)
        total += pruned
        if seen < batch or pruned == 0:
            return total
