"""Driver errors -> memstore errors, at the boundary (one place, one table).

SQLAlchemy wraps the driver's exception; its text includes the SQL statement and a driver's
own text can quote a value (asyncpg: "invalid input for query argument $7: ..."; sqlite3:
"Could not decode to UTF-8 column 'content' with text '...'"). So messages are rebuilt from
the classification alone (kind, driver type, SQLSTATE or SQLite error name), and the chained
cause is a :class:`DriverError` that keeps the driver's type and code, never its text: what
``log.exception`` prints of a storage error holds no stored content.
"""

from __future__ import annotations

import socket
from typing import TYPE_CHECKING

from sqlalchemy import exc as sa_exc

from memstore.errors import (
    ConnectionFailedError,
    CorruptDatabaseError,
    LockTimeoutError,
    MemstoreError,
    NotADatabaseError,
    ReadOnlyDatabaseError,
    StorageError,
    StorageFullError,
)

if TYPE_CHECKING:
    from sqlalchemy.engine import URL

# (substring of the SQLite message, memstore error, message we show)
_SQLITE_PATTERNS: tuple[tuple[str, type[StorageError], str], ...] = (
    ("database is locked", LockTimeoutError, "the database stayed locked past the busy timeout"),
    ("database table is locked", LockTimeoutError, "a table stayed locked past the busy timeout"),
    ("file is not a database", NotADatabaseError, "the file is not an SQLite database"),
    ("readonly database", ReadOnlyDatabaseError, "the database is read-only"),
    ("read-only", ReadOnlyDatabaseError, "the database is read-only"),
    ("database or disk is full", StorageFullError, "the disk (or database) is full"),
    ("unable to open database", StorageError, "the database file cannot be opened"),
    ("disk i/o error", StorageError, "disk I/O error"),
)
# PostgreSQL SQLSTATE classes (asyncpg and psycopg both expose ``sqlstate``).
_PG_STATES: dict[str, tuple[type[StorageError], str]] = {
    "55P03": (LockTimeoutError, "a row or table lock was not granted in time"),
    "57014": (LockTimeoutError, "the statement was cancelled by a timeout"),
    "40001": (LockTimeoutError, "serialization failure under concurrent writers"),
    "40P01": (LockTimeoutError, "deadlock detected between concurrent writers"),
    "53100": (StorageFullError, "the disk is full"),
    "25006": (ReadOnlyDatabaseError, "the database is read-only"),
    "57P03": (StorageError, "the server is not accepting connections yet"),
}


def _sqlstate(orig: BaseException | None) -> str | None:
    for attr in ("sqlstate", "pgcode"):
        value = getattr(orig, attr, None)
        if isinstance(value, str):
            return value
    cause = getattr(orig, "__cause__", None)
    if cause is not None and cause is not orig:
        return _sqlstate(cause)
    return None


def _error_code(orig: BaseException) -> str | None:
    name = getattr(orig, "sqlite_errorname", None)  # sqlite3, Python 3.11+
    return name if isinstance(name, str) else _sqlstate(orig)


class DriverError(Exception):
    """The cause of a translated error: the driver's exception type and code, no text.

    Attributes:
        driver_type: e.g. ``sqlite3.OperationalError`` or ``asyncpg...UniqueViolationError``.
        code: The SQLite error name (``SQLITE_CORRUPT``) or the SQLSTATE, when known.
    """

    def __init__(self, error: BaseException) -> None:
        orig = getattr(error, "orig", None) or error
        self.driver_type = f"{type(orig).__module__}.{type(orig).__qualname__}"
        self.code = _error_code(orig)
        super().__init__(self.driver_type + (f" ({self.code})" if self.code else ""))


#: Signs that the file itself is damaged: SQLite's own verdict, or stored text that is not
#: UTF-8 (memstore only ever stores valid UTF-8, so such bytes are damage or a foreign writer).
_CORRUPTION = (
    ("malformed", "the database file is corrupt (malformed)"),
    ("could not decode to utf-8", "a stored text is not valid UTF-8: the file is damaged"),
)


def classify(error: BaseException) -> StorageError:
    """The memstore error for a SQLAlchemy/driver error (without raising it)."""
    orig = getattr(error, "orig", None) or error
    if str(getattr(orig, "sqlite_errorname", "")).startswith("SQLITE_CORRUPT"):
        return CorruptDatabaseError("the database file is corrupt (malformed)")
    message = str(orig).lower()
    for needle, text in _CORRUPTION:
        if needle in message:
            return CorruptDatabaseError(text)
    state = _sqlstate(orig)
    if state in _PG_STATES:
        kind, text = _PG_STATES[state]
        return kind(text)
    for needle, kind, text in _SQLITE_PATTERNS:
        if needle in message:
            return kind(text)
    if isinstance(error, sa_exc.IntegrityError) or "integrity" in type(orig).__name__.lower():
        return StorageError("a database constraint was violated")
    # The type and the SQLSTATE only: a driver's text can quote the value it choked on
    # (asyncpg's "invalid input for query argument $7: ..."), and values are stored content.
    suffix = f", SQLSTATE {state}" if state else ""
    return StorageError(f"database error ({type(orig).__name__}{suffix})")


def connection_failure(error: BaseException, url: URL) -> ConnectionFailedError:
    """What a failed connect to a database server means, said with the URL's parts (never
    its password): authentication, a missing database, or nothing listening there."""
    where = f"{url.host or 'localhost'}:{url.port or 5432}"
    user, database = url.username, url.database
    orig = getattr(error, "orig", None) or error
    state = _sqlstate(orig)
    text = str(orig).lower()  # only matched against, never shown: it may quote the server
    if state == "28P01" or "password authentication failed" in text:
        message = f"authentication failed for user {user!r} on {where}"
    elif state == "28000" or ("role" in text and "does not exist" in text):
        message = f"the server at {where} refused user {user!r} (no such role, or not allowed)"
    elif state == "3D000" or ("database" in text and "does not exist" in text):
        message = f"database {database!r} does not exist on {where}"
    elif isinstance(orig, ConnectionRefusedError) or "connection refused" in text:
        message = f"nothing is listening on {where} (connection refused)"
    elif isinstance(orig, socket.gaierror) or "name or service not known" in text:
        message = f"cannot resolve the database host {url.host!r}"
    elif isinstance(orig, TimeoutError) or "timeout" in text:
        message = f"no answer from the database server at {where} in time"
    else:
        suffix = f", SQLSTATE {state}" if state else ""
        message = f"cannot connect to {where} as {user!r} ({type(orig).__name__}{suffix})"
    return ConnectionFailedError(
        message, host=url.host, port=url.port, database=database, user=user
    )


_DRIVER_MODULES = frozenset({"sqlite3", "asyncpg", "psycopg", "aiosqlite"})


class translate_errors:
    """Re-raise any SQLAlchemy or driver error as a :class:`~memstore.errors.StorageError`.

    A class, not a ``@contextmanager`` generator: the SQLite writer enters it on every
    commit, and a class costs a third as much.
    """

    def __enter__(self) -> None:
        return None

    def __exit__(self, kind: object, error: BaseException | None, traceback: object) -> None:
        if error is None or isinstance(error, MemstoreError) or not isinstance(error, Exception):
            return  # nothing to translate: it propagates as it is
        # Drivers raise their own classes for some failures (asyncpg before SQLAlchemy wraps
        # them, sqlite3 during connect); anything with a DB-API shape is translated too.
        driver = type(error).__module__.split(".")[0] in _DRIVER_MODULES
        if driver or isinstance(error, (sa_exc.SQLAlchemyError, OSError)):
            raise classify(error) from DriverError(error)
