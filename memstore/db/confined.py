"""A scoped session handle's view of the database: no transaction touches another scope's session.

A handle opened with ``scope="user:alice"`` belongs to that scope. A session records its scope
once, at its first append; a session recorded in another scope is not the handle's to read or
write, so every transaction the handle runs (a read or a write, of any kind: working memory,
the model input, a search, reports, consolidation, a compaction) first reads the session's
recorded scope and refuses with the same :class:`~memstore.errors.ValidationError` an append
would (``scope``: ``session 'x' belongs to 'user:bob', not 'user:alice'``). A session recorded
in no scope belongs to nobody and stays open to any handle, as it does for writes; one that
does not exist yet has nothing to refuse.

The check runs inside the transaction it guards: on PostgreSQL a read is one ``REPEATABLE
READ`` snapshot, so what it checked is what it reads; a write takes the session row's lock
when it changes it, and an append checks the scope again on the row it bumped
(:mod:`memstore.db.append`). On SQLite every write holds the write lock throughout. The price
is one primary-key lookup per transaction of a scoped handle; an unscoped handle has no view.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any, TypeVar

from sqlalchemy import Connection, select

from memstore.db.engine import Database
from memstore.db.tables import sessions
from memstore.errors import ValidationError

T = TypeVar("T")


def scope_refusal(session_id: str, recorded: str, scope: str) -> ValidationError:
    """The error for a handle of ``scope`` on a session recorded in another scope."""
    refused = f"session {session_id!r} belongs to {recorded!r}, not {scope!r}"
    return ValidationError("scope", refused)


def check_scope(conn: Connection, session_id: str, scope: str) -> None:
    """Refuse unless the session is of ``scope``, of none, or does not exist.

    Raises:
        ValidationError: naming ``scope``: the session belongs to another scope.
    """
    recorded = conn.execute(select(sessions.c.scope).where(sessions.c.id == session_id)).scalar()
    if recorded is not None and recorded != scope:
        raise scope_refusal(session_id, recorded, scope)


def _checked(conn: Connection, fn: Callable[[Connection], T], session_id: str, scope: str) -> T:
    check_scope(conn, session_id, scope)
    return fn(conn)


class ConfinedDatabase(Database):
    """``database`` as a handle of ``scope`` on ``session_id`` sees it (module docstring).

    A view: it runs every transaction on ``database`` (anything else it is asked, such as
    ``dialect``, is ``database``'s) and owns nothing, so closing it closes nothing.

    Args:
        database: The store's database.
        session_id: The handle's session.
        scope: The handle's scope.
    """

    def __init__(self, database: Database, session_id: str, scope: str) -> None:
        # Deliberately not Database.__init__: the view holds no engine, thread or state.
        self.database = database
        self.session_id = session_id
        self.scope = scope

    def __getattr__(self, name: str) -> Any:
        return getattr(self.database, name)

    async def run_read(self, fn: Callable[[Connection], T]) -> T:
        """``fn`` in one read transaction of ``database``, after the scope check."""
        return await self.database.run_read(self._guarded(fn))

    async def run_write(self, fn: Callable[[Connection], T]) -> T:
        """``fn`` in one write transaction of ``database``, after the scope check."""
        return await self.database.run_write(self._guarded(fn))

    def _guarded(self, fn: Callable[[Connection], T]) -> Callable[[Connection], T]:
        return partial(_checked, fn=fn, session_id=self.session_id, scope=self.scope)

    def release(self) -> None:
        """Nothing to release: the store owns the database."""

    async def close(self) -> None:
        """Nothing to close: the store closes the database."""

    async def remove_created_file(self) -> None:
        """Nothing to remove: the store decides about the file."""


def confine(database: Database, session_id: str, scope: str | None) -> Database:
    """The database a handle of ``scope`` uses: ``database`` itself when it has no scope."""
    return database if scope is None else ConfinedDatabase(database, session_id, scope)
