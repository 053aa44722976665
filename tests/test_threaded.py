"""SQLite reads on the sync engine's worker threads: off the loop, safe under cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from conftest import write_lock_held
from sqlalchemy import text

from memstore import (
    MemoryLimits,
    MemoryStore,
    Settings,
    StorageError,
    WordEstimator,
)
from memstore.db.threaded import ThreadedEngine

LIMITS = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)
#: A statement that keeps SQLite busy for a while (counting to a few million).
SLOW = text(
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :n) "
    "SELECT count(*) FROM c"
)


def checked_out(store: MemoryStore) -> int:
    engine = store.database.engine
    assert isinstance(engine, ThreadedEngine)
    count: int = engine.sync_engine.pool.checkedout()  # type: ignore[attr-defined]
    return count


async def test_reads_run_in_worker_threads_and_the_loop_keeps_running(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.001)

        def read(conn: Any) -> tuple[int, str]:
            count = conn.execute(SLOW, {"n": 1_000_000}).scalar_one()
            return count, threading.current_thread().name

        async def slow_read() -> tuple[int, str]:
            try:
                return await store.database.run_read(read)
            finally:
                done.set()

        task = asyncio.create_task(ticker())
        count, name = await slow_read()
        await task
        assert count == 1_000_000
        assert name.startswith("memstore-sqlite")
        assert ticks >= 5  # a loop blocked by the query would not have ticked at all


async def test_a_cancelled_statement_is_interrupted_and_its_connection_returned(
    db_path: Path,
) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "before the cancellation")

        async def slow_statement() -> Any:  # inside a transaction of several calls
            async with store.database.write() as conn:
                return (await conn.execute(SLOW, {"n": 50_000_000})).scalar_one()

        task = asyncio.create_task(slow_statement())
        await asyncio.sleep(0.05)  # the statement is running in its thread now
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        # The clean-up waited for the statement, rolled back and returned the connection.
        assert checked_out(store) == 0
        await memory.add("user", "after the cancellation")
        assert [item.content for item in await memory.items()] == [
            "before the cancellation",
            "after the cancellation",
        ]
        assert await store.check() == []


async def test_a_failed_statement_rolls_back_its_write_transaction(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        with pytest.raises(StorageError):
            async with store.database.write() as conn:
                await conn.execute(text("CREATE TABLE scratch (x INTEGER)"))
                await conn.execute(text("SELECT * FROM no_such_table"))
        query = text("SELECT name FROM sqlite_master WHERE name = 'scratch'")
        found = await store.database.run_read(lambda conn: conn.execute(query).all())
        assert found == []
        assert checked_out(store) == 0


async def test_writes_waiting_for_the_lock_never_hold_up_the_holder(db_path: Path) -> None:
    """Each transaction has its own worker: a waiter cannot take the thread the holder needs."""
    async with MemoryStore.open(db_path) as store:
        entries = await asyncio.gather(*(store.ltm.set(f"k{i}", i) for i in range(16)))
        assert sorted(entry.value for entry in entries) == list(range(16))
        assert checked_out(store) == 0


async def test_reads_go_on_while_writes_wait_for_another_process(db_path: Path) -> None:
    settings = Settings(busy_timeout_s=4.0)
    async with MemoryStore.open(db_path, settings=settings) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "readable while the lock is held")
        async with write_lock_held(str(db_path)):
            waiting = [asyncio.create_task(store.ltm.set(f"k{i}", i)) for i in range(8)]
            await asyncio.sleep(0.1)  # four wait inside BEGIN IMMEDIATE, four for their turn
            # A liveness bound, not a speed test: stuck behind the waiters, the read would
            # last until their busy timeout (4 s).
            items = await asyncio.wait_for(memory.items(), timeout=2.0)
            assert [item.content for item in items] == ["readable while the lock is held"]
        assert len(await asyncio.gather(*waiting)) == 8  # the lock came free in time


async def test_a_write_cancelled_while_waiting_for_the_lock_leaves_nothing_behind(
    db_path: Path,
) -> None:
    async with MemoryStore.open(db_path, settings=Settings(busy_timeout_s=4.0)) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        async with write_lock_held(str(db_path)):
            with pytest.raises(TimeoutError):
                await asyncio.wait_for(store.ltm.set("k", 1), timeout=0.2)
        # Its BEGIN got the lock once it was released; the abandoned transaction was rolled
        # back and its connection returned, so the lock is free for everyone else.
        await memory.add("user", "after the cancelled write")
        for _ in range(100):
            if checked_out(store) == 0:
                break
            await asyncio.sleep(0.01)
        assert checked_out(store) == 0
        assert await store.ltm.get("k") is None  # rolled back, not half-written


async def test_rowcount_and_rows_of_an_update_returning(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        async with store.database.write() as conn:
            await conn.execute(text("CREATE TABLE t (x INTEGER)"))
            await conn.execute(text("INSERT INTO t VALUES (1), (2), (3)"))
            result = await conn.execute(text("UPDATE t SET x = x * 10 RETURNING x"))
        assert result.returns_rows
        assert result.rowcount == 3
        assert sorted(result.scalars().all()) == [10, 20, 30]


def test_a_store_can_be_read_and_closed_from_an_atexit_handler(tmp_path: Path) -> None:
    """Interpreter shutdown refuses new work to thread pools; memstore's workers still run."""
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
    return sum(thread.name == "memstore-sqlite" for thread in threading.enumerate())


async def wait_until(condition: Any, seconds: float = 5.0) -> bool:
    """Poll ``condition`` (a liveness bound: threads end and connections return asynchronously)."""
    for _ in range(int(seconds / 0.01)):
        if condition():
            return True
        await asyncio.sleep(0.01)
    return bool(condition())


async def test_a_cancelled_read_is_interrupted(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        task = asyncio.create_task(
            store.database.run_read(lambda conn: conn.execute(SLOW, {"n": 50_000_000}).all())
        )
        await asyncio.sleep(0.05)
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        # Run to its end, the count would hold its connection for several seconds.
        assert await wait_until(lambda: checked_out(store) == 0, seconds=2.0)


async def test_threads_stay_few_under_many_concurrent_writes_and_end_with_the_store(
    db_path: Path,
) -> None:
    from memstore.db.threaded import READERS, WRITERS

    before = sqlite_threads()
    most = 0

    async def watch() -> None:
        nonlocal most
        while True:
            most = max(most, sqlite_threads() - before)
            await asyncio.sleep(0.001)

    async with MemoryStore.open(db_path) as store:
        watcher = asyncio.create_task(watch())
        entries = await asyncio.gather(*(store.ltm.set(f"k{i}", i) for i in range(200)))
        listed = await asyncio.gather(*(store.ltm.list() for _ in range(50)))
        watcher.cancel()
        assert len(entries) == 200 and all(len(found) == 200 for found in listed)
    assert 0 < most <= READERS + WRITERS
    assert await wait_until(lambda: sqlite_threads() <= before)


async def test_the_threads_of_a_store_never_closed_end_when_it_is_collected(
    db_path: Path,
) -> None:
    import gc

    before = sqlite_threads()
    store = await MemoryStore.open(db_path)
    await store.ltm.set("k", 1)
    assert await store.ltm.get("k") is not None
    assert sqlite_threads() > before
    del store
    gc.collect()
    assert await wait_until(lambda: sqlite_threads() <= before)
