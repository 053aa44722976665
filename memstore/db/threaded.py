"""SQLite reads (and the writes outside the writer thread) on a sync engine, off the event loop.

For a SQLite file, memstore drives SQLAlchemy's *sync* engine (the stdlib ``sqlite3`` driver)
from worker threads instead of the async engine over aiosqlite. The statements, type
processing and pool are SQLAlchemy's own either way; what changes, and why:

* start-up: ``sqlalchemy.ext.asyncio`` imports the whole ORM (measured: ``import
  sqlalchemy.ext.asyncio`` 300 ms against 225 ms for ``import sqlalchemy``), which every CLI
  command paid although memstore uses Core only. PostgreSQL, and SQLite databases that are not
  a file (``sqlite://`` in memory), still use the async engine, imported on first use;
* hand-offs: aiosqlite crosses to its thread once per DBAPI call (cursor, execute, each
  fetch); here a whole read is one hand-off (:meth:`ThreadedEngine.run`), and a statement of
  a longer transaction is one, its rows fetched in the thread.

The event loop never runs SQLite. Each transaction has a worker thread of its own for as long
as it lasts, as aiosqlite gives each connection one: a transaction waiting for the write lock
(``BEGIN IMMEDIATE`` under the busy timeout) holds only its own thread, never the one the
lock holder needs next, and its calls run in order on one thread (a connection is never used
by two threads at once). Clean-up is queued to that thread before anything is awaited, so it
runs even when the caller is cancelled or its event loop is torn down. Workers are daemon
threads kept in a small free list; they work during interpreter shutdown too (``atexit``).
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import os
import queue
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

from sqlalchemy.engine import Connection, Engine

T = TypeVar("T")

#: Idle workers kept for the next transaction (more are started when more run at once).
IDLE_WORKERS = 4
_Call = tuple[Callable[[], Any], "concurrent.futures.Future[Any]"]


class _Worker:
    """One daemon thread running the calls submitted to it, in order."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="memstore-sqlite", daemon=True).start()

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._calls.put((fn, future))
        return future

    def stop(self) -> None:
        self._calls.put(None)

    def _loop(self) -> None:
        while (call := self._calls.get()) is not None:
            fn, future = call
            if not future.set_running_or_notify_cancel():  # cancelled before it started
                continue
            try:
                future.set_result(fn())
            except BaseException as error:  # the caller's to handle, in its own thread
                future.set_exception(error)


def _execute(conn: Connection, statement: Any, parameters: Any) -> Any:
    """Run a statement and fetch its rows here, in the worker thread.

    Returns SQLAlchemy's result for a statement without rows; otherwise a buffered result
    (``first()``, ``all()``, ``scalar()``, ``mappings()``, iteration) that also carries
    ``returns_rows`` and ``rowcount`` as a ``CursorResult`` would.
    """
    result = conn.execute(statement, parameters)
    if not result.returns_rows:
        return result  # closed already; ``rowcount`` stays readable
    buffered = result.freeze()()  # every row fetched now: the caller's loop never touches SQLite
    buffered.returns_rows = True  # type: ignore[attr-defined]
    # Read after the fetch: SQLite counts the rows of an UPDATE ... RETURNING as they are read.
    buffered.rowcount = result.rowcount  # type: ignore[attr-defined]
    return buffered


