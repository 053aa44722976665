"""The SQLite writer: one thread per database file and process owns the write connection.

SQLite has one writer at a time, so memstore gives each (process, file) exactly one: a thread
holding one connection. Every write is a job, a plain function ``fn(connection)``; callers
queue jobs and await a future. The thread takes everything queued, and:

1. opens one ``BEGIN IMMEDIATE`` transaction (waiting up to the busy timeout for the lock,
   which another process may hold);
2. runs each job in its own ``SAVEPOINT``: a job that raises rolls back its own statements
   only, and its caller gets the error (a job alone in its batch needs no savepoint: the
   transaction is its own, and is rolled back instead);
3. commits, then answers every caller. One fsync makes the whole batch durable (group
   commit), and no caller hears "stored" before the COMMIT that stored its write.

Between batches the thread also runs an optional *maintenance* job (the search index's
catching up, :mod:`memstore.db.search_index`) in a transaction of its own: once
:data:`MAINTENANCE_INTERVAL_S` has passed since it last ran and something was written
since, as soon as the thread is between two batches with no job waiting (a writer kept busy
runs it anyway once it is :data:`MAINTENANCE_OVERDUE` intervals late), and once more when
the writer closes. No caller waits for it (though a job queued while it runs waits, as
behind any batch), and its failure is nobody's: it is tried again at the next interval.

If the transaction itself fails (BEGIN or COMMIT, or SQLite rolling everything back on a full
disk or an I/O error), nothing of the batch is stored and every caller hears so. The thread
then opens a fresh connection for the next batch.

A caller that is cancelled before its job started writes nothing (the job's future is
cancelled and the thread skips it); once started, the job commits with its batch, and only
the answer is lost, as with any call whose caller stops waiting.

The event loop never runs SQLite: it only queues a job and awaits ``asyncio.wrap_future``.
"""

from __future__ import annotations

import concurrent.futures
import contextlib
import logging
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from sqlalchemy.engine import Connection, Engine

from memstore.db.connection import WRITE_OPTION
from memstore.db.driver_errors import translate_errors
from memstore.errors import CorruptDatabaseError, StorageError

T = TypeVar("T")

log = logging.getLogger("memstore")

#: Jobs per transaction at most. A batch holds the write lock while it runs, and other
#: processes wait for it; a few hundred short writes keep that wait at one commit's order.
MAX_BATCH = 256

#: How often the maintenance job runs at most: rare enough that its transaction is noise
#: beside the appends (one commit a second), often enough that what it catches up on stays
#: small (about a second of appends).
MAINTENANCE_INTERVAL_S = 1.0

#: Intervals a busy writer may put maintenance off (it waits while callers' jobs are queued).
MAINTENANCE_OVERDUE = 10

Job = Callable[[Connection], Any]
#: A maintenance job: returns whether work is left (then it runs again at the next gap).
Maintenance = Callable[[Connection], bool]
#: Why a write is refused once the file was found damaged.
DAMAGED = "the database file is damaged, so this store refuses writes"


@dataclass
class _Queued:
    fn: Job
    future: concurrent.futures.Future[Any]


@dataclass
class _Channel:
    """What the callers and the thread share: the queue, and whether it takes jobs."""

    jobs: queue.SimpleQueue[_Queued | None] = field(default_factory=queue.SimpleQueue)
    lock: threading.Lock = field(default_factory=threading.Lock)
    accepting: bool = True  # False once closed, or once the thread is gone
    stopped: concurrent.futures.Future[None] = field(default_factory=concurrent.futures.Future)

    def stop(self) -> None:
        """Take no more jobs; the thread ends after those queued so far."""
        with self.lock:
            if self.accepting:
                self.accepting = False
                self.jobs.put(None)


