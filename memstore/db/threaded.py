"""SQLite reads (and the writes outside the SQLite writer) on a sync engine, off the event loop.

For a SQLite file, memstore drives SQLAlchemy's *sync* engine (the stdlib ``sqlite3`` driver)
from worker threads instead of the async engine over aiosqlite. The statements, type
processing and pool are SQLAlchemy's own either way; what changes, and why:

* start-up: ``sqlalchemy.ext.asyncio`` imports the whole ORM (measured: ``import
  sqlalchemy.ext.asyncio`` 300 ms against 225 ms for ``import sqlalchemy``), which every CLI
  command paid although memstore uses Core only. PostgreSQL, and SQLite databases that are not
  a file (``sqlite://`` in memory), still use the async engine, imported on first use;
* hand-offs: aiosqlite crosses to its thread once per DBAPI call (cursor, execute, each
  fetch); here a whole read is one hand-off (:meth:`ThreadedEngine.run`), and a statement of
  a write transaction is one, its rows fetched in the thread.

The event loop never runs SQLite. Reads share a few threads: in WAL mode they never wait for
a lock. A write transaction has a thread of its own for as long as it lasts, as aiosqlite
gives each connection one: waiting for the write lock (``BEGIN IMMEDIATE`` under the busy
timeout) it holds only that thread, never the one the lock holder needs next, and its calls
run in order there (a connection is never used by two threads at once). SQLite has one
writer at a time, so at most :data:`WRITERS` write transactions per event loop are started
at once; the others wait on the loop, holding no thread. Clean-up is queued to the thread
before anything is awaited, so it runs even when the caller is cancelled or its loop torn
down, and a cancelled caller's statement is interrupted. Workers are daemon threads (they
also serve ``atexit`` handlers), stopped by ``dispose()`` or when the engine is collected.
"""

from __future__ import annotations

import asyncio
import collections
import concurrent.futures
import contextlib
import os
import queue
import threading
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from functools import partial
from typing import Any, TypeVar

from sqlalchemy.engine import Connection, Engine

T = TypeVar("T")

#: Threads serving reads, shared by all of them.
READERS = 4
#: Write transactions started at once per event loop (more would only queue inside SQLite).
WRITERS = 4
_Call = tuple[Callable[[], Any], "concurrent.futures.Future[Any]"]


class _Workers:
    """Daemon threads running the calls submitted to them; with one thread, in order."""

    def __init__(self, threads: int = 1) -> None:
        self._calls: queue.SimpleQueue[_Call | None] = queue.SimpleQueue()
        self._threads = threads
        for _ in range(threads):
            threading.Thread(target=self._loop, name="memstore-sqlite", daemon=True).start()

    def submit(self, fn: Callable[[], T]) -> concurrent.futures.Future[T]:
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        self._calls.put((fn, future))
        return future

    def stop(self) -> None:
        """Let the threads end once the calls queued so far have run."""
        for _ in range(self._threads):
            self._calls.put(None)

    def _loop(self) -> None:
        while (call := self._calls.get()) is not None:
            self._run(*call)
            # Keep nothing of a finished call while idle: its future's callbacks refer to the
            # engine, which must stay collectable (its finalizer stops these threads).
            del call

    @staticmethod
    def _run(fn: Callable[[], Any], future: concurrent.futures.Future[Any]) -> None:
        if not future.set_running_or_notify_cancel():  # cancelled before it started
            return
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


