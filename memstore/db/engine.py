"""Database: the two things memstore does with a database, on either backend.

``run_read(fn)`` and ``run_write(fn)`` take a plain sync function over a SQLAlchemy Core
``Connection`` and run it in one transaction; every read and every write of memstore is such
a function, written once for both backends:

* **SQLite** (a file): writes go to the writer thread (:mod:`memstore.db.writer`), which
  commits whatever is queued in one ``BEGIN IMMEDIATE`` transaction, each write in its own
  savepoint. Reads run in a few reader threads, each in a deferred ``BEGIN`` (WAL: readers
  never wait for the writer). An in-memory database lives in one connection, so the writer
  thread runs its reads too.
* **PostgreSQL**: SQLAlchemy's async engine runs the function through ``run_sync``; reads in
  ``REPEATABLE READ`` (one snapshot for the whole function), writes in the default
  ``READ COMMITTED`` with row locks.
* **A user's own** ``AsyncEngine`` (:func:`database_on`) is never disposed here. On PostgreSQL
  everything runs on it. On SQLite it names the file and serves the reads (aiosqlite, through
  ``run_sync``); the writes stay with the writer thread, over its own connection to that file.
  The reader threads stay memstore's own way to read: a read through aiosqlite crosses to its
  thread and back for every statement and fetch, and made ``build_model_input()`` 1.75x to
  1.88x slower (benchmarks/aiosqlite_reads.py; docs/architecture.md has the figures).

Either way the event loop only awaits: no disk or network I/O runs on it.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeVar

from sqlalchemy.engine import Connection, Engine

from memstore.config import Settings
from memstore.db.connection import (
    async_engine,
    enable_wal,
    is_sqlite,
    normalize_url,
    prepare_sqlite_file,
    read_only_uri,
    remove_new_database,
    sqlite_engine,
    sqlite_path,
)
from memstore.db.driver_errors import DriverError, connection_failure, translate_errors
from memstore.db.readers import ReaderThreads
from memstore.db.search_index import index_pending
from memstore.db.writer import DAMAGED, SqliteWriter
from memstore.errors import (
    CorruptDatabaseError,
    MemstoreError,
    ReadOnlyDatabaseError,
    StorageError,
    StorageFullError,
    ValidationError,
)

if TYPE_CHECKING:
    # Re-exported for the layers above, which name the type but never import SQLAlchemy.
    from sqlalchemy.ext.asyncio import AsyncEngine as AsyncEngine

T = TypeVar("T")

#: The database a store opens when given neither a URL nor an engine.
DEFAULT_DATABASE = "memstore.db"

#: Reader threads per SQLite database: reads never wait for each other or the writer in WAL
#: mode, and a few threads cover the reads an agent turn makes at once.
READERS = 4


class Database:
    """An engine plus memstore's two transaction kinds.

    Build it with :func:`open_database`.

    Args:
        engine: SQLAlchemy's sync engine of a SQLite database (the writer's), or an
            ``AsyncEngine``.
        settings: Timeouts and SQLite durability.
        in_memory: The SQLite database lives in its one connection (reads go to the writer).
        read_only: Refuse every write with :class:`ReadOnlyDatabaseError`.
        user_engine: A user's own ``AsyncEngine``: every read runs on it, and it is never
            disposed here (it is ``engine`` too, unless a SQLite writer has its own).
    """

    def __init__(
        self,
        engine: Engine | AsyncEngine,
        settings: Settings,
        *,
        in_memory: bool = False,
        read_only: bool = False,
        user_engine: AsyncEngine | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        self.sync_engine: Engine = engine if isinstance(engine, Engine) else engine.sync_engine
        self.dialect = self.sync_engine.dialect.name
        if self.dialect == "postgresql":
            from memstore.db.tables import add_postgresql_options

            add_postgresql_options()  # the models' PostgreSQL-only options (see there)
        self._in_memory = in_memory
        self.read_only = read_only
        #: The SQLite file this open created (``None``: it existed): if the open fails
        #: before the schema is in place, the file is removed again.
        self.created_path: Path | None = None
        self._user_engine = user_engine
        # Reads run on an async engine (a user's, or PostgreSQL's), else in reader threads.
        self._async_reads: AsyncEngine | None = user_engine
        if user_engine is None and not isinstance(engine, Engine):
            self._async_reads = engine
        self._writer: SqliteWriter | None = None
        self._readers: ReaderThreads | None = None
        self._pid = os.getpid()
        self._lock = threading.Lock()  # two threads must not each start a writer
        self._closed = False
        # Set once any read or write met a damaged file: every later write is refused (see
        # run_write), queued ones too (the writer thread checks it before each batch).
        self._damage = threading.Event()

    @property
    def url(self) -> str:
        """The URL, password hidden."""
        return self.sync_engine.url.render_as_string(hide_password=True)

    async def run_read(self, fn: Callable[[Connection], T]) -> T:
        """``fn(connection)`` in one read transaction (one consistent snapshot).

        Reads go on after the file was found damaged: they are how an operator inspects and
        saves what is left.
        """
        with self._noting_damage():
            if self._async_reads is not None:
                return await self._run_async(self._async_reads, fn, read=True)
            if self._in_memory:
                return await asyncio.wrap_future(self._sqlite_writer().submit(fn))
            future = self._reader_pool().submit(partial(self._read_in_thread, fn))
            return await asyncio.wrap_future(future)

    async def run_write(self, fn: Callable[[Connection], T]) -> T:
        """``fn(connection)`` in one write transaction, durable when this returns.

        ``fn`` raising rolls back everything it did (and only that); its error is raised here.

        Raises:
            CorruptDatabaseError: this store met a damaged file (in any read or write since it
                was opened): it writes nothing more until it is reopened, since writing into a
                damaged b-tree can spread the damage.
            StorageError: the store is closed, or the database failed (translated).
        """
        if self.read_only:
            raise ReadOnlyDatabaseError("this store was opened read-only: it writes nothing")
        if self._damage.is_set():
            raise CorruptDatabaseError(DAMAGED)
        with self._noting_damage():
            if not isinstance(self.engine, Engine):
                return await self._run_async(self.engine, fn, read=False)
            return await asyncio.wrap_future(self._sqlite_writer().submit(fn))

    @contextmanager
    def _noting_damage(self) -> Iterator[None]:
        try:
            yield
        except CorruptDatabaseError:
            self._damage.set()
            raise

    def _read_in_thread(self, fn: Callable[[Connection], T]) -> T:
        assert isinstance(self.engine, Engine)
        with translate_errors(), self.engine.connect() as conn, conn.begin():
            return fn(conn)

    async def _run_async(
        self, engine: AsyncEngine, fn: Callable[[Connection], T], *, read: bool
    ) -> T:
        if self._closed:
            raise StorageError("the store is closed")
        conn = engine.connect()
        try:
            await conn.start()
        except Exception as error:  # the server: unreachable, or refusing us
            if isinstance(error, MemstoreError):
                raise
            raise connection_failure(error, engine.sync_engine.url) from DriverError(error)
        sqlite = engine.dialect.name == "sqlite"
        with translate_errors():
            try:
                if read and not sqlite:
                    await conn.execution_options(isolation_level="REPEATABLE READ")
                async with conn.begin():
                    if read and sqlite:
                        # The driver opens no transaction for a SELECT, so each statement
                        # would read its own moment. A savepoint opens one (a deferred BEGIN,
                        # or nested in a transaction the engine's own recipe began): the whole
                        # read is one snapshot, and it ends with the COMMIT on leaving.
                        await conn.exec_driver_sql("SAVEPOINT memstore_read")
                    result: T = await conn.run_sync(fn)
                    return result
            finally:
                await conn.close()

    def _forked(self) -> bool:
        """Whether this is a child of the process that made the threads (they did not
        survive the fork, and a lock a parent thread held stays held here forever)."""
        if self._pid == os.getpid():
            return False
        self._pid = os.getpid()
        self._lock = threading.Lock()
        self._writer = None
        self._readers = None
        damaged, self._damage = self._damage.is_set(), threading.Event()  # fresh locks
        if damaged:
            self._damage.set()
        return True

    def _sqlite_writer(self) -> SqliteWriter:
        self._usable()
        if self._writer is None:
            with self._lock:  # two threads must not each start one
                if self._writer is None:
                    # The search index of items catches up between writes, never in them.
                    self._writer = SqliteWriter(
                        self.sync_engine, self._damage, maintenance=index_pending
                    )
        return self._writer

    def _reader_pool(self) -> ReaderThreads:
        self._usable()
        if self._readers is None:
            with self._lock:
                if self._readers is None:
                    self._readers = ReaderThreads(READERS)
        return self._readers

    def _usable(self) -> None:
        """Forget a parent's threads after a fork; refuse work once closed."""
        self._forked()
        if self._closed:
            raise StorageError("the store is closed")

    def release(self) -> None:
        """Stop this database's threads without waiting for them: for a store dropped
        unclosed, or closed where no event loop can await :meth:`close`.

        Writes queued so far still commit; later calls are refused. The threads close their
        connections as they end.
        """
        if self._closed:
            return
        self._closed = True
        if self._forked():
            return  # the threads are the parent's
        writer, self._writer = self._writer, None
        readers, self._readers = self._readers, None
        if writer is not None:
            writer.close()
        if readers is not None:
            readers.stop()

    async def remove_created_file(self) -> None:
        """After :meth:`close`: remove the SQLite file this open created (and its ``-wal`` and
        ``-shm``) unless it has a schema by now; a no-op for a file that existed."""
        if self.created_path is not None:
            await asyncio.to_thread(remove_new_database, self.created_path)

    async def close(self) -> None:
        """Finish queued writes, then close every connection; later calls are refused."""
        if self._closed:
            return
        self._closed = True
        if self._forked():
            return  # the threads and connections are the parent's: never touch them
        if not isinstance(self.engine, Engine):
            if self.engine is not self._user_engine:  # never dispose a user's engine
                with translate_errors():
                    await _uncancelled(self.engine.dispose())
            return
        if self._writer is not None:
            await asyncio.wrap_future(self._writer.close())
        readers, self._readers = self._readers, None
        engine = self.engine

        def shut_down() -> None:
            if readers is not None:
                readers.close()
            engine.dispose()

        # Closing connections touches the disk (a WAL checkpoint): not on the event loop.
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        try:
            threading.Thread(target=_run_into, args=(shut_down, done), daemon=True).start()
        except RuntimeError:  # interpreter shutdown (3.12+) starts no thread: nothing to block
            shut_down()
            return
        await asyncio.wrap_future(done)


