"""SQLAlchemy Core statements on a stdlib ``sqlite3`` connection, each compiled once.

The SQLite writer (:mod:`memstore.db.sqlite_writer`) runs the step generators of
:mod:`memstore.db.steps` on plain ``sqlite3`` connections. This module turns their Core
statements into SQL and parameter tuples as SQLAlchemy's types would (bind processors
included; UTC datetimes as text, :func:`sqlite_timestamp`), once per statement and process,
and runs them: one statement (:func:`execute`), or a whole write's (:func:`run_job`).
"""

from __future__ import annotations

import operator
import sqlite3
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

from sqlalchemy.dialects import sqlite as sqlite_dialect
from sqlalchemy.types import TypeEngine

from memstore.db.steps import Params, Statement, StepResult, StepsFactory, T
from memstore.db.tables import UTCDateTime

_DIALECT = sqlite_dialect.dialect(paramstyle="qmark")


class Compiled:
    """A statement compiled once: SQL, parameter order, literal defaults, type processors.

    Turning a parameter dict into the driver's tuple runs on every write, so it is done in C
    where it can be: one dict merge and an ``itemgetter``, then only the binds that have a
    type processor.

    A statement may have one expanding bind (``column.in_(bindparam(name, expanding=True))``,
    a list of values, with no type processor): :meth:`bound` renders its SQL for the list's
    length, as SQLAlchemy would, and caches it per length. The cache holds one string per
    length ever bound, so callers bound the length (a compaction sends ids in chunks of
    ``MARK_CHUNK``); the first rendering of a length costs about 1.6 ms for 500 values here.

    Raises:
        ValueError: the statement has more than one expanding bind, or one with a processor.
    """

    def __init__(self, statement: Statement) -> None:
        compiled = statement.compile(dialect=_DIALECT)
        self.sql = compiled.string
        self.order = tuple(compiled.positiontup or ())
        binds = [compiled.binds[name] for name in self.order]
        # Literals such as the 1 of "version + 1": what SQLAlchemy sends when no value is given.
        self._defaults = {
            name: bind.value
            for name, bind in zip(self.order, binds, strict=True)
            if not bind.required
        }
        # SQLAlchemy's own bind processors (JSON, ...): the rows written here must read back
        # through SQLAlchemy exactly as if SQLAlchemy had written them. UTC datetimes are
        # converted in one call (sqlite_timestamp), the same the append's shortcut makes.
        self._processors = [
            (index, process)
            for index, bind in enumerate(binds)
            if (process := _processor(bind.type)) is not None
        ]
        self._get = operator.itemgetter(*self.order) if len(self.order) > 1 else None
        expanding = [index for index, bind in enumerate(binds) if bind.expanding]
        if len(expanding) > 1:
            raise ValueError(f"more than one expanding bind: {self.sql}")
        if any(index in expanding for index, _ in self._processors):
            raise ValueError(f"an expanding bind with a type processor: {self.sql}")
        self._expand_at = expanding[0] if expanding else None
        self._compiled = compiled
        self._sql_by_length: dict[int, str] = {}

    @property
    def expanding(self) -> bool:
        """Whether the statement has an expanding bind (its SQL is rendered per length)."""
        return self._expand_at is not None

    @property
    def processed(self) -> tuple[str, ...]:
        """The parameters a type processor converts (the rest go to the driver as they are)."""
        return tuple(self.order[index] for index, _ in self._processors)

    def values(self, params: dict[str, Any]) -> tuple[Any, ...]:
        """The driver's parameter tuple for ``params`` (processed as SQLAlchemy would)."""
        merged = {**self._defaults, **params} if self._defaults else params
        try:
            if self._get is not None:
                row: tuple[Any, ...] = self._get(merged)
            else:
                row = tuple(merged[name] for name in self.order)
        except KeyError as missing:  # as SQLAlchemy would: a missing value is a bug, never NULL
            raise KeyError(f"no value for bind parameter {missing.args[0]!r}") from None
        if not self._processors:
            return row
        out = list(row)
        for index, process in self._processors:
            if out[index] is not None:
                out[index] = process(out[index])
        return tuple(out)

    def bound(self, params: dict[str, Any]) -> tuple[str, tuple[Any, ...]]:
        """The SQL and the driver's parameter tuple for one execution with ``params``."""
        values = self.values(params)
        at = self._expand_at
        if at is None:
            return self.sql, values
        listed = tuple(values[at])
        sql = self._sql_by_length.get(len(listed))
        if sql is None:  # SQLAlchemy's own rendering, once per length
            sql = self._sql_by_length[len(listed)] = self._expanded_sql(params, at, len(listed))
        return sql, values[:at] + listed + values[at + 1 :]

    def _expanded_sql(self, params: dict[str, Any], at: int, length: int) -> str:
        """The SQL SQLAlchemy renders for the expanding bind (parameter ``at``) holding
        ``length`` values.

        Raises:
            RuntimeError: SQLAlchemy placed the expanded values elsewhere than the list's
                slot, where :meth:`bound` splices them (checked, so a change of SQLAlchemy
                cannot bind the values to the wrong placeholders).
        """
        state = self._compiled.construct_expanded_state({**self._defaults, **params})
        name = self.order[at]
        placed = list(state.positiontup or ())
        expected = [*self.order[:at], *(f"{name}_{n}" for n in range(1, length + 1))]
        if placed != [*expected, *self.order[at + 1 :]]:
            raise RuntimeError(f"SQLAlchemy expanded {name!r} unlike Compiled.bound")
        return state.statement


