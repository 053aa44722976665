"""Commits on the event loop's own thread, for the SQLite writer (see its module docstring).

:class:`LoopCommits` owns the writer's second connection and decides, from a running
estimate of commit times, whether the loop may commit at all; the writer decides which
batches it gets.
"""

from __future__ import annotations

import contextlib
import io
import os
import sqlite3
import sys
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from memstore.db.sqlite_writer import Job, SqliteWriter

#: WAL frames (pages) written between two checkpoints the loop's committer asks the thread
#: for. SQLite's own autocheckpoint waits for 1000. Fewer pays off: once checkpointed, the WAL
#: starts over from its beginning, and a commit that overwrites blocks the file already has
#: is synced faster than one that grows the file (the file system must then journal the new
#: size too). A process's WAL is new on every start, so the sooner it reaches its working
#: size the better: about 50 single appends here (an append writes about six pages).
#: Measured as section (1) of ``benchmarks/suite.py`` does, 7 rounds per value: 1000 -> 300
#: frames took 300 durable appends on a new WAL from 439 to 355 us each; over 2,000 appends
#: the two were within the noise (356 vs 378, 342 vs 338 in another run). Below 200 the
#: checkpoints cost more than they save.
CHECKPOINT_FRAMES = 300
#: When the WAL's frame count cannot be read (see :class:`WalFrames`): frames per row changed.
FRAMES_PER_ROW = 3
#: Weight of the newest commit in the running estimate of how long a commit takes.
_NEWEST_WEIGHT = 0.2


class LoopCommits:
    """Commits on the calling thread (the event loop's) while that is cheap and uncontended.

    It owns a second connection to the file, with ``busy_timeout = 0`` (a held lock is
    reported at once, never waited for on the loop) and no autocheckpoint. It keeps a running
    estimate of how long a commit takes, fed by its own commits and the thread's; above the
    budget every write goes to the thread until commits are fast again. The estimate starts
    above the budget: nothing is known of the disk yet, so the thread's first commits measure
    it (a network filesystem never stalls the loop, not even once). Connections are opened,
    and batches run, exactly as the writer's thread does (its ``_connect`` and ``_commit``).
    """

    def __init__(self, writer: SqliteWriter, budget_s: float) -> None:
        self._writer = writer
        self._budget_s = budget_s
        self._typical_s = 2 * budget_s
        self._lock = threading.Lock()  # one loop at a time (a store shared by threads' loops)
        self._conn: sqlite3.Connection | None = None
        self._closed = False
        self._wal = WalFrames(f"{writer._path}-shm")
        self._frames_since_checkpoint = 0

    @property
    def fast(self) -> bool:
        """Whether commits lately took no longer than the budget."""
        return self._typical_s <= self._budget_s

    def observe(self, seconds: float) -> None:
        """Fold one commit's duration into the running estimate."""
        self._typical_s += (seconds - self._typical_s) * _NEWEST_WEIGHT

    def commit(self, batch: list[Job]) -> list[tuple[Any, bool]] | None:
        """Commit ``batch`` here: each job's ``(outcome, failed)``, or ``None`` if the thread
        must do it.

        ``None`` when another thread is committing on this connection, the store is closing,
        or ``BEGIN IMMEDIATE`` did not get the lock at once (or failed at all: the thread
        then meets the same error and reports it the usual way).
        """
        if not self._lock.acquire(blocking=False):
            return None
        try:
            if self._closed:
                return None
            start = time.perf_counter()
            conn = self._begin()
            if conn is None:
                return None
            try:
                changes = conn.total_changes
                outcomes = self._writer._commit(conn, batch)
                self._frames_since_checkpoint += self._wal.grown(
                    FRAMES_PER_ROW * (conn.total_changes - changes)
                )
            except BaseException as error:  # COMMIT failed: every caller hears it
                outcomes = [(error, True)] * len(batch)
                if conn.in_transaction:  # its ROLLBACK failed too: never keep the lock
                    self._discard()
            self.observe(time.perf_counter() - start)
            if self._frames_since_checkpoint >= CHECKPOINT_FRAMES:
                self._frames_since_checkpoint = 0
                self._writer.request_checkpoint()
        finally:
            self._lock.release()
        return outcomes

    def _begin(self) -> sqlite3.Connection | None:
        """The connection, in a write transaction; ``None`` if the thread must do it."""
        try:
            if self._conn is None:
                self._conn = self._open()
            self._conn.execute("BEGIN IMMEDIATE")
        except sqlite3.Error as error:
            code = getattr(error, "sqlite_errorcode", None)  # ProgrammingError has none
            if code is None or code & 0xFF != sqlite3.SQLITE_BUSY:
                # Not a held lock (a bad file, an unreadable directory): leave writes to the
                # thread, which reports it, until commits there have been fast a while.
                self._discard()
                self.observe(1.0)
            return None
        return self._conn

    def _open(self) -> sqlite3.Connection:
        conn = self._writer._connect()
        try:
            conn.execute("PRAGMA busy_timeout = 0")
            conn.execute("PRAGMA wal_autocheckpoint = 0")
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
            self._wal.close()  # the child's own copy of the descriptor
            return
        with self._lock:  # a commit on another thread's loop finishes first
            self._closed = True
            self._discard()
            self._wal.close()


class WalFrames:
    """How many frames the WAL has gained, read from SQLite's wal-index header.

    The header opens the ``-shm`` file; its ``mxFrame`` (a native-endian u32 at offset 16,
    after ``iVersion`` = 3007000 at offset 0) is the number of valid frames in the WAL, and
    drops back when a writer starts the WAL over after a checkpoint. The format is
    documented (https://sqlite.org/walformat.html) and shared by every SQLite version since
    3.7.0: processes of different versions use one wal-index. It is only read, never written.
    """

    _VERSION = 3007000

    def __init__(self, shm_path: str) -> None:
        self._path = shm_path
        self._file: io.FileIO | None = None
        self._last = 0

    def grown(self, estimate: int) -> int:
        """Frames added since the last call (by any connection), or ``estimate`` if unreadable."""
        frames = self._read()
        if frames is None:
            return estimate
        # Fewer than last time: the WAL started over, and all it holds is new.
        added = frames - self._last if frames >= self._last else frames
        self._last = frames
        return added

    def _read(self) -> int | None:
        try:
            if self._file is None:
                self._file = io.FileIO(self._path, "r")
            self._file.seek(0)
            header = self._file.read(20)
        except OSError:
            return None
        if header is None or len(header) < 20:
            return None
        if int.from_bytes(header[0:4], sys.byteorder) != self._VERSION:
            return None
        return int.from_bytes(header[16:20], sys.byteorder)

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
