"""The SQLite writer thread: group commit keeps every caller's own guarantee.

Observed only through public interfaces: SQLAlchemy's engine events (``commit``,
``savepoint``, ``begin``), the stdlib ``sqlite3`` module, and memstore's own API.
"""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from conftest import write_lock_held
from sqlalchemy import Connection, event, text

from memstore import (
    CorruptDatabaseError,
    IdempotencyConflictError,
    MemoryItem,
    MemoryLimits,
    MemoryStore,
    WordEstimator,
)
from memstore.errors import StorageError, StorageFullError

LIMITS = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)


class Transactions:
    """How many appends each committed transaction held, from SQLAlchemy's own events (an
    append updates its session row once)."""

    def __init__(self, store: MemoryStore) -> None:
        self.appends = 0
        self.batches: list[int] = []
        engine = store.database.sync_engine
        event.listen(engine, "before_cursor_execute", self._statement)
        event.listen(engine, "commit", self._commit)

    def _statement(self, _conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        self.appends += statement.startswith("UPDATE sessions")

    def _commit(self, _conn: Any) -> None:
        if self.appends:  # reads commit too, with no append
            self.batches.append(self.appends)
        self.appends = 0


async def test_concurrent_appends_commit_together_and_each_is_acknowledged(
    db_path: Path,
) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "the session exists")
        transactions = Transactions(store)
        items = await asyncio.gather(*(memory.add("user", f"message {i}") for i in range(64)))
        assert sorted(item.seq for item in items) == list(range(2, 66))
        assert len({item.version for item in items}) == 64
        assert sum(transactions.batches) == 64
        assert max(transactions.batches) > 1  # they really were committed together
        assert await store.check() == []


async def test_an_acknowledged_write_is_committed_for_every_other_connection(
    db_path: Path,
) -> None:
    """The answer comes after COMMIT: a separate connection sees the row at once."""
    async with MemoryStore.open(db_path) as store:
        memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
        for n in range(1, 6):
            item = await memory.add("user", f"message {n}")
            with closing(sqlite3.connect(db_path)) as other:
                found = other.execute("SELECT seq FROM items WHERE id = ?", (item.id,)).fetchone()
            assert found == (n,)


async def test_one_failing_caller_does_not_fail_its_batch(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "original", idempotency_key="k")
        outcomes = await asyncio.gather(
            *(memory.add("user", f"fine {i}") for i in range(10)),
            memory.add("user", "different", idempotency_key="k"),
            *(memory.add("user", f"also fine {i}") for i in range(10)),
            return_exceptions=True,
        )
        errors = [o for o in outcomes if isinstance(o, BaseException)]
        assert len(errors) == 1 and isinstance(errors[0], IdempotencyConflictError)
        assert (await store.session_info("g")).items_total == 21
        assert await store.check() == []