class SqliteWriter:
    """The writer thread of one SQLite database in this process.

    Args:
        engine: The database's sync engine (:func:`memstore.db.connection.sqlite_engine`);
            the thread checks one connection out of it and keeps it.
        damage: Set once the file is found damaged (by any read or write of this store):
            from then on every job is refused with :class:`CorruptDatabaseError`, those
            already queued included.
        maintenance: The job run between batches (see the module docstring).
    """

    def __init__(
        self, engine: Engine, damage: threading.Event, maintenance: Maintenance | None = None
    ) -> None:
        self.pid = os.getpid()
        self._channel = _Channel()
        # The thread's function holds the channel, not this object: a writer that is dropped
        # without close() is collected, and its finalizer stops the thread. Not at exit,
        # though: an atexit handler may still be using the store (daemon threads need no
        # stopping there).
        thread = threading.Thread(
            target=_serve,
            args=(engine, self._channel, damage, maintenance),
            name="memstore-sqlite-writer",
            daemon=True,  # a store never closed must not keep the interpreter alive
        )
        thread.start()
        weakref.finalize(self, self._channel.stop).atexit = False

    def submit(self, fn: Callable[[Connection], T]) -> concurrent.futures.Future[T]:
        """Queue ``fn`` to run in the next batch; a future of its outcome, set after COMMIT.

        Raises:
            StorageError: the writer was closed (or its thread is gone).
        """
        future: concurrent.futures.Future[T] = concurrent.futures.Future()
        channel = self._channel
        with channel.lock:
            if not channel.accepting:
                raise StorageError("the store is closed")
            channel.jobs.put(_Queued(fn, future))
        return future

    def close(self) -> concurrent.futures.Future[None]:
        """Run every job queued so far, then stop; a future that is done once it stopped.

        A future, not a join: the caller awaits it without another thread, which interpreter
        shutdown would refuse to start when a store is closed from an ``atexit`` handler.
        """
        self._channel.stop()
        return self._channel.stopped


def _serve(
    engine: Engine, channel: _Channel, damage: threading.Event, maintenance: Maintenance | None
) -> None:
    """The writer thread: batches until the stop signal (``None``), then clean-up."""
    conn: Connection | None = None
    due: float | None = None  # when maintenance runs next (None: nothing written since)
    try:
        stop = False
        while not stop:
            wait = None if due is None else max(0.0, due - time.monotonic())
            batch, stop = _next_batch(channel.jobs, wait)
            started = [job for job in batch if job.future.set_running_or_notify_cancel()]
            if started:
                try:
                    conn = _commit_batch(engine, conn, started, damage)
                except BaseException as error:  # a bug here: no caller may wait forever
                    for job in started:
                        if not job.future.done():
                            job.future.set_exception(
                                StorageError(
                                    f"the SQLite writer failed ({type(error).__name__}): "
                                    "this write may or may not be stored"
                                )
                            )
                    raise
                if due is None:
                    due = time.monotonic() + MAINTENANCE_INTERVAL_S
            if maintenance is not None and due is not None and _maintenance_due(due, stop, channel):
                conn, more = _maintain(engine, conn, maintenance, damage)
                due = time.monotonic() if more else None
    finally:
        with channel.lock:
            channel.accepting = False  # submit() refuses from now on
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()
        # Jobs still queued here were never run (the thread failed, a bug): answer them.
        for job in _drain(channel.jobs):
            if job.future.set_running_or_notify_cancel():
                job.future.set_exception(
                    StorageError("the SQLite writer stopped before this write ran: not stored")
                )
        channel.stopped.set_result(None)


def _maintenance_due(due: float, stop: bool, channel: _Channel) -> bool:
    """Whether to run maintenance now: it is due and no caller waits (a job queued meanwhile
    goes first), or the writer is closing, or callers have kept it busy for
    :data:`MAINTENANCE_OVERDUE` intervals past its time."""
    now = time.monotonic()
    if stop or now >= due + MAINTENANCE_OVERDUE * MAINTENANCE_INTERVAL_S:
        return True
    return now >= due and channel.jobs.empty()


def _maintain(
    engine: Engine, conn: Connection | None, maintenance: Maintenance, damage: threading.Event
) -> tuple[Connection | None, bool]:
    """Run ``maintenance`` in a transaction of its own: (the connection, whether work is left).

    Its failure (the lock stayed busy, a database at another schema) is logged and left to
    the next interval: no caller is waiting for it.
    """
    job = _Queued(maintenance, concurrent.futures.Future())
    job.future.set_running_or_notify_cancel()
    conn = _commit_batch(engine, conn, [job], damage)
    error = job.future.exception()
    if error is not None:
        log.debug("memstore: the writer's maintenance failed (%s); retried later", error)
        return conn, False
    return conn, bool(job.future.result())


def _next_batch(
    jobs: queue.SimpleQueue[_Queued | None], wait: float | None = None
) -> tuple[list[_Queued], bool]:
    """Wait for a job (at most ``wait`` seconds: then no job), then take what else is
    queued: ``(jobs, whether to stop after)``."""
    batch: list[_Queued] = []
    try:
        job = jobs.get(timeout=wait)
    except queue.Empty:
        return batch, False
    while job is not None:
        batch.append(job)
        if len(batch) >= MAX_BATCH:
            return batch, False
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return batch, False
    return batch, True


