"""Write transactions as step generators: the logic once, a driver per backend.

A write (an append, a lease, a compaction commit) is written as a generator that yields
``(statement, parameters)`` and receives each statement's :class:`StepResult`; it returns its
outcome, or raises to abort (nothing it did is kept). Two drivers run such generators:

* :func:`run_steps` on SQLAlchemy's async engine, one transaction per generator (PostgreSQL,
  and any SQLite database the fast path does not own);
* :class:`memstore.db.sqlite_writer.SqliteWriter`, per SQLite file and process, which
  commits waiting generators together (group commit), each in its own SAVEPOINT: on the
  event loop's own thread when nothing else is writing, else on its thread.

Parameters are a dict (one execution; it may hold the list of values of one expanding ``IN``
bind) or a list of dicts (``executemany``). Statements must be module-level constants: the
SQLite driver compiles each one once and caches it. A factory may also offer the SQLite
writer a shortcut for its common case (``run_sqlite``; see
:func:`memstore.db.sqlite_statements.run_job`): appends do.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Generator
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy import Delete, Insert, Select, Update

from memstore.db.engine import Database

#: What a step generator may yield.
Statement = Update | Select[Any] | Insert | Delete
Params = dict[str, Any] | list[dict[str, Any]]
T = TypeVar("T")


@dataclass(frozen=True)
class StepResult:
    """Rows a statement returned (as dicts) and how many rows it changed."""

    rows: list[dict[str, Any]] = field(default_factory=list)
    rowcount: int = 0

    def first(self) -> dict[str, Any] | None:
        """The first row, or ``None``."""
        return self.rows[0] if self.rows else None


Steps = Generator[tuple[Statement, Params], StepResult, T]
#: Builds a generator for a dialect name ("sqlite", "postgresql").
StepsFactory = Callable[[str], Steps[T]]


def run_steps(db: Database, factory: StepsFactory[T], *, size: int = 0) -> Awaitable[T]:
    """Run a step generator in one write transaction (the SQLite fast path when it exists).

    ``size`` is about how many bytes the write stores: on SQLite a large write is never
    committed on the event loop's thread (:mod:`memstore.db.sqlite_writer`).

    Returns the awaitable of the write, to be awaited at once: the SQLite writer's own, with
    no coroutine of this function's around it (appends pass here on every turn).

    Raises:
        StorageError: at once, when called, if the store is closed.
        When awaited: whatever the generator raises (the transaction is rolled back), or a
        translated storage error.
    """
    writer = db.writer()
    if writer is not None:
        return writer.run(factory, size)
    return _run_on_engine(db, factory)


async def _run_on_engine(db: Database, factory: StepsFactory[T]) -> T:
    """:func:`run_steps` through SQLAlchemy's async engine: one statement at a time."""
    steps = factory(db.dialect)
    async with db.write() as conn:
        sent: StepResult | None = None
        while True:
            try:  # a StopIteration must not escape into the coroutine (PEP 479)
                statement, params = next(steps) if sent is None else steps.send(sent)
            except StopIteration as done:
                outcome: T = done.value
                return outcome
            result = await conn.execute(statement, params)
            rows = [dict(row) for row in result.mappings()] if result.returns_rows else []
            sent = StepResult(rows, max(result.rowcount, 0))