async def test_a_failing_job_rolls_back_its_own_statements_only(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        await store.database.run_write(lambda conn: conn.execute(text("CREATE TABLE t (x)")))

        def half_then_fail(conn: Connection) -> None:
            conn.execute(text("INSERT INTO t VALUES ('rolled back')"))
            raise ValueError("this job's own failure")

        def fine(conn: Connection) -> None:
            conn.execute(text("INSERT INTO t VALUES ('kept')"))

        outcomes = await asyncio.gather(
            store.database.run_write(fine),
            store.database.run_write(half_then_fail),
            store.database.run_write(fine),
            return_exceptions=True,
        )
        assert isinstance(outcomes[1], ValueError) and outcomes[0] is outcomes[2] is None
        rows = await store.database.run_read(lambda c: c.execute(text("SELECT x FROM t")).all())
        assert [row.x for row in rows] == ["kept", "kept"]


@contextmanager
def record_sqlite_threads(monkeypatch: pytest.MonkeyPatch) -> Iterator[set[str]]:
    """The name of every thread that runs a statement on a new ``sqlite3`` connection."""
    threads: set[str] = set()

    class Cursor(sqlite3.Cursor):
        def execute(self, *args: Any, **kwargs: Any) -> Any:
            threads.add(threading.current_thread().name)
            return super().execute(*args, **kwargs)

        def executemany(self, *args: Any, **kwargs: Any) -> Any:
            threads.add(threading.current_thread().name)
            return super().executemany(*args, **kwargs)

    class Recording(sqlite3.Connection):
        def cursor(self, factory: Any = Cursor) -> Any:
            return super().cursor(factory)

        def execute(self, *args: Any, **kwargs: Any) -> Any:
            threads.add(threading.current_thread().name)
            return super().execute(*args, **kwargs)

        def commit(self) -> None:
            threads.add(threading.current_thread().name)
            super().commit()

    real_connect = sqlite3.connect

    def connect(*args: Any, **kwargs: Any) -> sqlite3.Connection:
        threads.add(threading.current_thread().name)
        return real_connect(*args, **kwargs, factory=Recording)

    monkeypatch.setattr(sqlite3, "connect", connect)
    yield threads


async def test_the_event_loop_thread_never_executes_sqlite(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    loop_thread = threading.current_thread().name
    with record_sqlite_threads(monkeypatch) as threads:
        async with MemoryStore.open(db_path) as store:  # creates, migrates, enables WAL
            memory = store.session("g", estimator=WordEstimator(), limits=MemoryLimits(60, 30, 2))
            for n in range(30):  # appends and compactions
                await memory.add("user", f"message number {n} with a few words")
            await memory.build_model_input()
            await store.ltm.set("k", {"v": 1})
            await store.ltm.get("k")
            await store.check()
            assert (await store.session_info("g")).compaction_count > 0
    assert threads  # the recording saw the work
    assert loop_thread not in threads


def about_to_begin(store: MemoryStore) -> threading.Event:
    """Set when the writer thread issues its next ``BEGIN IMMEDIATE`` (and waits for the
    lock, if another connection holds it)."""
    waiting = threading.Event()

    def before(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        if statement == "BEGIN IMMEDIATE":
            waiting.set()

    event.listen(store.database.sync_engine, "before_cursor_execute", before)
    return waiting


async def test_a_caller_cancelled_before_its_write_ran_writes_nothing(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "first")
        waiting = about_to_begin(store)
        async with write_lock_held(str(db_path)):
            blocked = asyncio.create_task(memory.add("user", "second"))
            # The writer thread is in BEGIN IMMEDIATE, waiting for the lock: the next write
            # stays in the queue, behind it.
            assert await asyncio.to_thread(waiting.wait, 10)
            queued = asyncio.create_task(memory.add("user", "never written"))
            await asyncio.sleep(0)  # let it queue its job
            queued.cancel()
        await blocked
        with pytest.raises(asyncio.CancelledError):
            await queued
        assert [i.content for i in await memory.items()] == ["first", "second"]
        assert await store.check() == []


async def test_a_caller_cancelled_while_its_write_runs_still_gets_it_committed(
    db_path: Path,
) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "first")
        waiting = about_to_begin(store)
        async with write_lock_held(str(db_path)):
            started = asyncio.create_task(memory.add("user", "second"))
            assert await asyncio.to_thread(waiting.wait, 10)  # taken into a batch: it runs
            started.cancel()
        with pytest.raises(asyncio.CancelledError):
            await started
        await memory.add("user", "third")  # behind "second" in the queue: both committed
        assert [i.content for i in await memory.items()] == ["first", "second", "third"]


async def test_a_failed_transaction_fails_every_caller_in_it_and_the_next_batch_works(
    db_path: Path,
) -> None:
    """SQLite rolls the whole transaction back on a full database: nothing of the batch is
    stored, every caller hears it, and the writer goes on with a fresh connection."""

    def cap(dbapi_connection: sqlite3.Connection, *_: object) -> None:
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages + 2}")

    async with MemoryStore.open(db_path) as store:
        memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "before")
        await store.close()
    async with MemoryStore.open(db_path) as store:
        event.listen(store.database.sync_engine, "checkout", cap)
        memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
        outcomes = await asyncio.gather(
            memory.add("user", "small one"),
            memory.add("user", "x " * 50_000),  # more pages than the cap allows
            memory.add("user", "small two"),
            return_exceptions=True,
        )
        failed = [o for o in outcomes if isinstance(o, StorageFullError)]
        assert failed and all(isinstance(o, (MemoryItem, StorageFullError)) for o in outcomes)
        assert isinstance(outcomes[1], StorageFullError)  # the one that cannot fit, always
        event.remove(store.database.sync_engine, "checkout", cap)
        after = await memory.add("user", "after")  # a fresh connection, without the cap
        contents = [i.content for i in await memory.items()]
        assert contents[0] == "before" and contents[-1] == after.content
        assert "x x x" not in " ".join(contents)
        assert await store.check() == []


