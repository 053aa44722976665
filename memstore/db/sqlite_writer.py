"""SQLite's write fast path: one writer thread, one connection, group commit.

Through SQLAlchemy's async engine a write costs a dozen hand-offs between the event loop and
aiosqlite's thread (check-out, BEGIN, each statement, each fetch, COMMIT, the pool's reset).
Here a write is one hand-off: the caller queues a step generator (:mod:`memstore.db.steps`)
and awaits a future; a dedicated thread, owning one stdlib ``sqlite3`` connection, runs it and
resolves the future after COMMIT.

Group commit: when several writes are waiting (many coroutines, one process), the thread
takes them all and commits them in one ``BEGIN IMMEDIATE ... COMMIT``, each inside its own
SAVEPOINT, so one caller's failure (a bad key, a lost compare-and-swap, a full disk) rolls
back only that caller's statements. Every caller is answered only after the COMMIT that made
its write durable: one fsync per batch instead of one per write, with the same guarantee.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import operator
import os
import queue
import sqlite3
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from sqlalchemy.dialects import sqlite as sqlite_dialect

from memstore.config import Settings
from memstore.db.errors import classify, translate_errors
from memstore.db.steps import Params, Statement, StepResult, StepsFactory, T
from memstore.errors import StorageError

#: Writes committed together at most: bounds one transaction's lock time and memory.
MAX_BATCH = 256
_DIALECT = sqlite_dialect.dialect(paramstyle="qmark")


@dataclass
class _Job:
    factory: StepsFactory[Any]
    loop: asyncio.AbstractEventLoop
    future: asyncio.Future[Any]


def _answer(job: _Job, outcome: Any, failed: bool) -> None:
    """Hand the outcome to the caller's loop; a loop closed meanwhile has no one to tell.

    The thread must survive that (the write itself stands, committed or rolled back): a
    writer that died here would leave every later caller waiting forever.
    """
    with contextlib.suppress(RuntimeError):  # "Event loop is closed"
        job.loop.call_soon_threadsafe(_deliver, job.future, outcome, failed)


def _deliver(future: asyncio.Future[Any], outcome: Any, failed: bool) -> None:
    if future.done():  # the caller was cancelled; what committed stays committed
        return
    if failed:
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


class _Compiled:
    """A statement compiled once: SQL, parameter order, literal defaults, type processors.

    Turning a parameter dict into the driver's tuple runs once per row (a compaction marks
    every removed item with one ``executemany``), so it is done in C where it can be: one
    dict merge and an ``itemgetter``, then only the binds that have a type processor.
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
        # SQLAlchemy's own bind processors (UTC datetimes, JSON, ...): the rows written here
        # must read back through SQLAlchemy exactly as if SQLAlchemy had written them.
        self._processors = [
            (index, process)
            for index, bind in enumerate(binds)
            if (process := bind.type.bind_processor(_DIALECT)) is not None
        ]
        self._get = operator.itemgetter(*self.order) if len(self.order) > 1 else None

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


#: Compiled statements, shared by every writer of the process (statements are constants).
_COMPILED: dict[int, _Compiled] = {}