def _drain(jobs: queue.SimpleQueue[_Queued | None]) -> list[_Queued]:
    left: list[_Queued] = []
    while True:
        try:
            job = jobs.get_nowait()
        except queue.Empty:
            return left
        if job is not None:
            left.append(job)


def _commit_batch(
    engine: Engine, conn: Connection | None, batch: list[_Queued], damage: threading.Event
) -> Connection | None:
    """Run ``batch`` in one transaction and answer every job; the connection to reuse."""
    if damage.is_set():  # found damaged since these were queued: write nothing more
        for job in batch:
            job.future.set_exception(CorruptDatabaseError(DAMAGED))
        return conn
    outcomes: list[tuple[bool, Any]] = []
    try:
        with translate_errors():
            if conn is None:
                conn = engine.connect().execution_options(**{WRITE_OPTION: True})
            with conn.begin() as transaction:  # BEGIN IMMEDIATE (the recipe); COMMIT on exit
                if len(batch) == 1:
                    # Alone, a job needs no savepoint: the transaction is its own.
                    outcomes.append(_run(conn, batch[0].fn))
                    if not outcomes[0][0]:
                        transaction.rollback()
                else:
                    outcomes.extend(_run_in_savepoint(conn, job.fn) for job in batch)
                damaged = next(
                    (e for ok, e in outcomes if not ok and isinstance(e, CorruptDatabaseError)),
                    None,
                )
                if damaged is not None:  # no write of this batch may land in a damaged file
                    raise damaged
    except Exception as error:
        if isinstance(error, CorruptDatabaseError):
            damage.set()
        # Nothing of the batch is stored. A job that had failed on its own keeps its own
        # error; every other caller hears why the transaction failed.
        for index, job in enumerate(batch):
            if index < len(outcomes) and not outcomes[index][0]:
                job.future.set_exception(outcomes[index][1])
            else:
                job.future.set_exception(_not_stored(error))
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()  # a fresh connection for the next batch: this one failed
        return None
    for job, (ok, value) in zip(batch, outcomes, strict=True):
        if ok:
            job.future.set_result(value)
        else:
            job.future.set_exception(value)
    return conn


def _run(conn: Connection, fn: Job) -> tuple[bool, Any]:
    """``fn(conn)``: ``(True, result)``, or ``(False, error)`` (translated, not rolled back)."""
    try:
        with translate_errors():
            return True, fn(conn)
    except BaseException as error:  # SystemExit from a job is that job's failure, not ours
        return False, error


def _run_in_savepoint(conn: Connection, fn: Job) -> tuple[bool, Any]:
    """``fn(conn)`` inside a SAVEPOINT: ``(True, result)``, or ``(False, error)`` rolled back.

    The savepoint is plain SQL: SQLAlchemy's nested-transaction object costs more than the
    short write it guards (about 0.1 ms here, against 0.05 ms for an append's statements).
    Jobs never open transactions of their own, so nothing else tracks it.

    Raises:
        The job's error, when SQLite itself ended the whole transaction (it does on
        SQLITE_FULL, IOERR and NOMEM): then no savepoint is left to roll back to, and the
        batch's other writes are gone too.
    """
    with translate_errors():
        conn.exec_driver_sql("SAVEPOINT job")
    ok, outcome = _run(conn, fn)
    with translate_errors():
        if ok:
            conn.exec_driver_sql("RELEASE job")
        elif conn.connection.dbapi_connection.in_transaction:  # type: ignore[union-attr]
            conn.exec_driver_sql("ROLLBACK TO job")
            conn.exec_driver_sql("RELEASE job")
        else:
            raise outcome
    return ok, outcome


def _not_stored(error: BaseException) -> StorageError:
    """The error a caller hears whose write was in a transaction that failed as a whole:
    its own instance of the same error (each caller raises its own), else a StorageError."""
    if not isinstance(error, StorageError):
        copy = StorageError(f"the write was not stored ({type(error).__name__})")
        copy.__cause__ = error
        return copy
    # Copied without calling __init__: error classes take different arguments, and some
    # build their message from them.
    same = type(error).__new__(type(error), *error.args)
    same.__dict__.update(error.__dict__)
    same.__cause__ = error.__cause__
    return same
