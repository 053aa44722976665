"""The one connection recipe: URLs, SQLite files, engines, pragmas, transactions, fork safety.

Every connection memstore opens is made here, so every one of them behaves the same.

SQLite, and why:

* ``journal_mode=WAL``: readers never block the writer and the writer never blocks readers.
  WAL is persistent (a property of the file), so it is switched on once, when the store is
  opened (:func:`enable_wal`), not on every connection: the switch needs an exclusive lock,
  and SQLite answers SQLITE_BUSY to it at once, without consulting the busy handler.
* ``BEGIN IMMEDIATE`` for every write transaction: it takes the write lock up front, so a
  read-then-write transaction can never fail half-way with SQLITE_BUSY_SNAPSHOT (which the
  busy handler cannot retry). Reads use a plain (deferred) ``BEGIN``: one consistent
  snapshot. pysqlite's own transaction handling is switched off (``isolation_level=None``,
  SQLAlchemy's documented recipe) so that these statements are the only ones that open
  transactions, and SAVEPOINTs work.
* ``busy_timeout``: a writer waits this long for the lock, then gets :class:`LockTimeoutError`.
* ``synchronous``: FULL by default, see :mod:`memstore.config`.
* ``foreign_keys=ON``: SQLite ignores foreign keys unless told otherwise, per connection.
* ``temp_store=MEMORY``: the writer runs each write in a savepoint, whose statement journal
  would otherwise be a temporary file written on every append.
* ``secure_delete=ON``: SQLite zeroes what it frees (a deleted or rewritten row's cell, an
  emptied page) instead of leaving the old bytes in the file, so text a ``purge`` or ``prune``
  deleted is gone from the file, not only from its tables (:mod:`memstore.db.erasure`).
  Appends free next to nothing, so they pay next to nothing for it (docs/operations.md).

SQLite runs on SQLAlchemy's sync engine over the stdlib driver, driven from memstore's own
threads (:mod:`memstore.db.writer` for writes, a reader pool for reads); PostgreSQL runs on
SQLAlchemy's async engine. URLs keep their async driver names (``sqlite+aiosqlite``), which is
what a user may pass.

A connection belongs to the process that opened it. After ``fork`` the child replaces every
engine's pool without closing the parent's connections (``dispose(close=False)``, SQLAlchemy's
recipe), and the pool also refuses, on checkout, any connection opened by another process.
"""

from __future__ import annotations

import contextlib
import os
import sqlite3
import time
import urllib.parse
import uuid
import weakref
from pathlib import Path
from typing import TYPE_CHECKING, Any

from sqlalchemy import create_engine, event, exc
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import QueuePool, StaticPool

from memstore.config import Settings
from memstore.core.words import search_text
from memstore.db.driver_errors import classify, storage_error, translate_errors
from memstore.errors import (
    DatabaseMissingError,
    LockTimeoutError,
    NotADatabaseError,
    StorageError,
    ValidationError,
)

if TYPE_CHECKING:
    from sqlalchemy.ext.asyncio import AsyncEngine

SQLITE_HEADER = b"SQLite format 3\x00"
#: The execution option that makes a connection's transactions ``BEGIN IMMEDIATE``.
WRITE_OPTION = "memstore_write"
_ASYNC_DRIVERS = {"sqlite": "sqlite+aiosqlite", "postgresql": "postgresql+asyncpg"}
#: Pause between attempts to switch a busy database to WAL.
_WAL_RETRY_S = 0.02


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


#: What a user may give, said by every error about it.
URL_FORMS = (
    "a file path (agent.db), sqlite:///path/to/file.db, postgresql://user@host:port/database "
    "(asyncpg) or postgresql+psycopg://user@host:port/database"
)
_BACKENDS = ("sqlite", "postgresql")


