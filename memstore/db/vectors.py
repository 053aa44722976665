"""Stored vectors: which rows still need one, writing them, and how far each embedder is.

Vectors live beside what they embed (migration 0015): ``item_vectors`` per item and
embedder, ``entry_vectors`` per long-term entry and embedder (for the entry version it
embeds), each a float32 vector as bytes, or, when embedding failed, no vector and the error.
A row is *pending* for an embedder while it has no row of that embedder (never tried), or a
row without a vector (failed), or, for an entry, a vector of an older version of it.

Every write of vectors runs through the writer (:meth:`Database.run_write`) and bumps the
embedder's ``generation`` in the same transaction: an in-process cache compares it with the
one it loaded (:mod:`memstore.db.vector_search`). A name keeps its dimension count for good;
writing vectors of another size under it raises :class:`EmbedderMismatchError`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, and_, delete, exists, func, insert, not_, or_, select, update

from memstore.core.search_terms import SearchScope
from memstore.db.tables import embedders, entry_vectors, item_vectors, items, ltm_entries
from memstore.errors import EmbedderMismatchError

#: Characters of a recorded error kept: enough to see what failed, not a whole HTML page.
MAX_ERROR_CHARS = 500


@dataclass(frozen=True)
class PendingText:
    """A row that needs a vector: an item (``item_id``) or an entry (``scope``, ``key``,
    ``version``), and the text to embed."""

    text: str
    item_id: str | None = None
    scope: str | None = None
    key: str | None = None
    version: int | None = None


@dataclass(frozen=True)
class EmbeddingStatus:
    """How far one embedder is (``memstore check`` shows it).

    Attributes:
        embedder: Its name.
        dimensions: Its vectors' length (``None``: it stored none yet).
        embedded: Items and live entries with a current vector.
        pending: Items and live entries without one, never tried or failed.
        failed: Of those, the ones whose last try failed.
        last_error: One recorded error, if any.
    """

    embedder: str
    dimensions: int | None
    embedded: int
    pending: int
    failed: int
    last_error: str | None


def entry_text(key: str, value: Any) -> str:
    """What is embedded of an entry: ``key: value-as-JSON``, as its search hit shows it."""
    return f"{key}: {json.dumps(value, ensure_ascii=False)}"


def recorded_dimensions(conn: Connection, name: str) -> int | None:
    """The dimensions stored vectors of ``name`` have (``None``: none stored; a read)."""
    query = select(embedders.c.dimensions).where(embedders.c.name == name)
    found = conn.execute(query).scalar()
    return None if found is None else int(found)


def generation(conn: Connection, name: str) -> int:
    """How many vector writes ``name`` has had (0: none; a read)."""
    found = conn.execute(select(embedders.c.generation).where(embedders.c.name == name)).scalar()
    return 0 if found is None else int(found)


# -- what needs a vector ---------------------------------------------------------------------


def _item_has_vector(name: str, *, tried: bool) -> Any:
    """EXISTS a row of ``name`` for the item (``tried``: any row; else one with a vector)."""
    where = and_(item_vectors.c.item_id == items.c.id, item_vectors.c.embedder == name)
    if not tried:
        where = and_(where, item_vectors.c.vector.is_not(None))
    return exists().where(where)


def _entry_has_vector(name: str, *, tried: bool) -> Any:
    where = and_(
        entry_vectors.c.scope == ltm_entries.c.scope,
        entry_vectors.c.key == ltm_entries.c.key,
        entry_vectors.c.embedder == name,
        entry_vectors.c.entry_version == ltm_entries.c.version,
    )
    if not tried:
        where = and_(where, entry_vectors.c.vector.is_not(None))
    return exists().where(where)


def _live(now: datetime) -> Any:
    return or_(ltm_entries.c.expires_at.is_(None), ltm_entries.c.expires_at > now)


def _item_filter(scope: SearchScope) -> list[Any]:
    where: list[Any] = []
    if scope.sessions is not None:
        where.append(items.c.session_id.in_(scope.sessions))
    if not scope.include_active:
        where.append(items.c.fate.is_not(None))
    return where


def pending_items(
    conn: Connection,
    name: str,
    *,
    after: str = "",
    limit: int,
    scope: SearchScope | None = None,
    untried_only: bool = False,
) -> list[PendingText]:
    """Items without a vector of ``name``, by id after ``after`` (a read).

    Args:
        name: The embedder.
        after: Keyset: only ids greater than this (a run walks the pending rows once).
        limit: Rows at most.
        scope: Only the items a search of this scope covers.
        untried_only: Leave out the items whose embedding failed (a search does not retry
            them: the background run does).
    """
    query = (
        select(items.c.id, items.c.content)
        .where(items.c.id > after, not_(_item_has_vector(name, tried=untried_only)))
        .where(*([] if scope is None else _item_filter(scope)))
        .order_by(items.c.id)
        .limit(limit)
    )
    return [PendingText(row.content, item_id=row.id) for row in conn.execute(query)]


def pending_entries(
    conn: Connection,
    name: str,
    now: datetime,
    *,
    after: tuple[str, str] = ("", ""),
    limit: int,
    scopes: Sequence[str] | None = None,
    untried_only: bool = False,
) -> list[PendingText]:
    """Live entries without a vector of ``name`` for their version, by (scope, key) after
    ``after`` (a read; arguments as :func:`pending_items`')."""
    keyset = or_(
        ltm_entries.c.scope > after[0],
        and_(ltm_entries.c.scope == after[0], ltm_entries.c.key > after[1]),
    )
    query = (
        select(ltm_entries.c.scope, ltm_entries.c.key, ltm_entries.c.value, ltm_entries.c.version)
        .where(keyset, _live(now), not_(_entry_has_vector(name, tried=untried_only)))
        .order_by(ltm_entries.c.scope, ltm_entries.c.key)
        .limit(limit)
    )
    if scopes is not None:
        query = query.where(ltm_entries.c.scope.in_(scopes))
    return [
        PendingText(
            entry_text(row.key, row.value), scope=row.scope, key=row.key, version=row.version
        )
        for row in conn.execute(query)
    ]


def untried_in_scope(
    conn: Connection,
    name: str,
    scope: SearchScope,
    now: datetime,
    limit: int,
    known_rows: int = -1,
) -> tuple[list[PendingText], bool]:
    """What a search of ``scope`` would miss because it was never embedded (a read): at most
    ``limit`` rows, and whether more remain.

    A store whose items all have a row of ``name`` is found with counts, not a scan: every
    vector row belongs to an existing item (a foreign key), so as many rows as items means
    none is missing. ``known_rows``, the rows a cache counted at its last refresh, saves
    counting them again (a store that deleted embedded items and added as many new ones
    since then finds the new ones by their words until the background embeds them).
    """
    found: list[PendingText] = []
    if scope.sessions != () and _items_untried(conn, name, known_rows):
        found += pending_items(conn, name, limit=limit + 1, scope=scope, untried_only=True)
    if scope.scopes != () and len(found) <= limit:
        found += pending_entries(
            conn, name, now, limit=limit + 1 - len(found), scopes=scope.scopes, untried_only=True
        )
    return found[:limit], len(found) > limit


def _items_untried(conn: Connection, name: str, known_rows: int) -> bool:
    """Whether some item may have no row of ``name`` (then the scope's anti-join,
    :func:`pending_items`, answers which)."""
    total = int(conn.execute(select(func.count()).select_from(items)).scalar_one())
    if known_rows < 0:
        tried = select(func.count()).select_from(item_vectors)
        known_rows = int(conn.execute(tried.where(item_vectors.c.embedder == name)).scalar_one())
    return total > known_rows


# -- writing ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Embedded:
    """One row's outcome: its vector (float32 bytes) or the error that kept it from one."""

    row: PendingText
    vector: bytes | None
    error: str | None = None


def write_vectors(conn: Connection, name: str, dimensions: int, done: Sequence[Embedded]) -> int:
    """Store vectors (or failures) of ``name`` (a write); how many rows were stored.

    A row whose item was deleted since, or whose entry changed version, is skipped: its
    vector would describe something that is not there.

    Raises:
        EmbedderMismatchError: vectors of ``name`` with another dimension count are stored.
    """
    number = _next_generation(conn, name, dimensions)
    wanted = [d for d in done if d.row.item_id is not None]
    stored = 0
    if wanted:
        ids = [d.row.item_id for d in wanted]
        alive = set(conn.execute(select(items.c.id).where(items.c.id.in_(ids))).scalars())
        conn.execute(
            delete(item_vectors).where(
                item_vectors.c.embedder == name, item_vectors.c.item_id.in_(ids)
            )
        )
        rows = [
            {"item_id": d.row.item_id, "embedder": name, "generation": number,
             "vector": d.vector, "error": _error(d.error)}
            for d in wanted if d.row.item_id in alive
        ]  # fmt: skip
        if rows:
            conn.execute(insert(item_vectors), rows)
        stored += len(rows)
    for d in done:
        if d.row.item_id is None:
            stored += _write_entry_vector(conn, name, d)
    return stored


def _error(error: str | None) -> str | None:
    return None if error is None else error[:MAX_ERROR_CHARS]


def _write_entry_vector(conn: Connection, name: str, done: Embedded) -> int:
    row = done.row
    current = conn.execute(
        select(ltm_entries.c.version).where(
            ltm_entries.c.scope == row.scope, ltm_entries.c.key == row.key
        )
    ).scalar()
    if current != row.version:
        return 0
    where = and_(
        entry_vectors.c.scope == row.scope,
        entry_vectors.c.key == row.key,
        entry_vectors.c.embedder == name,
    )
    conn.execute(delete(entry_vectors).where(where))
    conn.execute(
        insert(entry_vectors).values(
            scope=row.scope, key=row.key, embedder=name, entry_version=row.version,
            vector=done.vector, error=_error(done.error),
        )
    )  # fmt: skip
    return 1


def _next_generation(conn: Connection, name: str, dimensions: int) -> int:
    """Bump ``name``'s generation (registering it on its first write). Starting with the
    UPDATE takes the row's lock on PostgreSQL: concurrent writers of one embedder queue."""
    bumped = conn.execute(
        update(embedders)
        .where(embedders.c.name == name)
        .values(generation=embedders.c.generation + 1)
    )
    if bumped.rowcount == 0:
        conn.execute(_insert_ignoring_conflict(conn, name, dimensions))
        if (
            conn.execute(
                update(embedders)
                .where(embedders.c.name == name)
                .values(generation=embedders.c.generation + 1)
            ).rowcount
            != 1
        ):  # pragma: no cover - the row was just ensured
            raise RuntimeError("embedder row vanished inside its own transaction")
    recorded = recorded_dimensions(conn, name)
    if recorded != dimensions:
        raise EmbedderMismatchError(name, expected=recorded or 0, actual=dimensions)
    return generation(conn, name)


def _insert_ignoring_conflict(conn: Connection, name: str, dimensions: int) -> Any:
    # Two processes may register one embedder at once (PostgreSQL): the loser's insert must
    # not abort its transaction.
    if conn.dialect.name == "postgresql":
        from sqlalchemy.dialects.postgresql import insert as upsert
    else:
        from sqlalchemy.dialects.sqlite import insert as upsert  # type: ignore[assignment]
    return (
        upsert(embedders)
        .values(name=name, dimensions=dimensions, generation=0)
        .on_conflict_do_nothing(index_elements=["name"])
    )


# -- how far an embedder is -----------------------------------------------------------------


def embedding_status(conn: Connection, name: str, now: datetime) -> EmbeddingStatus:
    """Items and live entries embedded, pending and failed for ``name`` (a read)."""

    def count(query: Any) -> int:
        return int(conn.execute(query).scalar_one())

    items_total = count(select(func.count()).select_from(items))
    items_done = count(
        select(func.count())
        .select_from(item_vectors)
        .where(item_vectors.c.embedder == name, item_vectors.c.vector.is_not(None))
    )
    items_failed = count(
        select(func.count())
        .select_from(item_vectors)
        .where(item_vectors.c.embedder == name, item_vectors.c.vector.is_(None))
    )
    live = select(func.count()).select_from(ltm_entries).where(_live(now))
    entries_total = count(live)
    entries_done = count(live.where(_entry_has_vector(name, tried=False)))
    entries_failed = count(
        live.where(_entry_has_vector(name, tried=True), not_(_entry_has_vector(name, tried=False)))
    )
    error = conn.execute(
        select(item_vectors.c.error)
        .where(item_vectors.c.embedder == name, item_vectors.c.error.is_not(None))
        .limit(1)
    ).scalar()
    if error is None:
        error = conn.execute(
            select(entry_vectors.c.error)
            .where(entry_vectors.c.embedder == name, entry_vectors.c.error.is_not(None))
            .limit(1)
        ).scalar()
    done = items_done + entries_done
    return EmbeddingStatus(
        embedder=name,
        dimensions=recorded_dimensions(conn, name),
        embedded=done,
        pending=items_total + entries_total - done,
        failed=items_failed + entries_failed,
        last_error=error,
    )


def embedder_names(conn: Connection) -> list[str]:
    """Every embedder that stored vectors here, by name (a read)."""
    return list(conn.execute(select(embedders.c.name).order_by(embedders.c.name)).scalars())