class ThreadedConnection:
    """One transaction's connection, with the awaitable methods memstore's queries use."""

    def __init__(self, conn: Connection, worker: _Worker) -> None:
        self._conn = conn
        self._worker = worker
        self._running: concurrent.futures.Future[Any] | None = None

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        """Execute ``statement``; the result is fully fetched (``first()``, ``all()``, ...)."""
        return await self._call(partial(_execute, self._conn, statement, parameters))

    async def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(sync_connection, *args)`` in the worker thread (Alembic's entry point)."""
        return await self._call(partial(fn, self._conn, *args))

    async def _call(self, fn: Callable[[], T]) -> T:
        self._running = future = self._worker.submit(fn)
        return await asyncio.wrap_future(future)

    def end(self, commit: bool) -> concurrent.futures.Future[None]:
        """Queue the commit (or rollback) and the connection's return; a future of it.

        Queued at once, behind any statement still running, so it happens even if no one
        awaits it. A statement left running by a cancelled caller is interrupted first
        (sqlite3's ``interrupt()`` is safe from any thread).
        """
        running = self._running
        if running is not None and not running.done():
            self._conn.connection.dbapi_connection.interrupt()  # type: ignore[union-attr]

        def end() -> None:
            try:
                if commit:
                    self._conn.commit()
                else:
                    self._conn.rollback()
            finally:
                self._conn.close()

        return self._worker.submit(end)


class ThreadedEngine:
    """A sync :class:`~sqlalchemy.engine.Engine` whose work runs in worker threads.

    Args:
        engine: The engine (its pool must never make a check-out wait: a waiting worker
            could hold up the transaction that would free a connection).
    """

    def __init__(self, engine: Engine) -> None:
        self.sync_engine = engine
        self._idle: collections.deque[_Worker] = collections.deque()  # append/pop: atomic
        self._pid = os.getpid()

    def _take(self) -> _Worker:
        if self._pid != os.getpid():  # threads do not survive fork: the parent's are gone
            self._idle, self._pid = collections.deque(), os.getpid()
        try:
            return self._idle.pop()
        except IndexError:
            return _Worker()

    def _give(self, worker: _Worker) -> None:
        if self._pid == os.getpid() and len(self._idle) < IDLE_WORKERS:
            self._idle.append(worker)
        else:
            worker.stop()

    def _submit(self, worker: _Worker, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """``fn`` on ``worker``, which goes back to the free list once it has run."""
        future = worker.submit(fn)
        future.add_done_callback(lambda _: self._give(worker))
        return future

    async def run(self, fn: Callable[[Connection], T], **options: Any) -> T:
        """``fn(connection)`` inside one transaction, all of it one call in a worker thread.

        A cancelled caller stops waiting; the call itself finishes and cleans up after itself.
        """

        def work() -> T:
            with self.sync_engine.connect().execution_options(**options) as conn, conn.begin():
                return fn(conn)

        return await asyncio.wrap_future(self._submit(self._take(), work))

    @asynccontextmanager
    async def transaction(self, **options: Any) -> AsyncIterator[ThreadedConnection]:
        """A connection inside one transaction (``options``: execution options, before BEGIN)."""

        def begin() -> Connection:
            conn = self.sync_engine.connect().execution_options(**options)
            try:
                conn.begin()
            except BaseException:
                conn.close()
                raise
            return conn

        worker = self._take()
        began = worker.submit(begin)
        try:
            conn = ThreadedConnection(await asyncio.wrap_future(began), worker)
        except BaseException:
            # Cancelled (or failed) while BEGIN ran or waited for the lock: once it is done,
            # roll back and return what it opened, then free the worker.
            began.add_done_callback(lambda _: self._abandon(began, worker))
            raise
        try:
            yield conn
        except BaseException:
            ended = conn.end(commit=False)
            ended.add_done_callback(lambda _: self._give(worker))
            with contextlib.suppress(Exception):  # the caller's error is the one to raise
                await asyncio.shield(asyncio.wrap_future(ended))
            raise
        ended = conn.end(commit=True)
        ended.add_done_callback(lambda _: self._give(worker))
        await asyncio.shield(asyncio.wrap_future(ended))

    def _abandon(self, began: concurrent.futures.Future[Connection], worker: _Worker) -> None:
        if began.cancelled() or began.exception() is not None:
            self._give(worker)
            return

        def end() -> None:
            with contextlib.closing(began.result()) as conn:
                conn.rollback()

        self._submit(worker, end)

    async def dispose(self) -> None:
        """Close every pooled connection, and the idle workers."""
        await asyncio.wrap_future(self._submit(self._take(), self.sync_engine.dispose))
        while self._idle:
            with contextlib.suppress(IndexError):
                self._idle.pop().stop()
