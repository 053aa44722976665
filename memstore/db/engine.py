"""Engines: URL handling, SQLite pragmas and transaction modes, process ownership.

Which engine runs what: a SQLite file gets SQLAlchemy's sync engine run by worker threads
(:mod:`memstore.db.threaded`) for reads and rare writes, plus the SQLite writer for the hot
writes (:mod:`memstore.db.sqlite_writer`: on the event loop when uncontended, else its
thread); PostgreSQL, and SQLite that is not a file, get
SQLAlchemy's async engine. :class:`Database` hides the difference: ``run_read(fn)`` runs a
sync read function in one transaction, and ``write()`` yields a :class:`Conn`, either way.
URLs keep their async driver names (``sqlite+aiosqlite``),
which is what a user may pass and what the async engine needs.

SQLite specifics, and why:

* ``journal_mode=WAL``: readers never block the writer and the writer never blocks readers.
  WAL is persistent (a property of the file), so it is switched on once, when the store is
  opened (:func:`enable_wal`), not on every connection: the switch needs an exclusive lock,
  and SQLite answers SQLITE_BUSY to it at once, without consulting the busy handler.
* ``BEGIN IMMEDIATE`` for every write transaction: it takes the write lock up front, so a
  read-then-write transaction can never fail half-way with SQLITE_BUSY_SNAPSHOT (which the
  busy handler cannot retry). Reads use a plain (deferred) ``BEGIN``: a consistent snapshot.
  pysqlite's own transaction handling is switched off (``isolation_level=None``) so that
  these statements are the only ones that open transactions.
* ``busy_timeout``: a writer waits this long for the lock, then gets :class:`LockTimeoutError`.
* ``synchronous``: FULL by default, see :mod:`memstore.config`.
* ``foreign_keys=ON``: SQLite ignores foreign keys unless told otherwise, per connection.

A connection belongs to the process that opened it. After ``fork`` the child replaces every
engine's pool without closing the parent's connections (``dispose(close=False)``, SQLAlchemy's
recipe), and the pool also refuses, on checkout, any connection opened by another process.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import threading
import time
import weakref
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

from sqlalchemy import create_engine, event, exc
from sqlalchemy.engine import Connection, Engine, make_url

from memstore.config import Settings
from memstore.db.errors import translate_errors
from memstore.db.threaded import ThreadedEngine
from memstore.errors import (
    DatabaseMissingError,
    LockTimeoutError,
    NotADatabaseError,
    StorageError,
    ValidationError,
)

SQLITE_HEADER = b"SQLite format 3\x00"
if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

    from memstore.db.sqlite_writer import SqliteWriter

T = TypeVar("T")


class Conn(Protocol):
    """A connection inside a write transaction, as memstore's queries use it.

    SQLAlchemy's ``AsyncConnection`` (PostgreSQL) and :class:`ThreadedConnection` (SQLite
    files) both are one. Results come back fully fetched: ``first()``, ``all()``,
    ``scalar()``, ``mappings()``, iteration, and ``rowcount``.
    """

    async def execute(self, statement: Any, parameters: Any = None) -> Any:
        """Execute a statement."""

    async def run_sync(self, fn: Any, *args: Any) -> Any:
        """``fn(sync_connection, *args)``, where sync code may use the connection."""


_WRITE = "memstore_write"
_ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}


def dialect_insert(dialect: str) -> Any:
    """The ``insert`` with ``on_conflict_do_nothing`` for ``dialect``.

    Imported on demand: the PostgreSQL dialect alone costs ~40 ms at start-up, which every
    SQLite user (and every CLI command) would otherwise pay.
    """
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert
    from sqlalchemy.dialects import sqlite

    return sqlite.insert


def normalize_url(url_or_path: str | os.PathLike[str]) -> str:
    """A SQLAlchemy async URL for ``url_or_path``.

    A plain path becomes ``sqlite+aiosqlite:///<absolute path>``; ``sqlite://`` and
    ``postgresql://`` get their async driver; other URLs pass through unchanged.
    """
    raw = os.fspath(url_or_path)
    if not isinstance(raw, str) or not raw.strip():
        raise ValidationError("db", "must be a database URL or a file path")
    if "://" not in raw:
        return f"sqlite+aiosqlite:///{Path(raw).expanduser().resolve()}"
    url = make_url(raw)
    if url.drivername in _ASYNC_DRIVERS:
        url = url.set(drivername=_ASYNC_DRIVERS[url.drivername])
    return url.render_as_string(hide_password=False)


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL (``None`` for other backends or in-memory databases)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def prepare_sqlite_file(path: Path, *, create: bool = True) -> None:
    """Refuse a file that is not a database; create a new one readable by its owner only.

    The header is checked *before* SQLite opens the file: SQLite would happily turn an empty
    page into WAL mode, and we never write to a file that was not ours.
    """
    if path.exists():
        if path.is_dir():
            raise NotADatabaseError(f"{path} is a directory, not an SQLite database")
        with translate_errors(), path.open("rb") as handle:
            header = handle.read(len(SQLITE_HEADER))
        if header and header != SQLITE_HEADER:
            raise NotADatabaseError(f"{path} is not an SQLite database (left untouched)")
        return
    if not create:
        raise DatabaseMissingError(f"no database at {path}")
    if not path.parent.is_dir():
        raise StorageError(f"directory {path.parent} does not exist")
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
        os.close(fd)
    except FileExistsError:
        pass  # another process created it first: fine, it is the same database
    except OSError as error:
        raise StorageError(f"cannot create {path}: {error.strerror}") from None


#: Pause between attempts to switch a busy database to WAL.
_WAL_RETRY_S = 0.02


def enable_wal(path: Path, timeout_s: float) -> None:
    """Put the SQLite file in WAL mode, retrying while another process holds a lock.

    Raises:
        LockTimeoutError: the file stayed locked for ``timeout_s``.
    """
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            with (
                translate_errors(),
                contextlib.closing(
                    sqlite3.connect(path, timeout=timeout_s, isolation_level=None)
                ) as conn,
            ):
                mode = conn.execute("PRAGMA journal_mode").fetchone()[0]
                if mode.lower() == "wal":
                    return
                conn.execute("PRAGMA journal_mode = WAL")
                return
        except LockTimeoutError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(_WAL_RETRY_S)


def _install_sqlite_listeners(engine: Engine, settings: Settings) -> None:
    busy_ms = int(settings.busy_timeout_s * 1000)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (module docstring)
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute(f"PRAGMA synchronous = {settings.sqlite_synchronous}")
        finally:
            cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        write = connection.get_execution_options().get(_WRITE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def _install_fork_guard(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _remember_pid(_dbapi: Any, record: Any) -> None:
        record.info["pid"] = os.getpid()

    @event.listens_for(engine, "checkout")
    def _refuse_foreign(_dbapi: Any, record: Any, proxy: Any) -> None:
        if record.info.get("pid") != os.getpid():
            # Inherited through fork: never touch it (its socket or thread is the parent's).
            record.dbapi_connection = proxy.dbapi_connection = None
            raise exc.DisconnectionError("connection belongs to another process")


_LIVE_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()


def _reset_pools_in_child() -> None:
    for engine in list(_LIVE_ENGINES):
        engine.dispose(close=False)  # the parent still owns those connections


os.register_at_fork(after_in_child=_reset_pools_in_child)


class Database:
    """An engine plus the two transaction kinds memstore uses.

    Args:
        engine: The engine; build it with :func:`open_database`, or inject your own
            ``AsyncEngine`` (pragmas and listeners are installed on it).
        settings: Timeouts and SQLite durability.
        sqlite_file: The SQLite file this process owns the write fast path of.
    """

    def __init__(
        self,
        engine: AsyncEngine | ThreadedEngine,
        settings: Settings,
        *,
        sqlite_file: Path | None = None,
    ) -> None:
        self.engine = engine
        self.settings = settings
        sync_engine = engine.sync_engine
        self.dialect = sync_engine.dialect.name
        if self.dialect == "sqlite":
            _install_sqlite_listeners(sync_engine, settings)
        elif self.dialect == "postgresql":
            from memstore.db.tables import add_postgresql_options

            add_postgresql_options()  # the models' PostgreSQL-only options (see there)
        _install_fork_guard(sync_engine)
        _LIVE_ENGINES.add(sync_engine)
        # The writer thread opens the file itself, with memstore's settings: it is used only
        # for databases memstore opened (an injected engine keeps its own connect options).
        self._sqlite_file = sqlite_file if self.dialect == "sqlite" else None
        self._writer_thread: SqliteWriter | None = None
        self._writer_lock = threading.Lock()
        self._closed = False
        self._options: dict[bool, dict[str, Any]] = {False: {}, True: {_WRITE: True}}
        if self.dialect == "postgresql":
            # PostgreSQL's default READ COMMITTED takes a new snapshot per statement; a read
            # of the session row and then its items must see one moment, so reads use
            # REPEATABLE READ (read-only transactions never fail with serialization errors).
            self._options[False] = {"isolation_level": "REPEATABLE READ"}
        self._async_engines = (
            {}
            if isinstance(engine, ThreadedEngine)
            else {write: engine.execution_options(**opts) for write, opts in self._options.items()}
        )

    def _transaction(self, *, write: bool) -> Any:
        if isinstance(self.engine, ThreadedEngine):
            return self.engine.transaction(**self._options[write])
        return _async_transaction(self._async_engines[write])

    def writer(self) -> SqliteWriter | None:
        """The SQLite write fast path of this process (``None`` on other backends).

        Raises:
            StorageError: the database was closed.
        """
        if self._sqlite_file is None:
            return None
        if self._closed:
            raise StorageError("the store is closed")
        current = self._writer_thread
        if current is not None and current.usable:  # every write asks: no lock, no import
            return current
        from memstore.db.sqlite_writer import writer_for  # it imports this module

        with self._writer_lock:  # two threads must not each start a writer
            self._writer_thread = writer_for(self._sqlite_file, self.settings, self._writer_thread)
            return self._writer_thread

    @property
    def url(self) -> str:
        """The URL, password hidden."""
        return self.engine.sync_engine.url.render_as_string(hide_password=True)

    async def run_read(self, fn: Callable[[Connection], T]) -> T:
        """``fn(connection)`` in one read transaction (one consistent snapshot).

        ``fn`` is plain sync SQLAlchemy Core code. On a SQLite file the whole transaction is
        one hand-off to a worker thread (rows become values there, off the event loop); on
        PostgreSQL it runs through the async engine's ``run_sync``.
        """
        with translate_errors():
            if isinstance(self.engine, ThreadedEngine):
                return await self.engine.run(fn, **self._options[False])
            async with self._transaction(write=False) as conn:
                result: T = await conn.run_sync(fn)
                return result

    @asynccontextmanager
    async def write(self) -> AsyncIterator[Conn]:
        """A write transaction (SQLite: ``BEGIN IMMEDIATE``); commits on success."""
        with translate_errors():
            async with self._transaction(write=True) as conn:
                yield conn

    async def close(self) -> None:
        """Finish queued writes, then close every connection; later writes are refused."""
        self._closed = True
        if self._writer_thread is not None:
            await asyncio.wrap_future(self._writer_thread.close())
            self._writer_thread = None
        with translate_errors():
            await self.engine.dispose()


@asynccontextmanager
async def _async_transaction(engine: AsyncEngine) -> AsyncIterator[Conn]:
    async with engine.connect() as conn, conn.begin():
        yield conn


def sqlite_file_engine(path: Path, settings: Settings) -> ThreadedEngine:
    """The engine of a SQLite file: SQLAlchemy's sync engine, run by worker threads.

    See :mod:`memstore.db.threaded` for why. The pool never makes a check-out wait (no
    overflow limit): a worker blocked on the pool could be the one another transaction needs.
    """
    engine = create_engine(
        f"sqlite+pysqlite:///{path}",
        hide_parameters=True,
        connect_args={"timeout": settings.busy_timeout_s, "check_same_thread": False},
        pool_size=5,
        max_overflow=-1,
    )
    return ThreadedEngine(engine)


def create_engine_for(url: str, settings: Settings) -> AsyncEngine:
    """An :class:`AsyncEngine` configured for memstore's access pattern."""
    # Imported here: it loads the ORM, which SQLite files (and so most CLI commands) never use.
    from sqlalchemy.ext.asyncio import create_async_engine

    # Statement parameters hold stored content: keep them out of exception text (and so out
    # of tracebacks and logs), whatever a caller does with a chained cause.
    kwargs: dict[str, Any] = {"hide_parameters": True}
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        kwargs["connect_args"] = {"timeout": settings.busy_timeout_s}
    elif parsed.get_driver_name() == "asyncpg":
        # lock_timeout bounds a wait for a row lock exactly as busy_timeout does on SQLite,
        # so a stuck writer surfaces as LockTimeoutError instead of hanging an agent turn.
        timeout_ms = str(int(settings.busy_timeout_s * 1000))
        kwargs["connect_args"] = {"server_settings": {"lock_timeout": timeout_ms}}
        kwargs["pool_pre_ping"] = True
    elif parsed.get_driver_name() == "psycopg":
        timeout_ms = str(int(settings.busy_timeout_s * 1000))
        kwargs["connect_args"] = {"options": f"-c lock_timeout={timeout_ms}"}
        kwargs["pool_pre_ping"] = True
    else:
        kwargs["pool_pre_ping"] = True
    try:
        return create_async_engine(url, **kwargs)
    except (exc.ArgumentError, exc.NoSuchModuleError, ImportError) as error:
        raise ValidationError("db", f"unsupported database URL ({error})") from None


def open_database(
    url_or_path: str | os.PathLike[str], settings: Settings, *, create: bool = True
) -> Database:
    """Check the target (SQLite: header, permissions) and build a :class:`Database`.

    Args:
        url_or_path: URL or SQLite file path.
        settings: Store settings.
        create: Create a missing SQLite file; if ``False``, raise
            :class:`~memstore.errors.DatabaseMissingError` instead.
    """
    url = normalize_url(url_or_path)
    path = sqlite_path(url)
    if path is None:
        return Database(create_engine_for(url, settings), settings)
    prepare_sqlite_file(path, create=create)
    enable_wal(path, settings.busy_timeout_s)
    return Database(sqlite_file_engine(path, settings), settings, sqlite_file=path)