async def _uncancelled(closing: Awaitable[None]) -> None:
    """Await ``closing`` to its end even if the caller is cancelled meanwhile (Ctrl-C), then
    let the cancellation go on: a connection left half-closed is a driver's traceback on
    the way out (asyncpg's close interrupted), not a quiet exit."""
    task = asyncio.ensure_future(closing)
    try:
        await asyncio.shield(task)
    except asyncio.CancelledError:
        await task
        raise


def _run_into(fn: Callable[[], None], done: concurrent.futures.Future[None]) -> None:
    # The awaiting close() may have been cancelled (Ctrl-C), cancelling ``done`` with it: the
    # work still runs to its end, and then there is no one to tell.
    try:
        fn()
    except BaseException as error:
        if done.set_running_or_notify_cancel():
            done.set_exception(error)
    else:
        if done.set_running_or_notify_cancel():
            done.set_result(None)


def open_database(
    url_or_path: str | os.PathLike[str] | None,
    settings: Settings,
    *,
    create: bool = True,
    read_only: bool = False,
    engine: AsyncEngine | None = None,
) -> Database:
    """Check the target (SQLite: header, permissions, WAL) and build a :class:`Database`.

    This touches the disk: async callers run it in a thread.

    Args:
        url_or_path: URL or SQLite file path (``None``: :data:`DEFAULT_DATABASE`, or
            ``engine``).
        settings: Store settings.
        create: Create a missing SQLite file; if ``False``, raise
            :class:`~memstore.errors.DatabaseMissingError` instead.
        read_only: Refuse every write; a SQLite file is opened read-only (nothing of it is
            written, not even its WAL), so a read-only copy can be inspected.
        engine: A user's own ``AsyncEngine`` instead of a URL (:func:`database_on`).

    Raises:
        ValidationError: (field ``engine``) both a URL and an engine.
    """
    if engine is not None:
        if url_or_path is not None:
            raise ValidationError("engine", "give a URL or path, or an engine, not both")
        return database_on(engine, settings, create=create, read_only=read_only)
    url = normalize_url(DEFAULT_DATABASE if url_or_path is None else url_or_path)
    if not is_sqlite(url):
        return Database(async_engine(url, settings), settings, read_only=read_only)
    path = sqlite_path(url)
    if path is None:
        return Database(sqlite_engine(None, settings), settings, in_memory=True)
    created = prepare_sqlite_file(path, create=create and not read_only)
    if read_only:
        reader = sqlite_engine(path, settings, uri=read_only_uri(path))
        return Database(reader, settings, read_only=True)
    try:
        enable_wal(path, settings.busy_timeout_s)
    except StorageFullError:
        if created:  # no room to finish it: leave nothing behind (module docstring)
            remove_new_database(path)
        raise
    database = Database(sqlite_engine(Path(path), settings), settings)
    database.created_path = path if created else None
    return database


