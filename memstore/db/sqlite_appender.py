"""SQLite's append fast path: one writer thread, one connection, group commit.

Through SQLAlchemy's async engine an append costs a dozen hand-offs between the event loop
and aiosqlite's thread (check-out, BEGIN, each statement, each fetch, COMMIT, the pool's
reset). Here an append is one hand-off: the caller puts a request on a queue and awaits a
future; a dedicated thread, owning one stdlib ``sqlite3`` connection, runs the statements of
:func:`memstore.db.append.append_steps` (the same logic the PostgreSQL path runs) and
resolves the future after COMMIT.

Group commit: when several appends are waiting (many coroutines, one process), the thread
takes them all and commits them in one ``BEGIN IMMEDIATE ... COMMIT``, each inside its own
SAVEPOINT, so one caller's bad key or estimator rolls back only that caller's statements.
Every caller is answered only after the COMMIT that made its item durable: the guarantee of
one transaction per append, at the cost of one fsync per batch instead of per item.
"""

from __future__ import annotations

import asyncio
import os
import queue
import sqlite3
import threading
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy.dialects import sqlite as sqlite_dialect

from memstore.config import Settings
from memstore.db.append import (
    TOTALS,
    AppendResult,
    Duplicate,
    NewItem,
    Row,
    Statement,
    append_steps,
)
from memstore.db.errors import translate_errors
from memstore.db.reads import session_total
from memstore.errors import MemstoreError
from memstore.model import MemoryLimits

#: Appends committed together at most: bounds one transaction's lock time and memory.
MAX_BATCH = 256
_DIALECT = sqlite_dialect.dialect(paramstyle="qmark")
#: How SQLAlchemy stores DATETIME on SQLite; reads through SQLAlchemy parse exactly this.
_SQLITE_DATETIME = "%Y-%m-%d %H:%M:%S.%f"


@dataclass
class _Request:
    session_id: str
    estimator: str
    limits: MemoryLimits
    new: NewItem
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[AppendResult]


def _deliver(future: asyncio.Future[AppendResult], outcome: AppendResult | BaseException) -> None:
    if future.done():  # the caller was cancelled; the append itself still stands
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def _bind_value(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.astimezone(UTC).replace(tzinfo=None).strftime(_SQLITE_DATETIME)
    return value


class SqliteAppender:
    """The writer thread of one SQLite file (one per process; see the module docstring)."""

    def __init__(self, path: Path, settings: Settings) -> None:
        self.pid = os.getpid()
        self._path = path
        self._settings = settings
        self._requests: queue.SimpleQueue[_Request | None] = queue.SimpleQueue()
        self._compiled: dict[int, tuple[str, Any, tuple[str, ...]]] = {}
        self._thread = threading.Thread(target=self._run, name="memstore-appender", daemon=True)
        self._thread.start()

    async def append(
        self, session_id: str, estimator: str, limits: MemoryLimits, new: NewItem
    ) -> AppendResult:
        """Queue one append and wait until the transaction holding it has committed."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[AppendResult] = loop.create_future()
        self._requests.put(_Request(session_id, estimator, limits, new, loop, future))
        return await future

    def close(self) -> None:
        """Finish queued appends, then stop the thread and close the connection."""
        if self._thread.is_alive() and self.pid == os.getpid():
            self._requests.put(None)
            self._thread.join()

    # -- the writer thread -----------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        conn = sqlite3.connect(
            self._path,
            timeout=self._settings.busy_timeout_s,
            isolation_level=None,  # we issue BEGIN IMMEDIATE / COMMIT ourselves
            check_same_thread=False,
        )
        conn.execute(f"PRAGMA busy_timeout = {int(self._settings.busy_timeout_s * 1000)}")
        conn.execute("PRAGMA foreign_keys = ON")
        conn.execute(f"PRAGMA synchronous = {self._settings.sqlite_synchronous}")
        return conn

    def _run(self) -> None:
        conn: sqlite3.Connection | None = None
        while True:
            request = self._requests.get()
            if request is None:
                break
            batch = [request]
            stop = False
            while len(batch) < MAX_BATCH:
                try:
                    waiting = self._requests.get_nowait()
                except queue.Empty:
                    break
                if waiting is None:
                    stop = True
                    break
                batch.append(waiting)
            try:
                if conn is None:
                    with translate_errors():
                        conn = self._connect()
                outcomes = self._commit(conn, batch)
            except BaseException as error:  # the whole batch failed: every caller hears it
                outcomes = [error] * len(batch)
            for req, outcome in zip(batch, outcomes, strict=True):
                req.loop.call_soon_threadsafe(_deliver, req.future, outcome)
            if stop:
                break
        if conn is not None:
            conn.close()

    def _commit(
        self, conn: sqlite3.Connection, batch: list[_Request]
    ) -> list[AppendResult | BaseException]:
        with translate_errors():
            conn.execute("BEGIN IMMEDIATE")
            try:
                outcomes = [self._one(conn, req) for req in batch]
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return outcomes

    def _one(self, conn: sqlite3.Connection, req: _Request) -> AppendResult | BaseException:
        conn.execute("SAVEPOINT append")
        steps = append_steps("sqlite", req.session_id, req.estimator, req.limits, req.new)
        try:
            statement, params = next(steps)
            while True:
                row = self._execute(conn, statement, params)
                statement, params = steps.send(row)
        except StopIteration as done:
            conn.execute("RELEASE append")
            return done.value  # type: ignore[no-any-return]
        except Duplicate as duplicate:
            conn.execute("ROLLBACK TO append")
            conn.execute("RELEASE append")
            totals = self._execute(conn, TOTALS, {"sid": req.session_id})
            assert totals is not None
            total = session_total(totals["active_tokens"], totals["summary_tokens"])
            return AppendResult(duplicate.item, total, 0, duplicate=True)
        except MemstoreError as error:  # this caller's mistake: undo only its statements
            conn.execute("ROLLBACK TO append")
            conn.execute("RELEASE append")
            return error

    def _execute(
        self, conn: sqlite3.Connection, statement: Statement, params: dict[str, Any]
    ) -> Row:
        # Statements are module constants, so id() is a stable key (compiled once each).
        cached = self._compiled.get(id(statement))
        if cached is None:
            compiled = statement.compile(dialect=_DIALECT)
            cached = (compiled.string, compiled, tuple(compiled.positiontup or ()))
            self._compiled[id(statement)] = cached
        sql, compiled, order = cached
        values = compiled.construct_params(params)
        cursor = conn.execute(sql, tuple(_bind_value(values[name]) for name in order))
        if cursor.description is None:
            return None
        names = [column[0] for column in cursor.description]
        rows = cursor.fetchall()  # drain: a pending statement would block COMMIT
        return dict(zip(names, rows[0], strict=True)) if rows else None


def appender_for(path: Path, settings: Settings, current: SqliteAppender | None) -> SqliteAppender:
    """``current`` if it belongs to this process, else a new appender (e.g. after fork)."""
    if current is not None and current.pid == os.getpid():
        return current
    return SqliteAppender(path, settings)