async def test_writes_after_close_are_refused_and_queued_ones_are_finished(
    db_path: Path,
) -> None:
    store = await MemoryStore.open(db_path)
    memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
    pending = [asyncio.ensure_future(memory.add("user", f"m {i}")) for i in range(50)]
    await asyncio.sleep(0)  # every one queued its job
    await store.close()
    with pytest.raises(StorageError, match="closed"):
        await memory.add("user", "too late")
    outcomes = await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 30)
    assert not [o for o in outcomes if isinstance(o, BaseException)]
    async with MemoryStore.open(db_path) as reopened:
        assert (await reopened.session_info("g")).items_total == 50


def test_a_caller_whose_loop_closed_does_not_kill_the_writer(db_path: Path) -> None:
    async def opened() -> MemoryStore:
        return await MemoryStore.open(db_path)

    store = asyncio.run(opened())
    memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)

    async def impatient() -> None:
        with pytest.raises(asyncio.TimeoutError):
            await asyncio.wait_for(memory.add("user", "hello " * 10), timeout=0.00001)

    loop = asyncio.new_event_loop()
    loop.run_until_complete(impatient())
    loop.close()  # the writer may answer after this: nobody is listening any more

    async def later() -> list[str]:
        await asyncio.wait_for(memory.add("user", "second"), timeout=10)
        contents = [i.content for i in await memory.items()]
        await store.close()
        return contents

    assert asyncio.run(later())[-1] == "second"


def test_a_store_can_be_read_and_closed_from_an_atexit_handler(tmp_path: Path) -> None:
    """Interpreter shutdown refuses new work to thread pools; memstore's threads still run."""
    db = tmp_path / "exit.db"
    program = (
        "import asyncio, atexit\n"
        "from memstore import MemoryStore, WordEstimator\n"
        "async def main():\n"
        f"    store = await MemoryStore.open({str(db)!r})\n"
        "    await store.session('s', estimator=WordEstimator()).add('user', 'hello')\n"
        "    return store\n"
        "store = asyncio.run(main())\n"
        "async def last_words():\n"
        "    print([i.content for i in await (await store.attach('s')).items()])\n"
        "    await store.close()\n"
        "    print('closed')\n"
        "atexit.register(lambda: asyncio.run(last_words()))\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", program], capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert result.stderr == ""  # an atexit handler's exception is printed, not an exit code
    assert result.stdout.split() == ["['hello']", "closed"]


def sqlite_threads() -> int:
    return sum(thread.name.startswith("memstore-sqlite") for thread in threading.enumerate())


async def test_threads_stay_few_and_end_with_the_store(db_path: Path) -> None:
    from memstore.db.engine import READERS

    before = sqlite_threads()
    async with MemoryStore.open(db_path) as store:
        entries = await asyncio.gather(*(store.ltm.set(f"k{i}", i) for i in range(200)))
        listed = await asyncio.gather(*(store.ltm.list() for _ in range(50)))
        assert len(entries) == 200 and all(len(found) == 200 for found in listed)
        assert 0 < sqlite_threads() - before <= READERS + 1  # the readers and one writer
    assert sqlite_threads() == before  # close() waits for them


def _fork_in_c() -> int:
    """A fork that runs no Python at-fork hook (as a pre-forking server in C does). Called
    with the GIL held (PyDLL): a CDLL call releases it, and another thread taking it at that
    moment would leave the child a GIL held by a thread it does not have (a hang)."""
    return int(ctypes.PyDLL(None, use_errno=True).fork())