def database_on(
    engine: AsyncEngine, settings: Settings, *, create: bool = True, read_only: bool = False
) -> Database:
    """A :class:`Database` on a user's own ``AsyncEngine``, which it never disposes.

    On PostgreSQL every read and write runs on that engine: its pool, its server settings
    (memstore sets no ``lock_timeout`` there). On SQLite the engine names the file and its
    connections serve the reads; writes go to memstore's writer thread over a connection of
    its own, opened with memstore's recipe (WAL, ``BEGIN IMMEDIATE``, ``synchronous``, busy
    timeout, foreign keys): group commit needs the one thread that owns the write connection.
    A read-only store has no writer. This touches the disk: async callers run it in a thread.

    Raises:
        ValidationError: (field ``engine``) not an ``AsyncEngine``, neither SQLite nor
            PostgreSQL, or an SQLite database that is not a file named by its path.
    """
    from sqlalchemy.ext.asyncio import AsyncEngine

    if not isinstance(engine, AsyncEngine):
        raise ValidationError(
            "engine",
            "must be a SQLAlchemy AsyncEngine (sqlalchemy.ext.asyncio.create_async_engine)",
        )
    shown = engine.url.render_as_string(hide_password=True)
    backend = engine.url.get_backend_name()
    if backend == "postgresql":
        return Database(engine, settings, read_only=read_only, user_engine=engine)
    if backend != "sqlite":
        raise ValidationError("engine", f"{shown} is neither a SQLite nor a PostgreSQL engine")
    path = sqlite_path(engine.url.render_as_string(hide_password=False))
    if path is None or engine.url.query.get("uri"):
        raise ValidationError(
            "engine",
            f"{shown}: an SQLite engine must name a file by its path "
            "(sqlite+aiosqlite:///agent.db), which memstore's writer opens too",
        )
    path = path.expanduser().resolve()
    prepare_sqlite_file(path, create=create and not read_only)
    if read_only:
        return Database(engine, settings, read_only=True, user_engine=engine)
    enable_wal(path, settings.busy_timeout_s)
    return Database(sqlite_engine(path, settings), settings, user_engine=engine)
