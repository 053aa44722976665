"""Input counts: per model request, memstore's count of the input and the model's.

An agent writes one row per request whose response reported ``usage.input_tokens``
(:mod:`memstore.core.input_counts` says what memstore counts); ``memstore show`` sums them
up. A row is an observation, not a change of working memory: it records the session
version it was made at and does not increment it. It goes with its session on ``purge``
(and by the foreign key's cascade); a fork starts without its parent's.
"""

from __future__ import annotations

from functools import partial

from sqlalchemy import Connection, insert, select

from memstore.core.input_counts import InputCount
from memstore.db.engine import Database
from memstore.db.reads import utcnow
from memstore.db.tables import input_counts, sessions


def _record(conn: Connection, session_id: str, count: InputCount) -> bool:
    version = conn.execute(select(sessions.c.version).where(sessions.c.id == session_id)).scalar()
    if version is None:  # purged meanwhile: nothing to attach the observation to
        return False
    conn.execute(
        insert(input_counts).values(
            session_id=session_id,
            session_version=version,
            model=count.model[:200],
            estimated_tokens=count.estimated_tokens,
            reported_tokens=count.reported_tokens,
            recorded_at=utcnow(),
        )
    )
    return True


async def record(db: Database, session_id: str, count: InputCount) -> bool:
    """Store one request's counts at the session's current version (its
    ``session_version`` is ignored); ``False`` if the session no longer exists."""
    return await db.run_write(partial(_record, session_id=session_id, count=count))


def _read(conn: Connection, session_id: str) -> list[InputCount]:
    rows = conn.execute(
        select(input_counts)
        .where(input_counts.c.session_id == session_id)
        .order_by(input_counts.c.id)
    )
    return [
        InputCount(row.session_version, row.model, row.estimated_tokens, row.reported_tokens)
        for row in rows
    ]


async def read(db: Database, session_id: str) -> list[InputCount]:
    """Every recorded request of the session, oldest first."""
    return await db.run_read(partial(_read, session_id=session_id))
