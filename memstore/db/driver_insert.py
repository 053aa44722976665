"""An insert run on SQLAlchemy's DB-API connection, for the writer's hottest statement.

An append's rows go in with one ``INSERT``, once per agent turn and once per ``add``. Through
SQLAlchemy Core each execution looks its compiled form up in the cache, processes every
parameter against it and sets up a result; for a turn's four rows that cost about 45 us, as
much again as SQLite's own work on the rows and their indexes (``benchmarks/agent_turn.py``
profiles; docs/performance.md). :class:`CompiledInsert` does that work once and runs the
statement with ``Connection.exec_driver_sql``, still inside SQLAlchemy's transaction, events
and error wrapping.

It is not a second bind layer: the SQL is what SQLAlchemy compiles for the insert, and each
value goes through the bind processor SQLAlchemy itself would apply for the column's type on
this dialect (``TypeEngine.dialect_impl(dialect).bind_processor(dialect)``), so a timestamp
is stored in the one text form Core writes (tests/db/test_driver_insert.py compares the
stored bytes of both paths). It serves SQLite, whose writer thread runs every append; on
PostgreSQL an append waits on the server's round trips, not on Core, and keeps Core
(:func:`compiled_insert` returns ``None``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Table, insert
from sqlalchemy.engine import Dialect

#: Compiled inserts kept: one per (table, columns, dialect) in use, a handful at most.
CACHED_INSERTS = 16


@dataclass(frozen=True)
class CompiledInsert:
    """One table's ``INSERT`` of fixed columns, compiled for one dialect.

    Attributes:
        sql: The statement as SQLAlchemy compiled it (positional parameters).
        columns: The columns in the order of the statement's parameters.
        processors: Each column's bind processor on this dialect (``None``: the value as is).
    """

    sql: str
    columns: tuple[str, ...]
    processors: tuple[Callable[[Any], Any] | None, ...]

    def row(self, values: Mapping[str, Any]) -> tuple[Any, ...]:
        """``values`` (by column) as the statement's parameters, processed as Core would."""
        return tuple(
            values[column] if process is None else process(values[column])
            for column, process in zip(self.columns, self.processors, strict=True)
        )

    def run(self, conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
        """Insert ``rows`` (each with every column of :attr:`columns`) with one statement."""
        conn.exec_driver_sql(self.sql, [self.row(values) for values in rows])


@functools.lru_cache(maxsize=CACHED_INSERTS)
def compiled_insert(
    table: Table, columns: tuple[str, ...], dialect: Dialect
) -> CompiledInsert | None:
    """``INSERT INTO table (columns)`` compiled for ``dialect``; ``None`` but on SQLite
    (Core runs the insert there).

    Raises:
        ValueError: the compiled statement needs a parameter that is not one of
            ``columns`` (a column default SQLAlchemy would compute).
    """
    if dialect.name != "sqlite":
        return None
    compiled = insert(table).compile(dialect=dialect, column_keys=list(columns))
    order = tuple(compiled.positiontup or ())
    if not set(order) <= set(columns):
        raise ValueError(f"{table.name}: the insert needs {sorted(set(order) - set(columns))}")
    processors = tuple(
        table.c[column].type.dialect_impl(dialect).bind_processor(dialect) for column in order
    )
    return CompiledInsert(str(compiled), order, processors)