class SqliteWriter:
    """The writer thread of one SQLite file in one process (see the module docstring)."""

    def __init__(self, path: Path, settings: Settings) -> None:
        self.pid = os.getpid()
        self._path = path
        self._settings = settings
        self._jobs: queue.SimpleQueue[_Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._stopped: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._loop, name="memstore-writer", daemon=True)
        self._thread.start()

    async def run(self, factory: StepsFactory[T]) -> T:
        """Queue a write and wait until the transaction holding it has committed.

        Raises:
            StorageError: the writer was closed (the store is closing or closed).
        """
        loop = asyncio.get_running_loop()
        future: asyncio.Future[T] = loop.create_future()
        with self._lock:  # no job may slip in behind the stop signal
            if self._closed:
                raise StorageError("the store is closed")
            self._jobs.put(_Job(factory, loop, future))
        return await future

    @property
    def usable(self) -> bool:
        """True while this process's writer thread runs and accepts work."""
        return not self._closed and self._thread.is_alive() and self.pid == os.getpid()

    def close(self) -> concurrent.futures.Future[None]:
        """Finish the writes queued so far, then stop the thread and close the connection.

        Returns a future that is done once the thread has stopped. (A future, not a join: the
        caller awaits it without another thread, which interpreter shutdown would refuse to
        start when a store is closed from an ``atexit`` handler.)
        """
        with self._lock:
            if not self._closed:
                self._closed = True
                self._jobs.put(None)
        if not self._thread.is_alive() or self.pid != os.getpid():
            done: concurrent.futures.Future[None] = concurrent.futures.Future()
            done.set_result(None)
            return done
        return self._stopped

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

    def _next_batch(self) -> tuple[list[_Job], bool]:
        job = self._jobs.get()
        if job is None:
            return [], True
        batch = [job]
        while len(batch) < MAX_BATCH:
            try:
                waiting = self._jobs.get_nowait()
            except queue.Empty:
                break
            if waiting is None:
                return batch, True
            batch.append(waiting)
        return batch, False

    def _loop(self) -> None:
        conn: sqlite3.Connection | None = None
        stop = False
        while not stop:
            batch, stop = self._next_batch()
            if not batch:
                break
            try:
                if conn is None:
                    with translate_errors():
                        conn = self._connect()
                outcomes = self._commit(conn, batch)
            except BaseException as error:  # BEGIN or COMMIT failed: every caller hears it
                outcomes = [(error, True)] * len(batch)
            for job, (outcome, failed) in zip(batch, outcomes, strict=True):
                _answer(job, outcome, failed)
        if conn is not None:
            conn.close()
        self._stopped.set_result(None)

    def _commit(self, conn: sqlite3.Connection, batch: list[_Job]) -> list[tuple[Any, bool]]:
        with translate_errors():
            conn.execute("BEGIN IMMEDIATE")
            try:
                alone = len(batch) == 1
                outcomes = [self._one(conn, job, alone) for job in batch]
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return outcomes

    def _one(self, conn: sqlite3.Connection, job: _Job, alone: bool) -> tuple[Any, bool]:
        # Alone in its transaction, a job needs no savepoint: a failure rolls back everything.
        if not alone:
            conn.execute("SAVEPOINT job")
        steps = job.factory("sqlite")
        try:
            statement, params = next(steps)
            while True:
                result = self._execute(conn, statement, params)
                statement, params = steps.send(result)
        except StopIteration as done:
            if not alone:
                conn.execute("RELEASE job")
            return done.value, False
        except BaseException as error:  # this caller's failure: undo only its statements
            if alone or not conn.in_transaction:
                # Alone: the transaction's rollback undoes it. Or SQLite rolled the whole
                # transaction back itself (it does on SQLITE_FULL, IOERR, NOMEM): the batch's
                # earlier writes are gone too, so every caller in it must hear the failure.
                raise
            conn.execute("ROLLBACK TO job")
            conn.execute("RELEASE job")
            if isinstance(error, sqlite3.Error):
                translated = classify(error)
                translated.__cause__ = error
                return translated, True
            return error, True

    def _execute(
        self, conn: sqlite3.Connection, statement: Statement, params: Params
    ) -> StepResult:
        # Statements are module constants, so id() is a stable key (compiled once each).
        compiled = _COMPILED.get(id(statement))
        if compiled is None:
            compiled = _COMPILED[id(statement)] = _Compiled(statement)
        if isinstance(params, list):
            cursor = conn.executemany(compiled.sql, [compiled.values(p) for p in params])
            return StepResult([], max(cursor.rowcount, 0))
        cursor = conn.execute(compiled.sql, compiled.values(params))
        if cursor.description is None:
            return StepResult([], max(cursor.rowcount, 0))
        names = [column[0] for column in cursor.description]
        fetched = cursor.fetchall()  # drain: a pending statement would block COMMIT
        return StepResult([dict(zip(names, row, strict=True)) for row in fetched], len(fetched))


def writer_for(path: Path, settings: Settings, current: SqliteWriter | None) -> SqliteWriter:
    """``current`` if it is usable here, else a new writer (after fork, or a dead thread)."""
    if current is not None and current.usable:
        return current
    return SqliteWriter(path, settings)