def sqlite_timestamp(value: datetime) -> str:
    """The text a ``UTCDateTime`` column stores for ``value`` through this module.

    What ``UTCDateTime`` gives SQLite (naive UTC) as the stdlib driver's datetime adapter
    writes it (``isoformat(" ")``), in one call and without that adapter (deprecated from
    Python 3.12). :class:`Compiled` converts with it, and so does the append's shortcut,
    which binds its parameters itself (:meth:`memstore.db.append.Append.run_sqlite`).

    Raises:
        ValueError: ``value`` is naive (as ``UTCDateTime`` refuses it).
    """
    if value.tzinfo is None:
        raise ValueError("naive datetime given to a UTC column")
    return value.astimezone(UTC).replace(tzinfo=None).isoformat(" ")


def _processor(column_type: TypeEngine[Any]) -> Callable[[Any], Any] | None:
    if isinstance(column_type, UTCDateTime):
        return sqlite_timestamp
    return column_type.bind_processor(_DIALECT)


#: Compiled statements, shared by every writer of the process (statements are constants).
_COMPILED: dict[int, Compiled] = {}


def compile_once(statement: Statement) -> Compiled:
    """``statement`` compiled for the stdlib driver (once per process: statements are module
    constants, so ``id()`` is a stable key)."""
    found = _COMPILED.get(id(statement))
    if found is None:
        found = _COMPILED[id(statement)] = Compiled(statement)
    return found


def execute(conn: sqlite3.Connection, statement: Statement, params: Params) -> StepResult:
    """Run ``statement`` with ``params`` (a dict, or a list of dicts for ``executemany``)."""
    compiled = compile_once(statement)
    if isinstance(params, list):
        if compiled.expanding:  # its SQL depends on each row's list: one execution each
            raise ValueError(f"executemany of a statement with an expanding bind: {compiled.sql}")
        cursor = conn.executemany(compiled.sql, [compiled.values(p) for p in params])
        return StepResult([], max(cursor.rowcount, 0))
    cursor = conn.execute(*compiled.bound(params))
    if cursor.description is None:
        return StepResult([], max(cursor.rowcount, 0))
    names = [column[0] for column in cursor.description]
    fetched = cursor.fetchall()  # drain: a pending statement would block COMMIT
    return StepResult([dict(zip(names, row, strict=True)) for row in fetched], len(fetched))


def run_job(conn: sqlite3.Connection, factory: StepsFactory[T]) -> T:
    """Run one write's statements in the open transaction; return its outcome.

    A write may offer a shortcut for its common case, ``factory.run_sqlite(conn)``
    (:meth:`memstore.db.append.Append.run_sqlite`): its outcome, or ``None`` (nothing
    written) when the step generator must run instead.
    """
    shortcut = getattr(factory, "run_sqlite", None)
    if shortcut is not None:
        try:
            outcome: T | None = shortcut(conn)
        except StopIteration as error:  # as PEP 479 turns one inside the generator: a Future
            raise RuntimeError("a write raised StopIteration") from error  # refuses it
        if outcome is not None:
            return outcome
    steps = factory("sqlite")
    try:
        statement, params = next(steps)
        while True:
            statement, params = steps.send(execute(conn, statement, params))
    except StopIteration as done:
        result: T = done.value
        return result