def normalize_url(url_or_path: str | os.PathLike[str]) -> str:
    """A SQLAlchemy async URL for ``url_or_path``.

    A plain path becomes ``sqlite+aiosqlite:///<absolute path>``; ``sqlite://`` and
    ``postgresql://`` get their async driver; other SQLite and PostgreSQL URLs pass through.

    Raises:
        ValidationError: (field ``db``) not a URL memstore can use, with the forms that work;
            the URL is never echoed with its password.
    """
    raw = os.fspath(url_or_path)
    if not isinstance(raw, str) or not raw.strip():
        raise ValidationError("db", f"must be a database URL or a file path: {URL_FORMS}")
    if "://" not in raw:
        # Built, not formatted: a path may hold ?, # or % that a URL would read otherwise.
        path = str(Path(raw).expanduser().resolve())
        return URL.create("sqlite+aiosqlite", database=path).render_as_string()
    try:
        url = make_url(raw)
    except (exc.ArgumentError, ValueError):  # ValueError: a port that is not a number
        raise ValidationError("db", f"cannot be read as a database URL; use {URL_FORMS}") from None
    if url.get_backend_name() not in _BACKENDS:
        shown = url.render_as_string(hide_password=True)
        raise ValidationError("db", f"{shown} is not a SQLite or PostgreSQL URL; use {URL_FORMS}")
    if url.drivername in _ASYNC_DRIVERS:
        url = url.set(drivername=_ASYNC_DRIVERS[url.drivername])
    return url.render_as_string(hide_password=False)


def is_sqlite(url: str) -> bool:
    """Whether ``url`` (normalized) names an SQLite database, a file or in memory."""
    return make_url(url).get_backend_name() == "sqlite"


def sqlite_path(url: str) -> Path | None:
    """The file behind a SQLite URL (``None`` for other backends or in-memory databases)."""
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite" or parsed.database in (None, "", ":memory:"):
        return None
    return Path(parsed.database)


def prepare_sqlite_file(path: Path, *, create: bool = True) -> bool:
    """Refuse a file that is not a database; create a new one readable by its owner only.

    The header is checked *before* SQLite opens the file: memstore never writes to a file
    that holds something else. An empty file holds nothing to lose, so where a database may be
    created it becomes one (made readable by its owner only): a create that died before the
    file got its first page (a full disk, a file-size limit, an older memstore) must not block
    every later open. Where one may not (``create=False``: the read-only tools), it is refused.

    Returns:
        Whether this call made the database (a new file, or an empty one adopted): a later
        failure of the same open removes it again (:func:`remove_new_database`).
    """
    if path.exists():
        if path.is_dir():
            raise NotADatabaseError(f"{path} is a directory, not an SQLite database")
        try:
            with path.open("rb") as handle:
                header = handle.read(len(SQLITE_HEADER))
        except OSError as error:  # say which file, and why
            raise StorageError(f"cannot read {path}: {error.strerror}") from None
        if not header:
            if not create:
                raise NotADatabaseError(
                    f"{path} is an empty file, not a memstore database (left untouched)"
                )
            try:
                os.chmod(path, 0o600)
            except OSError as error:
                raise storage_error(f"cannot use the empty file {path}", error) from None
            return True
        if header != SQLITE_HEADER:
            raise NotADatabaseError(f"{path} is not an SQLite database (left untouched)")
        return False
    if not create:
        raise DatabaseMissingError(f"no database at {path}")
    if not path.parent.is_dir():
        raise StorageError(f"directory {path.parent} does not exist")
    if not create_database_file(path):
        return prepare_sqlite_file(path, create=False)  # another process's: check it
    return True


def create_database_file(path: Path) -> bool:
    """A new, empty SQLite database in WAL mode at ``path``, mode 0600, made atomically.

    It is written beside ``path`` under a temporary name, then hard-linked into place: no
    other process ever sees a half-made (empty) file there, and a create that fails (a full
    disk) leaves nothing behind. When two processes create the same database at once, the
    second link fails and that process uses the first one's file.

    Returns:
        Whether this call made the file (``False``: one was already there).
    """
    temporary = path.with_name(f".{path.name}.{uuid.uuid4().hex}.creating")
    try:
        os.close(os.open(temporary, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600))
        with contextlib.closing(sqlite3.connect(temporary, isolation_level=None)) as conn:
            conn.execute("PRAGMA journal_mode = WAL")  # writes the header page
        os.link(temporary, path)
        return True
    except FileExistsError:
        return False  # another process created it first: the caller checks what is there
    except (OSError, sqlite3.Error) as error:
        raise storage_error(f"cannot create {path}", error) from None
    finally:
        # On a read-only file system even unlinking a missing file fails (EROFS): the
        # cleanup must never replace the error that says why the create failed.
        for leftover in (temporary, *(Path(f"{temporary}{end}") for end in ("-wal", "-shm"))):
            with contextlib.suppress(OSError):
                leftover.unlink()


