"""Raw facts for ``memstore check``: a session's ledger, read in one transaction.

The invariants themselves are pure code in :mod:`memstore.invariants`; this module only
reads, so ``check`` runs on any database (even one written by another version) without
changing it.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from sqlalchemy import Connection, select, text

from memstore.db.engine import Database
from memstore.db.tables import compactions, items, sessions, summaries
from memstore.invariants import Ledger


async def session_ids(db: Database) -> list[str]:
    """Every session id, sorted."""
    query = select(sessions.c.id).order_by(sessions.c.id)
    return await db.run_read(lambda conn: list(conn.execute(query).scalars()))


async def load_ledger(db: Database, session_id: str) -> Ledger | None:
    """The session's rows (``None`` if it does not exist), one consistent snapshot."""
    return await db.run_read(partial(_load_ledger, session_id=session_id))


def _load_ledger(conn: Connection, session_id: str) -> Ledger | None:
    row = conn.execute(select(sessions).where(sessions.c.id == session_id)).first()
    if row is None:
        return None
    item_rows = conn.execute(
        select(
            items.c.id,
            items.c.seq,
            items.c.estimated_tokens,
            items.c.added_version,
            items.c.fate,
            items.c.removed_by,
            items.c.removed_version,
        )
        .where(items.c.session_id == session_id)
        .order_by(items.c.seq)
    ).all()
    compaction_rows = conn.execute(
        select(compactions)
        .where(compactions.c.session_id == session_id)
        .order_by(compactions.c.number)
    ).all()
    summary_rows = conn.execute(
        select(summaries)
        .where(summaries.c.session_id == session_id)
        .order_by(summaries.c.compaction_number)
    ).all()
    return Ledger(
        session=dict(row._mapping),
        items=[dict(r._mapping) for r in item_rows],
        compactions=[dict(r._mapping) for r in compaction_rows],
        summaries=[dict(r._mapping) for r in summary_rows],
    )


async def quick_check(db: Database) -> list[str]:
    """SQLite's ``PRAGMA quick_check`` findings (empty: ok; always empty on PostgreSQL).

    The b-tree structure and every page, without cross-checking indexes against tables:
    linear in the file's size, and several times faster than ``integrity_check``.
    """
    if db.dialect != "sqlite":
        return []

    def read(conn: Connection) -> list[str]:
        return [str(r[0]) for r in conn.execute(text("PRAGMA quick_check"))]

    return [line for line in await db.run_read(read) if line != "ok"]


async def integrity_problems(db: Database) -> list[str]:
    """SQLite's ``PRAGMA integrity_check`` and ``foreign_key_check`` findings (empty: ok)."""
    if db.dialect != "sqlite":
        return []

    def read(conn: Connection) -> tuple[list[str], list[Any]]:
        integrity = [r[0] for r in conn.execute(text("PRAGMA integrity_check"))]
        return integrity, list(conn.execute(text("PRAGMA foreign_key_check")))

    integrity, foreign = await db.run_read(read)
    problems = [f"integrity_check: {line}" for line in integrity if line != "ok"]
    problems += [f"foreign_key_check: {tuple(r)}" for r in foreign]
    return problems
