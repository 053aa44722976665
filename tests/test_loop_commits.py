"""Commits on the event loop: a write nobody else competes with skips the writer thread.

Each test records which thread ran every commit (``SqliteWriter._commit`` runs them all), so
"on the loop" means: on the thread that runs the test's event loop.
"""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

import pytest
from conftest import write_lock_held

from memstore import MemoryLimits, MemoryStore, Settings, WordEstimator
from memstore.db import sqlite_writer

LIMITS = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)


@pytest.fixture
def commits(monkeypatch: pytest.MonkeyPatch) -> list[tuple[bool, int]]:
    """``(on the test's own thread?, batch size)`` of every commit, in order."""
    recorded: list[tuple[bool, int]] = []
    here = threading.get_ident()
    commit = sqlite_writer.SqliteWriter._commit

    def recording(self, conn, batch):  # type: ignore[no-untyped-def]
        recorded.append((threading.get_ident() == here, len(batch)))
        return commit(self, conn, batch)

    monkeypatch.setattr(sqlite_writer.SqliteWriter, "_commit", recording)
    return recorded


def open_store(path: Path, **settings: float) -> MemoryStore:
    return MemoryStore.open(path, settings=Settings(**settings))  # type: ignore[return-value]


async def test_lone_appends_commit_on_the_loop(
    db_path: Path, commits: list[tuple[bool, int]]
) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        for i in range(20):
            await memory.add("user", f"message {i}")
        assert commits == [(True, 1)] * 20
        assert [item.seq for item in await memory.items()] == list(range(1, 21))
        assert await store.check() == []


async def test_writers_ready_in_one_tick_commit_together_on_the_loop(
    db_path: Path, commits: list[tuple[bool, int]]
) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "the session exists")
        items = await asyncio.gather(*(memory.add("user", f"m {i}") for i in range(32)))
        assert sorted(item.seq for item in items) == list(range(2, 34))
        assert commits == [(True, 1), (True, 32)]  # one transaction, one fsync, on the loop
        assert await store.check() == []


async def test_writers_that_keep_appending_keep_committing_together(
    db_path: Path, commits: list[tuple[bool, int]]
) -> None:
    """Round after round, not only the first: the answered writers must not split into ones."""
    async with MemoryStore.open(db_path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "the session exists")

        async def writer(n: int) -> None:
            for i in range(10):
                await memory.add("user", f"writer {n} message {i}")

        await asyncio.gather(*(writer(n) for n in range(8)))
        assert sum(size for _, size in commits) == 81
        assert len(commits) <= 1 + 10 + 2, commits  # about one commit per round of 8
        assert (await store.session_info("s")).items_total == 81


async def test_a_held_lock_sends_the_write_to_the_thread_and_never_stalls_the_loop(
    db_path: Path, commits: list[tuple[bool, int]]
) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "first")
        async with write_lock_held(str(db_path)):  # another connection is writing
            adding = asyncio.ensure_future(memory.add("user", "second"))
            ticks = 0
            for _ in range(20):  # the loop keeps running while the write waits for the lock
                await asyncio.sleep(0.01)
                ticks += 1
            assert not adding.done()
        item = await asyncio.wait_for(adding, timeout=10)
        assert item.seq == 2 and ticks == 20
        assert commits == [(True, 1), (False, 1)]  # the second one waited on the thread


async def test_slow_commits_go_to_the_thread(
    db_path: Path, commits: list[tuple[bool, int]]
) -> None:
    # No commit takes less than a nanosecond: after the first one, the estimate says slow.
    async with open_store(db_path, sqlite_loop_commit_ms=1e-6) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        for i in range(5):
            await memory.add("user", f"message {i}")
    assert commits == [(True, 1)] + [(False, 1)] * 4


async def test_a_zero_budget_keeps_every_commit_on_the_thread(
    db_path: Path, commits: list[tuple[bool, int]]
) -> None:
    async with open_store(db_path, sqlite_loop_commit_ms=0) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        for i in range(5):
            await memory.add("user", f"message {i}")
    assert commits == [(False, 1)] * 5


def test_the_estimate_follows_recent_commits() -> None:
    estimate = sqlite_writer._LoopCommits(writer=None, budget_s=0.001)  # type: ignore[arg-type]
    assert estimate.fast
    estimate.observe(0.050)  # one slow fsync (a busy disk)
    assert not estimate.fast
    for _ in range(30):
        estimate.observe(0.0002)
    assert estimate.fast  # fast again: back to the loop


async def test_a_write_cancelled_in_its_gathering_tick_writes_nothing(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "first")
        task = asyncio.ensure_future(memory.add("user", "never stored"))
        await asyncio.sleep(0)  # the task runs up to its one yield before committing
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        await memory.add("user", "third")
        assert [item.content for item in await memory.items()] == ["first", "third"]
        assert await store.check() == []


async def test_the_loop_connection_has_the_store_settings_and_never_waits(db_path: Path) -> None:
    async with open_store(db_path, sqlite_synchronous="NORMAL") as store:  # type: ignore[arg-type]
        await store.session("s", estimator=WordEstimator(), limits=LIMITS).add("user", "hi")
        writer = store.database.writer()
        assert writer is not None and writer._on_loop is not None
        conn = writer._on_loop._conn
        assert conn is not None

        def pragma(name: str) -> int:
            return int(conn.execute(f"PRAGMA {name}").fetchone()[0])

        assert pragma("synchronous") == 1  # NORMAL, as the store was opened
        assert pragma("foreign_keys") == 1
        assert pragma("busy_timeout") == 0  # a held lock is reported, never waited for
        assert pragma("wal_autocheckpoint") == 0  # the thread checkpoints


async def wal_bytes_after(path: Path, appends: int) -> int:
    async with MemoryStore.open(path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        for i in range(appends):
            await memory.add("user", f"message {i} " + "word " * 400)
        return Path(f"{path}-wal").stat().st_size


async def test_the_thread_checkpoints_for_the_loop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(sqlite_writer, "CHECKPOINT_EVERY", 10**9)
    never = await wal_bytes_after(tmp_path / "never.db", 300)
    monkeypatch.setattr(sqlite_writer, "CHECKPOINT_EVERY", 20)
    every_20 = await wal_bytes_after(tmp_path / "every20.db", 300)
    # Checkpointed, the WAL starts over from its beginning instead of holding every commit.
    assert every_20 < never / 3, (every_20, never)