class _Interruptible:
    """The sqlite3 connection a call is using, to interrupt it, safely, from another thread.

    ``interrupt()`` acts only while the call runs: once the call is done the connection goes
    back to the pool, where interrupting it could stop someone else's statement.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._raw: Any = None

    @contextlib.contextmanager
    def running(self, conn: Connection) -> Any:
        with self._lock:
            self._raw = conn.connection.dbapi_connection
        try:
            yield
        finally:
            with self._lock:
                self._raw = None

    def interrupt(self) -> None:
        with self._lock:
            if self._raw is not None:
                self._raw.interrupt()


class ThreadedConnection:
    """One write transaction's connection, with the awaitable methods its queries use."""

    def __init__(self, conn: Connection, worker: _Workers) -> None:
        self._conn = conn
        self._worker = worker
        self._current = _Interruptible()

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        """Execute ``statement``; the result is fully fetched (``first()``, ``all()``, ...)."""
        return await self._call(partial(_execute, self._conn, statement, parameters))

    async def run_sync(self, fn: Callable[..., T], *args: Any) -> T:
        """``fn(sync_connection, *args)`` in the worker thread (Alembic's entry point)."""
        return await self._call(partial(fn, self._conn, *args))

    async def _call(self, fn: Callable[[], T]) -> T:
        def call() -> T:
            with self._current.running(self._conn):
                return fn()

        return await asyncio.wrap_future(self._worker.submit(call))

    def end(self, commit: bool) -> concurrent.futures.Future[None]:
        """Queue the commit (or rollback) and the connection's return; a future of it.

        Queued at once, behind any statement still running, so it happens even if no one
        awaits it; a statement left running by a cancelled caller is interrupted first.
        """
        self._current.interrupt()

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
        self._pid = os.getpid()
        self._readers: list[_Workers] = []  # at most one; a list so the finalizer can empty it
        self._idle: collections.deque[_Workers] = collections.deque()  # append/pop: atomic
        self._gates: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, asyncio.Semaphore]
        self._gates = weakref.WeakKeyDictionary()
        self._closed = False
        # Stop the threads of a store that is never closed once it is collected.
        weakref.finalize(self, _stop_all, self._idle, self._readers)

    def _check_process(self) -> None:
        if self._pid != os.getpid():  # threads do not survive fork: the parent's are gone
            self._idle.clear()
            self._readers.clear()
            self._pid = os.getpid()

    def _reader_threads(self) -> _Workers:
        self._check_process()
        if not self._readers:
            self._readers.append(_Workers(READERS))
        return self._readers[0]

    def _take(self) -> _Workers:
        self._check_process()
        try:
            return self._idle.pop()
        except IndexError:
            return _Workers()

    def _give(self, worker: _Workers) -> None:
        if not self._closed and self._pid == os.getpid() and len(self._idle) < WRITERS:
            self._idle.append(worker)
        else:
            worker.stop()

    async def run(self, fn: Callable[[Connection], T], **options: Any) -> T:
        """``fn(connection)`` inside one read transaction, all of it one call in a thread.

        A cancelled caller interrupts the statement running for it.
        """
        current = _Interruptible()

        def work() -> T:
            with (
                self.sync_engine.connect().execution_options(**options) as conn,
                conn.begin(),
                current.running(conn),
            ):
                return fn(conn)

        future = self._reader_threads().submit(work)
        try:
            return await asyncio.wrap_future(future)
        except asyncio.CancelledError:
            current.interrupt()
            raise

    def _gate(self) -> asyncio.Semaphore:
        loop = asyncio.get_running_loop()
        gate = self._gates.get(loop)
        if gate is None:
            gate = self._gates[loop] = asyncio.Semaphore(WRITERS)
        return gate

    @asynccontextmanager
    async def transaction(self, **options: Any) -> AsyncIterator[ThreadedConnection]:
        """A write transaction's connection (``options``: execution options, before BEGIN)."""
        async with self._gate(), self._pinned(options) as conn:
            yield conn

    @asynccontextmanager
    async def _pinned(self, options: dict[str, Any]) -> AsyncIterator[ThreadedConnection]:
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

    def _abandon(self, began: concurrent.futures.Future[Connection], worker: _Workers) -> None:
        if began.cancelled() or began.exception() is not None:
            self._give(worker)
            return

        def end() -> None:
            with contextlib.closing(began.result()) as conn:
                conn.rollback()

        worker.submit(end).add_done_callback(lambda _: self._give(worker))

    async def dispose(self) -> None:
        """Close every pooled connection and stop the threads; workers still busy stop after."""
        self._closed = True
        await asyncio.wrap_future(self._reader_threads().submit(self.sync_engine.dispose))
        _stop_all(self._idle, self._readers)


def _stop_all(idle: collections.deque[_Workers], readers: list[_Workers]) -> None:
    while idle:
        with contextlib.suppress(IndexError):
            idle.pop().stop()
    while readers:
        readers.pop().stop()