def remove_new_database(path: Path) -> None:
    """Remove a database this open made and could not finish (its schema is not there), with
    its ``-wal`` and ``-shm``: a failed create leaves nothing to trip over.

    A file that has a schema by now (another process finished creating it meanwhile) is left
    alone.
    """
    try:
        uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as conn:
            tables = conn.execute("SELECT count(*) FROM sqlite_master").fetchone()[0]
    except sqlite3.Error:
        tables = 0  # unreadable as a database: nothing of anyone's is in it
    if tables:
        return
    for leftover in (path, Path(f"{path}-wal"), Path(f"{path}-shm")):
        with contextlib.suppress(OSError):
            leftover.unlink()


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
                if mode.lower() != "wal":
                    conn.execute("PRAGMA journal_mode = WAL")
                return
        except LockTimeoutError:
            if time.monotonic() >= deadline:
                raise
            time.sleep(_WAL_RETRY_S)


def read_only_uri(path: Path) -> str:
    """A ``file:`` URI that opens ``path`` read-only: ``mode=ro`` where SQLite can keep its
    WAL index beside the file; ``immutable=1`` where it cannot (a read-only directory, a
    mounted backup), which also tells it nothing else writes there meanwhile."""
    uri = f"file:{urllib.parse.quote(str(path))}?mode=ro"
    try:
        with contextlib.closing(sqlite3.connect(uri, uri=True)) as probe:
            probe.execute("SELECT count(*) FROM sqlite_master").fetchone()
    except sqlite3.OperationalError as error:
        if "unable to open" not in str(error):
            raise StorageError(f"cannot read {path}: {classify(error)}") from None
        wal = Path(f"{path}-wal")
        if wal.exists() and wal.stat().st_size > 0:
            # immutable=1 would read the file as if its WAL did not exist: old data, said
            # to be whole. Refuse instead.
            raise StorageError(
                f"{path} has a write-ahead log ({wal.name}) that cannot be read from where it "
                "is (a read-only directory): copy the database and its -wal file somewhere "
                "writable, or open it once where it can be written, to fold the log in"
            ) from None
        return uri + "&immutable=1"
    return uri


def sqlite_engine(path: Path | None, settings: Settings, *, uri: str | None = None) -> Engine:
    """SQLAlchemy's sync engine for a SQLite file (``None``: a private in-memory database;
    ``uri``: the file opened through that ``file:`` URI instead, e.g. read-only).

    The pool never makes a check-out wait (no overflow limit): the writer keeps one
    connection, and a reader blocked on the pool could be the one a transaction needs. An
    in-memory database exists only inside its one connection, so there it is shared
    (``StaticPool``) and every read and write goes through the writer thread.
    """
    connect_args = {"timeout": settings.busy_timeout_s, "check_same_thread": False}
    if path is None:
        engine = create_engine(
            "sqlite+pysqlite://",
            hide_parameters=True,
            connect_args=connect_args,
            poolclass=StaticPool,
        )
    elif uri is not None:
        # The URI straight to the driver: through a SQLAlchemy URL its %-escapes would be
        # decoded, and a path with # or ? would open another file.
        def read_only_connection() -> sqlite3.Connection:
            return sqlite3.connect(
                uri, uri=True, timeout=settings.busy_timeout_s, check_same_thread=False
            )

        engine = create_engine(
            "sqlite+pysqlite://",
            hide_parameters=True,
            creator=read_only_connection,
            poolclass=QueuePool,  # the URL names no file: say what a file's pool would be
            pool_size=5,
            max_overflow=-1,
        )
    else:
        engine = create_engine(
            URL.create("sqlite+pysqlite", database=str(path)),
            hide_parameters=True,
            connect_args=connect_args,
            pool_size=5,
            max_overflow=-1,
        )
    _install_sqlite_recipe(engine, settings)
    _install_fork_guard(engine)
    return engine


