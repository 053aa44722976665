"""SQLite's write fast path: one writer thread, one connection, group commit.

Through SQLAlchemy's async engine a write costs a dozen hand-offs between the event loop and
aiosqlite's thread (check-out, BEGIN, each statement, each fetch, COMMIT, the pool's reset).
Here a write is one hand-off: the caller queues a step generator (:mod:`memstore.db.steps`)
and awaits a future; a dedicated thread, owning one stdlib ``sqlite3`` connection, runs it and
resolves the future after COMMIT.

Group commit: when several writes are waiting (many coroutines, one process), the thread
takes them all and commits them in one ``BEGIN IMMEDIATE ... COMMIT``, each inside its own
SAVEPOINT, so one caller's failure (a bad key, a lost compare-and-swap, a full disk) rolls
back only that caller's statements. Every caller is answered only after the COMMIT that made
its write durable: one fsync per batch instead of one per write, with the same guarantee.

Commits on the loop: on these machines waking another thread costs about 35 us, so the two
hand-offs of a write (to the thread and back) cost more than its SQL. When nothing else is
writing, the event loop's own thread commits instead, on a second connection that never
waits (:mod:`memstore.db.loop_commits`): a write first yields the loop once, so writers that
are ready in the same tick join it (group commit still happens), then commits them with
``BEGIN IMMEDIATE`` under ``busy_timeout = 0``. It skips that tick when nothing else is ready
to run on the loop (:func:`memstore.db.tick.may_be_joined`); a writer then alone commits at
once, with no future and no batch (``SqliteWriter._commit_alone``). Anything else goes to the
thread, which waits for the lock as usual: the thread has writes queued (it goes first, or the
loop would keep taking the lock ahead of it), the lock is held (another process is writing),
the batch is large (:data:`LOOP_MAX_JOBS`, :data:`LOOP_MAX_SIZE`), or recent commits were
slower than ``Settings.sqlite_loop_commit_ms`` (a slow disk: the loop must not stall on its
fsync; a new writer assumes slow until the thread's first commits say otherwise). The
guarantee is unchanged: each caller is answered after the COMMIT that made its write
durable, with the same ``synchronous`` setting.

Shortcuts: a write may offer ``run_sqlite(conn)`` for its common case, straight ``sqlite3``
calls instead of its step generator (:func:`~memstore.db.sqlite_statements.run_job`); an
append does (:meth:`memstore.db.append.Append.run_sqlite`), being the write every turn of
every worker makes. Either way it runs in the same transaction and savepoint, and is answered
the same.

Checkpoints: both connections checkpoint as SQLite does by itself, passively, inside the
COMMIT that takes the WAL past a threshold, but at :data:`CHECKPOINT_FRAMES` pages instead of
SQLite's 1000. On the loop that time is part of the commit's, so the running estimate sees it
and a disk where checkpoints are slow moves commits to the thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import queue
import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

from memstore.config import Settings
from memstore.db.errors import classify, translate_errors
from memstore.db.loop_commits import LoopCommits
from memstore.db.sqlite_statements import run_job
from memstore.db.steps import StepsFactory, T
from memstore.db.tick import may_be_joined
from memstore.db.writer_jobs import (
    Job,
    answer_all,
    take_queued,
    unknown_outcome,
    writer_stopped,
)
from memstore.errors import StorageError

#: Writes committed together at most: bounds one transaction's lock time and memory.
MAX_BATCH = 256
#: The largest batch the loop commits itself, in jobs and in the size they said they store
#: (characters of text): the loop is blocked for the whole commit, so bigger batches are the
#: thread's.
LOOP_MAX_JOBS = 32
LOOP_MAX_SIZE = 256 << 10
#: WAL pages after which a commit checkpoints (``PRAGMA wal_autocheckpoint``); SQLite's own
#: default is 1000. Fewer pays off: once checkpointed, the WAL starts over from its beginning,
#: and a commit that overwrites blocks the file already has is synced faster than one that
#: grows the file (the file system must then journal the new size too: about twice the cost
#: here). A process's WAL is new on every start, so the sooner it reaches its working size the
#: better: after about 50 single appends (an append writes five to seven pages). Measured as
#: section (1) of ``benchmarks/suite.py`` does, 7 interleaved rounds: 1000 -> 300 pages took
#: 300 durable appends on a new WAL from 402 to 335 us each; 100 and 200 were within the noise
#: of 300, and 50 cost more (366 us). Over thousands of appends the trade turns, each
#: checkpoint costing about 2 ms: at 1000 pages 2,000 appends took 4-7% less (an earlier run
#: had shown the reverse, 341 against 324 us; ``benchmarks/wal_costs.py --pages 300,1000``).
CHECKPOINT_FRAMES = 300
#: ``PRAGMA journal_size_limit``, in bytes: twice the WAL's working size at 4 KiB pages. A WAL
#: file larger than this means a checkpoint fell behind (a reader held a snapshot): the loop
#: then leaves commits to the thread, and SQLite truncates the file back to this size when
#: the WAL next starts over.
WAL_SIZE_LIMIT = 2 * CHECKPOINT_FRAMES * 4096


class SqliteWriter:
    """The writer of one SQLite file in one process: its thread, and commits on the loop.

    (See the module docstring.)
    """

    def __init__(self, path: Path, settings: Settings) -> None:
        self.pid = os.getpid()
        self._serving = True  # until the thread stops (``usable``, on every write, asks)
        self._path = path
        self._settings = settings
        self._jobs: queue.SimpleQueue[Job | None] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._closed = False
        self._gathering: list[Job] = []  # jobs waiting one loop tick to commit on the loop
        self._thread_jobs = 0  # queued for the thread or in its batch: it is idle at 0
        # Leaders committing on the loop (a lone writer, or one between taking gathered
        # jobs and queueing what is left): close() sends the stop only once there are none.
        self._leading = 0
        self._stop_sent = False
        self._budget_s = settings.sqlite_loop_commit_ms / 1000
        self._on_loop = LoopCommits(self, self._budget_s) if self._budget_s > 0 else None
        self._stopped: concurrent.futures.Future[None] = concurrent.futures.Future()
        self._thread = threading.Thread(target=self._loop, name="memstore-writer", daemon=True)
        self._thread.start()

    async def run(self, factory: StepsFactory[T], size: int = 0) -> T:
        """Queue a write and wait until the transaction holding it has committed.

        Args:
            factory: The write's step generator.
            size: About how much it stores, in characters of text (a large write never
                commits on the loop).

        Raises:
            StorageError: the writer was closed (the store is closing or closed).
        """
        loop = asyncio.get_running_loop()
        on_loop = self._on_loop
        leading = False  # a writer alone on the loop: it leads its own commit at once
        try:
            with self._lock:  # no job may slip in behind the stop signal
                if self._closed:
                    raise StorageError("the store is closed")
                gather = (
                    on_loop is not None
                    and self._thread_jobs == 0  # else the loop would keep taking the lock first
                    and size <= LOOP_MAX_SIZE
                    and on_loop.fast
                )
                # (Nothing gathered yet, from any thread's loop: the loop's own check will do.)
                if gather and not self._gathering and not may_be_joined(loop, self._budget_s):
                    # close() waits for this leader before it stops the thread. Counted and
                    # flagged with no call between, so no interruption can land between the
                    # two: the finally below always counts it out again.
                    self._leading += 1
                    leading = True
                else:
                    future: asyncio.Future[T] = loop.create_future()
                    job = Job(factory, loop, future, size)
                    if gather:
                        self._gathering.append(job)
                    else:
                        self._queue([job])
            if leading:
                answer = self._commit_alone(factory, loop, size)
        finally:
            if leading:
                with self._lock:
                    self._leading -= 1
                    self._stop_when_idle()
        if leading:
            if isinstance(answer, asyncio.Future):
                return await answer
            outcome, failed = answer
            if failed:
                raise outcome
            result: T = outcome
            return result
        if gather:
            await self._gather_and_commit(job)
        return await future

    def _commit_alone(
        self, factory: StepsFactory[T], loop: asyncio.AbstractEventLoop, size: int
    ) -> tuple[Any, bool] | asyncio.Future[T]:
        """Commit one write on the loop at once, for a leader that ``run`` counts in
        ``_leading``: its ``(outcome, failed)``, or the future of the thread's commit if the
        loop refused.

        No other writer can join it (:func:`memstore.db.tick.may_be_joined`), so there is no
        batch to gather and no future to answer: the outcome comes straight back (6-8 us
        less an append on a RAM disk here; the common case of an agent appending turn by
        turn). Nothing awaits before the commit, so it cannot be cancelled half-way; an
        interruption propagates to this caller, the only one.
        """
        on_loop = self._on_loop
        assert on_loop is not None
        outcomes = on_loop.commit([factory])
        if outcomes is not None:
            return outcomes[0]
        future: asyncio.Future[T] = loop.create_future()  # refused: the thread commits it
        with self._lock:  # while still leading: ahead of any stop signal
            self._queue([Job(factory, loop, future, size)])
        return future

    async def _gather_and_commit(self, job: Job) -> None:
        try:
            if self._may_be_joined(job.loop):
                await asyncio.sleep(0)  # writers ready in this same tick join this commit
        except BaseException:  # cancelled in this tick
            with self._lock:
                if job in self._gathering:  # not taken yet: withdrawn, nothing is written
                    self._gathering.remove(job)
                else:  # a leader has it: it commits, as for any caller that gave up waiting
                    # and its answer is dropped. Answered already, the future stays as it
                    # is, but cancel() still marks a failure retrieved: asyncio never logs it.
                    job.future.cancel()
            raise
        batch: list[Job] = []
        rest: list[Job] = []
        leading = False
        try:
            with self._lock:
                # Only a writer whose job is still waiting leads. One taken along by an earlier
                # leader must not take the jobs gathered since: they are the next tick's, and
                # committing them now would break every later tick into commits of one.
                if job not in self._gathering:
                    return
                # close() waits for this leader before it stops the thread. Counted and
                # flagged with no call between, so no interruption can land between the two.
                self._leading += 1
                leading = True
                batch, rest = self._take_batch(job)
            # One commit on the loop per gathering: the jobs that do not fit go to the
            # thread, after it (first, the thread would hold the lock it needs). Left for
            # their owners, each would commit on the loop in this same tick, one after the
            # other, and the loop would stand still for all of them.
            try:
                writes = [gathered.factory for gathered in batch]
                outcomes = None if self._on_loop is None else self._on_loop.commit(writes)
                if outcomes is None:  # refused: the thread commits it
                    rest = batch + rest
                else:
                    answer_all(batch, outcomes)
            except BaseException as interruption:  # Ctrl-C at an unknown point: after the
                # COMMIT, perhaps. It is raised here, for the leader's caller, and only here
                # (not on other threads' loops); the others learn their write's fate is
                # unknown. Never run twice, never left waiting.
                answer_all(batch[1:], [(unknown_outcome(interruption), True) for _ in batch[1:]])
                job.future.cancel()  # answered by the raise
                raise
        finally:
            if leading:
                with self._lock:
                    self._queue(rest)
                    self._leading -= 1
                    self._stop_when_idle()

    def _may_be_joined(self, loop: asyncio.AbstractEventLoop) -> bool:
        """Whether another writer may join this one in the next loop tick: then wait for it
        (:func:`memstore.db.tick.may_be_joined`, or another thread's loop gathers a write
        with this one)."""
        return len(self._gathering) > 1 or may_be_joined(loop, self._budget_s)

    def _take_batch(self, leader: Job) -> tuple[list[Job], list[Job]]:
        """Empty the gathering (the caller holds ``_lock``): ``(for the loop, the rest)``.

        The loop's batch is the leader's job and the oldest others within the loop's limits.
        """
        batch, rest = [leader], []
        size = leader.size
        for job in self._gathering:
            if job is leader:
                continue
            if len(batch) < LOOP_MAX_JOBS and size + job.size <= LOOP_MAX_SIZE:
                batch.append(job)
                size += job.size
            else:
                rest.append(job)
        self._gathering = []
        return batch, rest

    def _queue(self, batch: list[Job]) -> None:
        """Give jobs to the thread (the caller holds ``_lock``).

        If the thread has stopped by itself (a bug: only ``close()`` stops it otherwise), the
        jobs are answered at once with a :class:`StorageError` instead: nobody would read them,
        and their callers would wait forever. A caller can meet such a writer between asking
        whether it is ``usable`` and queueing; the next write gets a new writer.
        """
        # Never after the stop signal: the thread would not see them, their callers would
        # wait forever. (close() sends it only once no leader holds jobs.)
        assert not self._stop_sent
        if not self._serving:
            answer_all(batch, [(writer_stopped(ran=False), True) for _ in batch])
            return
        self._thread_jobs += len(batch)
        for job in batch:
            self._jobs.put(job)

    def _stop_when_idle(self) -> None:
        """Queue the thread's stop signal once closed and no leader holds jobs (the caller
        holds ``_lock``): every write accepted before ``close()`` is ahead of it."""
        if self._closed and self._leading == 0 and not self._stop_sent:
            self._stop_sent = True
            self._jobs.put(None)

    @property
    def usable(self) -> bool:
        """True while this process's writer thread runs and accepts work.

        Asked on every write, so it reads a flag instead of asking the thread
        (``Thread.is_alive`` takes a lock): the thread clears ``_serving`` however it stops.
        The process id is still compared on every write, not counted by an at-fork hook: a
        fork made in C (a pre-forking server, an extension) runs no such hook, and its child
        has none of the parent's threads, nor may it use the parent's connections.
        """
        return not self._closed and self._serving and self.pid == os.getpid()

    def close(self) -> concurrent.futures.Future[None]:
        """Finish every write submitted so far, then stop the thread, close the connections.

        Returns a future that is done once the thread has stopped. (A future, not a join: the
        caller awaits it without another thread, which interpreter shutdown would refuse to
        start when a store is closed from an ``atexit`` handler.)
        """
        done: concurrent.futures.Future[None] = concurrent.futures.Future()
        done.set_result(None)
        if self.pid != os.getpid():
            # A forked child: the thread is the parent's, and a lock a parent thread held at
            # the fork stays held here forever.
            return done
        with self._lock:
            if not self._closed:
                self._closed = True
                # Gathered writes go to the thread; a leader holding some queues them before
                # the stop signal (_stop_when_idle).
                gathered, self._gathering = self._gathering, []
                self._queue(gathered)
                self._stop_when_idle()
        if self._on_loop is not None:
            self._on_loop.close()
        return self._stopped if self._thread.is_alive() else done

    # -- the writer thread -----------------------------------------------------------------

    def _connect(self) -> sqlite3.Connection:
        return connect(self._path, self._settings)

    def _next_batch(self, batch: list[Job]) -> bool:
        """Wait for work, then take all that is queued into ``batch``: whether to stop."""
        item = self._jobs.get()
        while True:
            if item is None:
                return True
            batch.append(item)
            if len(batch) >= MAX_BATCH:
                return False
            try:
                item = self._jobs.get_nowait()
            except queue.Empty:
                return False

    def _loop(self) -> None:
        conn: sqlite3.Connection | None = None
        stop = False
        # The jobs in the thread's hands, from the moment _next_batch takes them into the
        # batch until they are answered; ``counted`` while still in _thread_jobs. If the
        # thread stops by itself (a bug) in between, the finally answers them: they may or
        # may not have committed.
        batch: list[Job] = []
        counted = False
        try:
            while not stop:
                batch, counted = [], True
                stop = self._next_batch(batch)
                try:
                    if conn is None:
                        with translate_errors():
                            conn = self._connect()
                    writes = [job.factory for job in batch]
                    outcomes = self._begin_and_commit(conn, writes) if batch else []
                except BaseException as error:  # BEGIN or COMMIT failed: every caller hears it
                    outcomes = [(error, True)] * len(batch)
                with self._lock:  # before the answers: a caller writing again may use the loop
                    self._thread_jobs -= len(batch)
                    counted = False
                answer_all(batch, outcomes)
                batch = []
        finally:  # however the thread stops: a new writer replaces this one (writer_for),
            try:  # and a close() waiting for it is told
                self._answer_left(batch, counted)
            finally:
                try:
                    if conn is not None:
                        conn.close()
                finally:
                    self._stopped.set_result(None)

    def _answer_left(self, in_hand: list[Job], counted: bool) -> None:
        """As the thread stops: answer the jobs it leaves, if it stopped by itself (a bug).

        Those in its hands may have committed; those still queued never ran. (After
        ``close()``'s stop signal there are normally none of either: it comes after every job.)
        From here on ``_queue`` answers jobs itself. A job answered already keeps its answer
        (``_deliver`` ignores a done future, and answers reach each loop in order). Each job
        is answered on its own: a failure to answer one (the bug, again) strands no other;
        the first such failure is raised once all were tried.
        """
        with self._lock:
            self._serving = False
            queued = take_queued(self._jobs)
            self._thread_jobs -= len(queued) + (len(in_hand) if counted else 0)
        failure: BaseException | None = None
        for jobs, ran in ((queued, False), (in_hand, True)):
            for job in jobs:
                try:
                    answer_all([job], [(writer_stopped(ran=ran), True)])
                except BaseException as error:
                    failure = failure or error
        if failure is not None:
            raise failure

    def _begin_and_commit(
        self, conn: sqlite3.Connection, writes: list[StepsFactory[Any]]
    ) -> list[tuple[Any, bool]]:
        with translate_errors():
            conn.execute("BEGIN IMMEDIATE")  # waits up to the busy timeout for the lock
        start = time.perf_counter()
        outcomes = self._commit(conn, writes)
        if self._on_loop is not None:  # what a commit costs now, lock waits left out
            self._on_loop.observe(time.perf_counter() - start)
        return outcomes

    def _commit(
        self, conn: sqlite3.Connection, writes: list[StepsFactory[Any]]
    ) -> list[tuple[Any, bool]]:
        """Run every write in the transaction just begun, then COMMIT: each one's
        ``(outcome, failed)``, in order."""
        with translate_errors():
            try:
                if len(writes) == 1:  # alone in its transaction (and no list to build)
                    outcomes = [self._one(conn, writes[0], True)]
                else:
                    outcomes = [self._one(conn, write, False) for write in writes]
                conn.execute("COMMIT")
            except BaseException:
                if conn.in_transaction:
                    conn.execute("ROLLBACK")
                raise
        return outcomes

    def _one(
        self, conn: sqlite3.Connection, write: StepsFactory[Any], alone: bool
    ) -> tuple[Any, bool]:
        # Alone in its transaction, a job needs no savepoint: a failure rolls back everything.
        if not alone:
            conn.execute("SAVEPOINT job")
        try:
            outcome = run_job(conn, write)
        except BaseException as error:  # this caller's failure: undo only its statements
            if alone or not conn.in_transaction or not isinstance(error, Exception):
                # Alone: the transaction's rollback undoes it. Or SQLite rolled the whole
                # transaction back itself (it does on SQLITE_FULL, IOERR, NOMEM): the batch's
                # earlier writes are gone too, so every caller in it must hear the failure.
                # Or an interruption (Ctrl-C): it stops the whole commit, not one caller.
                raise
            conn.execute("ROLLBACK TO job")
            conn.execute("RELEASE job")
            if isinstance(error, sqlite3.Error):
                translated = classify(error)
                translated.__cause__ = error
                return translated, True
            return error, True
        if not alone:
            conn.execute("RELEASE job")
        return outcome, False


def connect(path: Path, settings: Settings) -> sqlite3.Connection:
    """A connection as the writer's own (its thread's and the loop's): autocommit mode (the
    writer issues BEGIN IMMEDIATE / COMMIT itself), usable from any thread, with the writer's
    busy timeout, foreign keys, ``synchronous`` setting and checkpoint interval."""
    conn = sqlite3.connect(
        path, timeout=settings.busy_timeout_s, isolation_level=None, check_same_thread=False
    )
    conn.execute(f"PRAGMA busy_timeout = {int(settings.busy_timeout_s * 1000)}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA synchronous = {settings.sqlite_synchronous}")
    conn.execute(f"PRAGMA wal_autocheckpoint = {CHECKPOINT_FRAMES}")
    conn.execute(f"PRAGMA journal_size_limit = {WAL_SIZE_LIMIT}")
    return conn


def writer_for(path: Path, settings: Settings, current: SqliteWriter | None) -> SqliteWriter:
    """``current`` if it is usable here, else a new writer (after fork, or a dead thread)."""
    if current is not None and current.usable:
        return current
    return SqliteWriter(path, settings)
