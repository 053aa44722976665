"""Forking a session, listing its forks, and the input counts an agent recorded for it.

:meth:`MemoryStore.fork <memstore.memory.store.MemoryStore.fork>` and its neighbours call
these; the copy itself is one write transaction in :mod:`memstore.db.fork`, which says why a
fork copies the history it starts with.
"""

from __future__ import annotations

from memstore.core.input_counts import CountFit, InputCount
from memstore.core.records import SessionInfo
from memstore.core.validation import validate_session_id
from memstore.db import Database, request_counts
from memstore.db import fork as forks


async def fork_ledger(
    db: Database, session_id: str, new_session_id: str, at: int | None = None
) -> SessionInfo:
    """Start ``new_session_id`` as ``session_id`` was at version ``at``; its header.

    The fork's model input starts equal to the parent's at that version (summary, active
    items, limits, estimator and everything else the session row records; no lease held),
    and it records its parent and that version. From then on the two never touch each
    other.

    Args:
        session_id: The session to fork.
        new_session_id: The fork's id; it must not exist yet.
        at: The parent's version to start from (``None``: the latest).

    Raises:
        ValidationError: a bad id (``session_id`` or ``new_session_id``), or ``at`` no version
            of the session (or one whose history was pruned); nothing written.
        SessionNotFoundError: ``session_id`` does not exist (``field`` ``session_id``).
        SessionExistsError: ``new_session_id`` exists already.
    """
    parent = validate_session_id(session_id)
    new = validate_session_id(new_session_id, "new_session_id")
    return await forks.fork(db, parent, new, at)


async def forks_of(db: Database, session_id: str) -> list[str]:
    """The session's forks and theirs, nearest first (what ``purge`` would refuse to leave).

    Raises:
        SessionNotFoundError: no such session.
    """
    return await forks.forks_of(db, validate_session_id(session_id))


async def recorded_counts(db: Database, session_id: str) -> list[InputCount]:
    """The input counts an agent recorded for the session, oldest first."""
    return await request_counts.read(db, validate_session_id(session_id))


async def count_fit(db: Database, session_id: str) -> CountFit | None:
    """How memstore's input counts compared with the model's (``None``: none recorded)."""
    return CountFit.of(await recorded_counts(db, session_id))
