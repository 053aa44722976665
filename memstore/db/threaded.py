"""SQLite reads (and the writes outside the writer thread) on a sync engine, off the event loop.

For a SQLite file, memstore drives SQLAlchemy's *sync* engine (the stdlib ``sqlite3`` driver)
from a few worker threads instead of the async engine over aiosqlite. The statements, type
processing and pool are SQLAlchemy's own either way; what changes, and why:

* start-up: ``sqlalchemy.ext.asyncio`` imports the whole ORM (measured: ``import
  sqlalchemy.ext.asyncio`` 300 ms against 225 ms for ``import sqlalchemy``), which every CLI
  command paid although memstore uses Core only. PostgreSQL, and SQLite databases that are not
  a file (``sqlite://`` in memory), still use the async engine, imported on first use;
* hand-offs: aiosqlite crosses to its thread once per DBAPI call (cursor, execute, each
  fetch); here a statement is one hand-off, and its rows come back fetched.

The event loop never runs SQLite: every call below goes to the worker threads, and a
connection is only ever used by one of them at a time (a transaction's calls are awaited one
after the other; when its caller is cancelled, the clean-up interrupts the statement still
running and waits for it to stop).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import os
import threading
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

from sqlalchemy.engine import Connection, Engine

T = TypeVar("T")

#: Worker threads per database: reads are short, and SQLite runs them side by side in WAL.
WORKERS = 4


def _execute(conn: Connection, statement: Any, parameters: Any) -> Any:
    """Run a statement and fetch its rows here, in the worker thread."""
    result = conn.execute(statement, parameters)
    if not result.returns_rows:
        return result  # closed already; ``rowcount`` stays readable
    rowcount = result.rowcount
    buffered = result.freeze()()  # every row fetched now: the caller's loop never touches SQLite
    buffered.rowcount = rowcount  # type: ignore[attr-defined]
    return buffered


class ThreadedConnection:
    """One transaction's connection, with the awaitable methods memstore's queries use."""

    def __init__(self, conn: Connection, engine: ThreadedEngine) -> None:
        self._conn = conn
        self._engine = engine
        self._running: concurrent.futures.Future[Any] | None = None

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        """Execute ``statement``; the result is fully fetched (``first()``, ``all()``, ...)."""
        return await self._call(_execute, self._conn, statement, parameters)

    async def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(sync_connection, *args)`` in a worker thread (Alembic's entry point)."""
        return await self._call(fn, self._conn, *args)

    async def _call(self, fn: Callable[..., T], *args: Any) -> T:
        future = self._engine.submit(partial(fn, *args))
        self._running = future
        return await asyncio.wrap_future(future)

    async def finish(self, commit: bool) -> None:
        """Commit or roll back, then return the connection, whatever happened to the caller."""
        running = self._running
        if running is not None and not running.done():
            # The caller was cancelled mid-statement, which still runs in its thread: stop it
            # (sqlite3's interrupt() is safe from any thread), and wait until it has stopped,
            # as the connection must never be used by two threads at once.
            self._conn.connection.dbapi_connection.interrupt()  # type: ignore[union-attr]
            with contextlib.suppress(Exception):  # "interrupted", or whatever it ended with
                await asyncio.wrap_future(running)

        def end() -> None:
            try:
                if commit:
                    self._conn.commit()
                else:
                    self._conn.rollback()
            finally:
                self._conn.close()

        await asyncio.wrap_future(self._engine.submit(end))


class ThreadedEngine:
    """A sync :class:`~sqlalchemy.engine.Engine` whose work runs in its own worker threads.

    Args:
        engine: The engine (the pool must never block a check-out: see :func:`make`).
    """

    def __init__(self, engine: Engine) -> None:
        self.sync_engine = engine
        self._lock = threading.Lock()
        self._pool: concurrent.futures.ThreadPoolExecutor | None = None
        self._pid = os.getpid()

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        """Run ``fn`` in a worker thread (a new pool after ``fork``: threads do not survive it)."""
        with self._lock:
            if self._pool is None or self._pid != os.getpid():
                self._pool = concurrent.futures.ThreadPoolExecutor(
                    WORKERS, thread_name_prefix="memstore-sqlite"
                )
                self._pid = os.getpid()
            return self._pool.submit(fn)

    async def run(self, fn: Callable[[Connection], T], **options: Any) -> T:
        """``fn(connection)`` inside one transaction, all of it in one worker-thread call."""

        def work() -> T:
            with self.sync_engine.connect().execution_options(**options) as conn, conn.begin():
                return fn(conn)

        return await asyncio.wrap_future(self.submit(work))

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

        conn = ThreadedConnection(await asyncio.wrap_future(self.submit(begin)), self)
        try:
            yield conn
        except BaseException:
            await asyncio.shield(conn.finish(commit=False))
            raise
        await asyncio.shield(conn.finish(commit=True))

    async def dispose(self) -> None:
        """Close every pooled connection, then stop the worker threads."""
        pool = self._pool
        if pool is None or self._pid != os.getpid():
            self.sync_engine.dispose(close=False)
            return
        await asyncio.wrap_future(pool.submit(self.sync_engine.dispose))
        self._pool = None
        pool.shutdown(wait=False)