#: The SQL function through which the search index holds a text (migration 0016): on SQLite
#: registered here on every connection, on PostgreSQL created by the migration.
SEARCH_TEXT_FUNCTION = "memstore_search_text"


def register_functions(connection: sqlite3.Connection) -> None:
    """Register memstore's SQL functions on a SQLite connection. The search index's triggers
    call :data:`SEARCH_TEXT_FUNCTION` (migration 0016): a connection memstore did not open
    (the ``sqlite3`` shell, a script) reads the database as it is, but must register this
    before it writes items, summaries or long-term entries."""
    connection.create_function(SEARCH_TEXT_FUNCTION, 1, _indexed_text, deterministic=True)


def _indexed_text(value: str | bytes | int | float | None) -> str | bytes | int | float | None:
    """:func:`~memstore.core.words.search_text` for SQLite, which may pass NULL or a number."""
    return search_text(value) if isinstance(value, str) else value


def _install_sqlite_recipe(engine: Engine, settings: Settings) -> None:
    busy_ms = int(settings.busy_timeout_s * 1000)

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # we issue BEGIN ourselves (module docstring)
        cursor = dbapi_connection.cursor()
        try:
            cursor.execute(f"PRAGMA busy_timeout = {busy_ms}")
            cursor.execute("PRAGMA foreign_keys = ON")
            cursor.execute(f"PRAGMA synchronous = {settings.sqlite_synchronous}")
            # Savepoints keep a statement journal; in memory it costs no temporary file.
            cursor.execute("PRAGMA temp_store = MEMORY")
            # Deleted text is zeroed, not left in free space (module docstring).
            cursor.execute("PRAGMA secure_delete = ON")
        finally:
            cursor.close()
        register_functions(dbapi_connection)

    @event.listens_for(engine, "begin")
    def _on_begin(connection: Any) -> None:
        write = connection.get_execution_options().get(WRITE_OPTION, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if write else "BEGIN")


def async_engine(url: str, settings: Settings) -> AsyncEngine:
    """SQLAlchemy's :class:`AsyncEngine` for a server database (PostgreSQL)."""
    # Imported here: it loads the ORM, which SQLite files (and so most CLI commands) never use.
    from sqlalchemy.ext.asyncio import create_async_engine

    # Statement parameters hold stored content: keep them out of exception text (and so out
    # of tracebacks and logs), whatever a caller does with a chained cause.
    kwargs: dict[str, Any] = {"hide_parameters": True, "pool_pre_ping": True}
    timeout_ms = str(int(settings.busy_timeout_s * 1000))
    driver = make_url(url).get_driver_name()
    # lock_timeout bounds a wait for a row lock exactly as busy_timeout does on SQLite, so a
    # stuck writer surfaces as LockTimeoutError instead of hanging an agent turn.
    if driver == "asyncpg":
        kwargs["connect_args"] = {"server_settings": {"lock_timeout": timeout_ms}}
    elif driver == "psycopg":
        kwargs["connect_args"] = {"options": f"-c lock_timeout={timeout_ms}"}
    try:
        engine = create_async_engine(url, **kwargs)
    except (exc.ArgumentError, exc.NoSuchModuleError, ImportError):
        shown = make_url(url).render_as_string(hide_password=True)
        raise ValidationError(
            "db",
            f"no driver for {shown} (in memstore's checkout: pip install '.[postgres]'); "
            f"use {URL_FORMS}",
        ) from None
    _install_fork_guard(engine.sync_engine)
    return engine


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

    _LIVE_ENGINES.add(engine)


_LIVE_ENGINES: weakref.WeakSet[Engine] = weakref.WeakSet()


def _reset_pools_in_child() -> None:
    for engine in list(_LIVE_ENGINES):
        engine.dispose(close=False)  # the parent still owns those connections


os.register_at_fork(after_in_child=_reset_pools_in_child)
