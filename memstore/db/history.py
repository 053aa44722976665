"""A session's whole recorded history, read in one transaction (replay, export, prune)."""

from __future__ import annotations

from functools import partial

from sqlalchemy import Connection, select

from memstore.core.records import SessionHistory
from memstore.db.engine import Database
from memstore.db.reads import (
    compaction_rows,
    fetch_session_row,
    read_items,
    report_from_record,
    row_to_info,
)
from memstore.db.tables import summaries
from memstore.errors import SessionNotFoundError


async def load_history(db: Database, session_id: str) -> SessionHistory:
    """Every item, compaction and summary of the session, as one consistent snapshot.

    Raises:
        SessionNotFoundError: no such session.
    """
    return await db.run_read(partial(_load_history, session_id=session_id))


def _load_history(conn: Connection, session_id: str) -> SessionHistory:
    row = fetch_session_row(conn, session_id)
    if row is None:
        raise SessionNotFoundError(session_id)
    all_items = read_items(conn, session_id, active_only=False)
    comp_rows = compaction_rows(conn, session_id)
    summary_rows = conn.execute(
        select(summaries.c.compaction_number, summaries.c.content).where(
            summaries.c.session_id == session_id
        )
    )
    produced = {number: content for number, content in summary_rows}
    removed: dict[int, dict[str, str]] = {}
    for item in all_items:
        if item.removed_by is not None and item.fate is not None:
            removed.setdefault(item.removed_by, {})[item.id] = item.fate.value
    return SessionHistory(
        info=row_to_info(row),
        summary=row.summary,
        items=tuple(all_items),
        reports=tuple(report_from_record(r._mapping, removed.get(r.number, {})) for r in comp_rows),
        summaries=produced,
        base_version=row.base_version,
        base_summary=row.base_summary,
        base_summary_tokens=row.base_summary_tokens,
    )