@pytest.mark.parametrize("fork", [os.fork, _fork_in_c], ids=["os.fork", "fork in C"])
def test_a_forked_child_writes_through_a_writer_of_its_own(
    db_path: Path, fork: Callable[[], int]
) -> None:
    """The parent's writer thread is not in a forked child, and its connections must not be
    used there: the child makes a writer of its own, however it was forked, and the parent's
    goes on."""

    async def opened() -> MemoryStore:
        store = await MemoryStore.open(db_path)
        await store.session("s", estimator=WordEstimator(), limits=LIMITS).add("user", "parent")
        return store

    store = asyncio.run(opened())
    try:
        pid = fork()
        if pid == 0:  # the child: exit 0 only if its write was stored
            signal.alarm(60)  # a deadlock, not a loaded machine's slow start
            code = 1

            async def child() -> None:
                nonlocal code
                memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
                await memory.add("user", "child")
                await store.close()
                code = 0

            try:
                asyncio.run(child())
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0

        async def parent_again() -> None:
            await store.session("s", estimator=WordEstimator(), limits=LIMITS).add("user", "again")

        asyncio.run(parent_again())
    finally:
        asyncio.run(store.close())

    async def contents() -> list[str]:
        async with MemoryStore.open(db_path) as reopened:
            memory = reopened.session("s", estimator=WordEstimator(), limits=LIMITS)
            return [item.content for item in await memory.items()]

    assert asyncio.run(contents()) == ["parent", "child", "again"]


async def test_a_job_that_raises_systemexit_fails_alone_and_the_writer_goes_on(
    db_path: Path,
) -> None:
    async with MemoryStore.open(db_path) as store:

        def exits(conn: Connection) -> None:
            raise SystemExit(3)

        with pytest.raises(SystemExit):
            await store.database.run_write(exits)
        memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
        assert (await asyncio.wait_for(memory.add("user", "still written"), 10)).seq == 1


async def test_damage_met_by_a_write_refuses_its_batch_and_everything_after(
    db_path: Path,
) -> None:
    async with MemoryStore.open(db_path) as store:
        await store.database.run_write(lambda conn: conn.execute(text("CREATE TABLE t (x)")))

        def insert(value: str) -> Callable[[Connection], None]:
            return lambda conn: conn.execute(text("INSERT INTO t VALUES (:x)"), {"x": value})

        def damaged(conn: Connection) -> None:
            conn.execute(text("INSERT INTO t VALUES ('from the damaged job')"))
            raise CorruptDatabaseError("the database file is corrupt (malformed)")

        outcomes = await asyncio.gather(
            store.database.run_write(insert("a")),
            store.database.run_write(damaged),
            store.database.run_write(insert("b")),
            return_exceptions=True,
        )
        assert isinstance(outcomes[1], CorruptDatabaseError)
        with pytest.raises(CorruptDatabaseError, match="refuses writes"):
            await store.database.run_write(insert("after"))
        rows = await store.database.run_read(lambda c: c.execute(text("SELECT x FROM t")).all())
        stored = sorted(row.x for row in rows)
        answered = sorted(v for v, o in zip("a-b", outcomes, strict=True) if o is None)
        assert stored == answered  # what committed is exactly what was acknowledged
        assert "from the damaged job" not in stored


ATEXIT_FIRST = """
import asyncio, atexit
from memstore import MemoryStore, WordEstimator
store = None
async def last_words():
    print([i.content for i in await (await store.attach('s')).items()])
    await store.close()
    print('closed')
atexit.register(lambda: asyncio.run(last_words()))  # registered before the store exists
async def main():
    global store
    store = await MemoryStore.open({path!r})
    await store.session('s', estimator=WordEstimator()).add('user', 'hello')
    await store.session('s', estimator=WordEstimator()).items()  # the readers start too
asyncio.run(main())
"""


def test_an_atexit_handler_registered_before_the_store_can_still_use_it(tmp_path: Path) -> None:
    """Handlers run last-registered first: memstore's own clean-up must not stop the threads
    before an earlier-registered handler of the application is done with the store."""
    result = subprocess.run(
        [sys.executable, "-c", ATEXIT_FIRST.format(path=str(tmp_path / "exit.db"))],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert result.stdout.split() == ["['hello']", "closed"]
