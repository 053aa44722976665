"""Commits on the event loop's own thread, for the SQLite writer (see its module docstring).

:class:`LoopCommits` owns the writer's second connection and decides, from a running
estimate of commit times, whether the loop may commit at all; the writer decides which
batches it gets.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sqlite3
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstore.db.sqlite_writer import SqliteWriter
    from memstore.db.steps import StepsFactory

log = logging.getLogger("memstore")

#: Weight of the newest commit in the running estimate of how long a commit takes.
_NEWEST_WEIGHT = 0.2
#: Loop commits between two looks at the WAL's size (see ``LoopCommits._wal_overgrown``).
_WAL_CHECK_EVERY = 32


class LoopCommits:
    """Commits on the calling thread (the event loop's) while that is cheap and uncontended.

    It owns a second connection to the file, with ``busy_timeout = 0`` (a held lock is
    reported at once, never waited for on the loop). It keeps a running estimate of how long
    a commit takes, fed by its own commits and the thread's, checkpoints included (a COMMIT
    that takes the WAL past ``CHECKPOINT_FRAMES`` runs one); above the budget every write
    goes to the thread until commits are fast again. The estimate starts above the budget:
    nothing is known of the disk yet, so the thread's first commits measure it (a network
    filesystem never stalls the loop, not even once). A WAL grown past its limit also sends
    commits to the thread (:meth:`_wal_overgrown`). Connections are opened, and batches run,
    exactly as the writer's thread does (its ``_connect`` and ``_commit``).
    """

    def __init__(self, writer: SqliteWriter, budget_s: float) -> None:
        self._writer = writer
        self._budget_s = budget_s
        self._typical_s = 2 * budget_s
        self._lock = threading.Lock()  # one loop at a time (a store shared by threads' loops)
        # Where SQLite puts it: next to the database file, symbolic links resolved.
        self._wal_path = f"{os.path.realpath(writer._path)}-wal"
        from memstore.db.sqlite_writer import WAL_SIZE_LIMIT  # it imports this module

        self._wal_size_limit = WAL_SIZE_LIMIT
        self._wal_overgrown_last = False
        self._commits_unchecked = _WAL_CHECK_EVERY  # look before the first commit
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._warned = False  # about a failure of the loop's own connection

    @property
    def fast(self) -> bool:
        """Whether commits lately took no longer than the budget."""
        return self._typical_s <= self._budget_s

    def observe(self, seconds: float) -> None:
        """Fold one commit's duration into the running estimate."""
        self._typical_s += (seconds - self._typical_s) * _NEWEST_WEIGHT

    def commit(self, writes: list[StepsFactory[Any]]) -> list[tuple[Any, bool]] | None:
        """Commit ``writes`` here: each one's ``(outcome, failed)``, or ``None`` if the thread
        must do it.

        ``None`` when another thread is committing on this connection, the store is closing,
        the WAL has grown past its limit (:meth:`_wal_overgrown`), or ``BEGIN IMMEDIATE`` did not
        get the lock at once (or failed at all: the thread then commits with its own
        connection, and reports any error there the usual way).

        Raises:
            An interruption (``KeyboardInterrupt``, ``SystemExit``), wherever it came: the
            transaction is rolled back if it was still open, the connection keeps no lock,
            and the writer tells the batch's other callers (``_gather_and_commit``), if any.
        """
        if not self._lock.acquire(blocking=False):
            return None
        try:
            if self._closed or self._wal_overgrown():
                return None
            start = time.perf_counter()
            conn = self._begin()
            if conn is None:
                return None
            try:
                outcomes = self._writer._commit(conn, writes)
            except BaseException as error:  # COMMIT failed: every caller hears it
                if conn.in_transaction:  # its ROLLBACK failed too: never keep the lock
                    self._discard()
                if not isinstance(error, Exception):  # interrupted: raised here only
                    raise
                outcomes = [(error, True)] * len(writes)
            self.observe(time.perf_counter() - start)  # a checkpoint the COMMIT ran included
        finally:
            self._lock.release()
        return outcomes

    def _wal_overgrown(self) -> bool:
        """Whether the WAL file is past the writer's ``WAL_SIZE_LIMIT``: the next checkpoint
        may be large.

        A reader that keeps a snapshot open (another process, a backup) stops checkpoints
        from finishing, and the WAL grows until it lets go; the next commit past the
        threshold then copies all of it, which must not happen on the loop. Commits go to the
        thread until a checkpoint has finished and the WAL, started over, was truncated back
        to the limit (``journal_size_limit``, set on both connections).

        The file is looked at with ``stat``, never opened: closing a descriptor on one of
        SQLite's files drops every POSIX lock the process holds on it, SQLite's own included.
        And only every ``_WAL_CHECK_EVERY`` commits while it is small: on this project's
        machines the commit after a ``stat`` of the WAL took 70 us longer (its fsync, for
        reasons the file system keeps to itself). Between two looks the WAL can grow by at
        most that many loop commits, so what a checkpoint on the loop copies stays bounded.
        """
        if not self._wal_overgrown_last and self._commits_unchecked < _WAL_CHECK_EVERY:
            self._commits_unchecked += 1
            return False
        self._commits_unchecked = 0
        try:
            size = os.stat(self._wal_path).st_size
        except OSError:  # no WAL yet
            size = 0
        self._wal_overgrown_last = size > self._wal_size_limit
        return self._wal_overgrown_last

    def _begin(self) -> sqlite3.Connection | None:
        """The connection, in a write transaction; ``None`` if the thread must do it."""
        try:
            if self._conn is None:
                self._conn = self._open()
            self._conn.execute("BEGIN IMMEDIATE")
        except BaseException as error:
            if not isinstance(error, Exception):  # interrupted (Ctrl-C): keep no lock
                self._discard()
                raise
            code = getattr(error, "sqlite_errorcode", None)  # only sqlite3.Error has one
            if code is None or code & 0xFF != sqlite3.SQLITE_BUSY:
                # Not a held lock (a bad file, an unreadable directory, a bug): leave writes
                # to the thread, which reports any error of its own, until commits there have
                # been fast a while (the estimate starts well above any budget).
                self._discard()
                self._typical_s = max(self._typical_s, 1.0, 10 * self._budget_s)
                if not isinstance(error, sqlite3.Error) and not self._warned:
                    self._warned = True
                    log.warning(
                        "memstore: a commit on the event loop failed (%r); writes go to "
                        "the writer thread",
                        error,
                    )
            return None
        return self._conn

    def _open(self) -> sqlite3.Connection:
        conn = self._writer._connect()
        try:
            conn.execute("PRAGMA busy_timeout = 0")
        except sqlite3.Error:
            conn.close()
            raise
        return conn

    def _discard(self) -> None:
        if self._conn is not None:
            with contextlib.suppress(sqlite3.Error):
                self._conn.close()  # closing releases any lock it holds
            self._conn = None

    def close(self) -> None:
        """Close the connection; later commits go to the (closing) thread, which refuses."""
        if self._writer.pid != os.getpid():
            # A forked child: the connection is the parent's, and the lock may have been
            # held by a parent thread at the fork, so it would never be released here.
            self._closed = True
            self._conn = None
            return
        with self._lock:  # a commit on another thread's loop finishes first
            self._closed = True
            self._discard()
