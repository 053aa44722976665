"""Raw facts for ``memstore check``: a session's ledger, read in one transaction.

The invariants themselves are pure code in :mod:`memstore.invariants`; this module only
reads, so ``check`` runs on any database (even one written by another version) without
changing it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select, text

from memstore.db.engine import Database
from memstore.db.tables import compactions, items, sessions, summaries


@dataclass(frozen=True)
class Ledger:
    """Everything the invariants look at for one session."""

    session: dict[str, Any]
    items: list[dict[str, Any]]
    compactions: list[dict[str, Any]]
    summaries: list[dict[str, Any]]


async def session_ids(db: Database) -> list[str]:
    """Every session id, sorted."""
    async with db.read() as conn:
        return list((await conn.execute(select(sessions.c.id).order_by(sessions.c.id))).scalars())


async def load_ledger(db: Database, session_id: str) -> Ledger | None:
    """The session's rows (``None`` if it does not exist), one consistent snapshot."""
    async with db.read() as conn:
        row = (await conn.execute(select(sessions).where(sessions.c.id == session_id))).first()
        if row is None:
            return None
        item_rows = await conn.execute(
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
        )
        compaction_rows = await conn.execute(
            select(compactions)
            .where(compactions.c.session_id == session_id)
            .order_by(compactions.c.number)
        )
        summary_rows = await conn.execute(
            select(summaries)
            .where(summaries.c.session_id == session_id)
            .order_by(summaries.c.compaction_number)
        )
        return Ledger(
            session=dict(row._mapping),
            items=[dict(r._mapping) for r in item_rows],
            compactions=[dict(r._mapping) for r in compaction_rows],
            summaries=[dict(r._mapping) for r in summary_rows],
        )


async def integrity_problems(db: Database) -> list[str]:
    """SQLite's ``PRAGMA integrity_check`` and ``foreign_key_check`` findings (empty: ok)."""
    if db.dialect != "sqlite":
        return []
    async with db.read() as conn:
        integrity = [r[0] for r in await conn.execute(text("PRAGMA integrity_check"))]
        foreign = list(await conn.execute(text("PRAGMA foreign_key_check")))
    problems = [f"integrity_check: {line}" for line in integrity if line != "ok"]
    problems += [f"foreign_key_check: {tuple(r)}" for r in foreign]
    return problems
