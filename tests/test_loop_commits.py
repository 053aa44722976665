"""Commits on the event loop: a write nobody else competes with skips the writer thread.

Where each commit ran, and the warmed-up stores, come from ``loopsupport.py``. The gathering
tick has its own tests (``test_gathering_tick.py``), and so do interruptions
(``test_loop_interruptions.py``).
"""

from __future__ import annotations

import asyncio
import gc
import os
import signal
import sqlite3
import threading
import time
import types
from contextlib import closing
from pathlib import Path

import pytest
from conftest import write_lock_held
from loopsupport import (
    GENEROUS,
    LIMITS,
    Commits,
    Warm,
    close_during_loop_commits,
    open_store,
    opened,
    warmed,
)

from memstore import ByteEstimator, MemoryStore, StorageFullError, WordEstimator
from memstore.db import loop_commits, sqlite_writer


async def test_a_new_writer_measures_the_disk_on_its_thread_then_uses_the_loop(
    db_path: Path, commits: Commits
) -> None:
    async with open_store(db_path, sqlite_loop_commit_ms=GENEROUS) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        for i in range(10):
            await memory.add("user", f"message {i}")
    on_loop = [here for here, _ in commits]
    assert on_loop[0] is False  # nothing known of the disk yet: the thread commits
    assert on_loop[-1] is True
    assert on_loop == sorted(on_loop)  # once fast, it stays on the loop


async def test_lone_appends_commit_on_the_loop(warm: Warm, commits: Commits) -> None:
    store, memory = warm
    for i in range(20):
        await memory.add("user", f"message {i}")
    assert commits == [(True, 1)] * 20
    assert [item.seq for item in await memory.items()] == list(range(1, 21))
    assert await store.check() == []


async def test_writers_ready_in_one_tick_commit_together_on_the_loop(
    warm: Warm, commits: Commits
) -> None:
    store, memory = warm
    await memory.add("user", "the session exists")
    n = sqlite_writer.LOOP_MAX_JOBS
    items = await asyncio.gather(*(memory.add("user", f"m {i}") for i in range(n)))
    assert sorted(item.seq for item in items) == list(range(2, n + 2))
    assert commits == [(True, 1), (True, n)]  # one transaction, one fsync, on the loop
    assert await store.check() == []


async def test_writers_that_keep_appending_keep_committing_together(
    warm: Warm, commits: Commits
) -> None:
    """Round after round, not only the first: the answered writers must not split into ones."""
    store, memory = warm
    await memory.add("user", "the session exists")

    async def writer(n: int) -> None:
        for i in range(10):
            await memory.add("user", f"writer {n} message {i}")

    await asyncio.gather(*(writer(n) for n in range(8)))
    assert sum(size for _, size in commits) == 81
    assert len(commits) <= 1 + 10 + 2, commits  # about one commit per round of 8
    assert (await store.session_info("s")).items_total == 81


async def test_large_writes_are_committed_by_the_thread(warm: Warm, commits: Commits) -> None:
    store, memory = warm
    big = "word " * (sqlite_writer.LOOP_MAX_SIZE // 5 + 2)  # stripped, still over
    await memory.add("user", big)
    assert commits == [(False, 1)]
    commits.clear()
    # Together several are large too: the loop commits at most LOOP_MAX_SIZE of them,
    # once, and the thread the rest (not one loop commit after another in one tick).
    quarter = "word " * (sqlite_writer.LOOP_MAX_SIZE // 20 - 10)  # a bit under a quarter
    await asyncio.gather(*(memory.add("user", f"{i} {quarter}") for i in range(10)))
    assert sum(size for _, size in commits) == 10
    assert [size for on_loop, size in commits if on_loop] == [4], commits
    assert (await store.session_info("s")).items_total == 11


async def test_writes_queue_behind_the_threads_work_instead_of_overtaking_it(
    warm: Warm, commits: Commits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """While the thread has a write to commit, new writes join it: a loop that kept taking
    the lock first would starve the thread into its busy timeout."""
    memory = warm[1]
    release = threading.Event()
    begin_and_commit = sqlite_writer.SqliteWriter._begin_and_commit

    def slow(self, conn, batch):  # type: ignore[no-untyped-def]
        release.wait(10)  # the thread is busy with its batch a while
        return begin_and_commit(self, conn, batch)

    monkeypatch.setattr(sqlite_writer.SqliteWriter, "_begin_and_commit", slow)
    big = asyncio.ensure_future(memory.add("user", "word " * (sqlite_writer.LOOP_MAX_SIZE // 4)))
    await asyncio.sleep(0.05)  # the large write is the thread's, and waiting
    small = [asyncio.ensure_future(memory.add("user", f"small {i}")) for i in range(5)]
    await asyncio.sleep(0.05)
    assert not any(task.done() for task in small)  # none overtook the thread's write
    release.set()
    await asyncio.wait_for(asyncio.gather(big, *small), timeout=10)
    assert all(not on_loop for on_loop, _ in commits), commits
    assert [item.seq for item in await memory.items()] == list(range(1, 7))


async def test_a_close_from_another_thread_finishes_what_a_leader_holds(
    warm: Warm, commits: Commits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() on another thread lands while a leader holds gathered writes it has not yet
    committed or queued: every one of them is still committed, none refused."""
    store, memory = warm
    close_during_loop_commits(store, monkeypatch)
    n = sqlite_writer.LOOP_MAX_JOBS + 8  # some in the loop's batch, some left over
    outcomes = await asyncio.wait_for(
        asyncio.gather(*(memory.add("user", f"m {i}") for i in range(n)), return_exceptions=True),
        timeout=10,
    )
    assert all(not isinstance(outcome, BaseException) for outcome in outcomes), outcomes
    assert sorted(item.seq for item in outcomes) == list(range(1, n + 1))  # type: ignore[union-attr]
    assert all(not on_loop for on_loop, _ in commits)


async def test_a_held_lock_sends_the_write_to_the_thread_and_never_stalls_the_loop(
    db_path: Path, commits: Commits
) -> None:
    async with open_store(db_path, sqlite_loop_commit_ms=GENEROUS, busy_timeout_s=20.0) as store:
        memory = await warmed(store, commits)
        await memory.add("user", "first")
        async with write_lock_held(str(db_path)):  # another connection is writing
            adding = asyncio.ensure_future(memory.add("user", "second"))
            gaps = []
            for _ in range(20):  # the loop keeps running while the write waits for the lock
                before = time.monotonic()
                await asyncio.sleep(0.01)
                gaps.append(time.monotonic() - before)
            assert not adding.done()
        item = await asyncio.wait_for(adding, timeout=30)
        assert item.seq == 2
        # A loop that waited for the lock itself would have stood still for the whole busy
        # timeout (20 s); half of it is a bound no scheduler hiccup reaches.
        assert max(gaps) < 10, gaps
        assert commits == [(True, 1), (False, 1)]  # the second one waited on the thread


async def test_slow_commits_go_to_the_thread(db_path: Path, commits: Commits) -> None:
    # No commit takes less than a nanosecond: the estimate never says fast.
    async with open_store(db_path, sqlite_loop_commit_ms=1e-6) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        for i in range(8):
            await memory.add("user", f"message {i}")
    assert commits == [(False, 1)] * 8


async def test_a_zero_budget_keeps_every_commit_on_the_thread(
    db_path: Path, commits: Commits
) -> None:
    async with open_store(db_path, sqlite_loop_commit_ms=0) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        for i in range(8):
            await memory.add("user", f"message {i}")
        assert store.database.writer()._on_loop is None  # type: ignore[union-attr]
    assert commits == [(False, 1)] * 8


def test_the_estimate_follows_recent_commits(tmp_path: Path) -> None:
    writer = types.SimpleNamespace(_path=tmp_path / "unused.db")  # only its path is read
    estimate = loop_commits.LoopCommits(writer=writer, budget_s=0.001)  # type: ignore[arg-type]
    assert not estimate.fast  # nothing measured yet
    for _ in range(10):
        estimate.observe(0.0002)
    assert estimate.fast
    estimate.observe(0.050)  # one slow fsync (a busy disk)
    assert not estimate.fast
    for _ in range(30):
        estimate.observe(0.0002)
    assert estimate.fast  # fast again: back to the loop


async def test_a_write_cancelled_before_a_leader_took_it_writes_nothing(
    warm: Warm, commits: Commits
) -> None:
    store, memory = warm
    await memory.add("user", "first")
    task = asyncio.ensure_future(memory.add("user", "never stored"))
    await asyncio.sleep(0)  # the task runs up to its one yield before committing
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    await memory.add("user", "third")
    assert [item.content for item in await memory.items()] == ["first", "third"]
    assert await store.check() == []


async def test_close_finishes_the_writes_gathered_before_it(warm: Warm, db_path: Path) -> None:
    store, memory = warm
    tasks = [asyncio.ensure_future(memory.add("user", f"m {i}")) for i in range(5)]
    await asyncio.sleep(0)  # all five are gathered, none committed yet
    writer = store.database.writer()
    assert writer is not None and len(writer._gathering) == 5
    await asyncio.wrap_future(writer.close())
    items = await asyncio.wait_for(asyncio.gather(*tasks), timeout=10)
    assert sorted(item.seq for item in items) == [1, 2, 3, 4, 5]
    async with MemoryStore.open(db_path) as reopened:
        assert (await reopened.session_info("s")).items_total == 5


async def test_a_failed_commit_on_the_loop_keeps_nothing_and_no_lock(
    warm: Warm, commits: Commits
) -> None:
    store, memory = warm
    await memory.add("user", "first")
    writer = store.database.writer()
    assert writer is not None and writer._on_loop is not None
    conn = writer._on_loop._conn
    assert conn is not None
    pages = conn.execute("PRAGMA page_count").fetchone()[0]
    conn.execute(f"PRAGMA max_page_count = {pages}")  # the next large write cannot fit
    with pytest.raises(StorageFullError):
        await memory.add("user", "x " * 20_000)
    assert commits[-1] == (True, 1)  # it failed on the loop
    conn.execute("PRAGMA max_page_count = 1073741823")
    await memory.add("user", "after")  # the lock was released: the loop commits again
    assert commits[-1] == (True, 1)
    assert [item.content for item in await memory.items()] == ["first", "after"]
    assert await store.check() == []


async def test_the_loop_connection_has_the_store_settings_and_never_waits(
    db_path: Path, commits: Commits
) -> None:
    async with open_store(
        db_path, sqlite_loop_commit_ms=GENEROUS, sqlite_synchronous="NORMAL"
    ) as store:
        await warmed(store, commits)
        writer = store.database.writer()
        assert writer is not None and writer._on_loop is not None
        conn = writer._on_loop._conn
        assert conn is not None

        def pragma(name: str) -> int:
            return int(conn.execute(f"PRAGMA {name}").fetchone()[0])

        assert pragma("synchronous") == 1  # NORMAL, as the store was opened
        assert pragma("foreign_keys") == 1
        assert pragma("busy_timeout") == 0  # a held lock is reported, never waited for
        assert pragma("wal_autocheckpoint") == sqlite_writer.CHECKPOINT_FRAMES
        assert pragma("journal_size_limit") == sqlite_writer.WAL_SIZE_LIMIT


async def test_two_event_loops_in_two_threads_share_one_store(db_path: Path) -> None:
    async with open_store(db_path, sqlite_loop_commit_ms=GENEROUS) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "first")

        def appender(name: str) -> None:
            async def run() -> None:
                for i in range(40):
                    await memory.add("user", f"{name} {i}")

            asyncio.run(run())

        threads = [threading.Thread(target=appender, args=(name,)) for name in "ab"]
        for thread in threads:
            thread.start()
        await asyncio.to_thread(lambda: [thread.join(30) for thread in threads])
        assert not any(thread.is_alive() for thread in threads)
        items = await memory.items()
        assert [item.seq for item in items] == list(range(1, 82))
        assert await store.check() == []


@pytest.mark.parametrize("loop_ms", [GENEROUS, 0.0], ids=["on the loop", "on the thread"])
async def test_commits_checkpoint_every_checkpoint_frames(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, commits: Commits, loop_ms: float
) -> None:
    """Both connections checkpoint at CHECKPOINT_FRAMES WAL pages: the WAL starts over from
    its beginning instead of growing to SQLite's 1000 pages (or, before, without limit)."""

    async def wal_after(path: Path, frames: int) -> tuple[int, int]:
        monkeypatch.setattr(sqlite_writer, "CHECKPOINT_FRAMES", frames)
        monkeypatch.setattr(sqlite_writer, "WAL_SIZE_LIMIT", 2 * frames * 4096)
        async with open_store(path, sqlite_loop_commit_ms=loop_ms) as store:
            memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
            commits.clear()
            for i in range(300):
                await memory.add("user", f"message {i} " + "word " * 400)
            on_loop = sum(here for here, _ in commits)
            assert on_loop > 250 if loop_ms else on_loop == 0  # where the checkpoints ran
            with closing(sqlite3.connect(path)) as reader:  # (busy, WAL pages, checkpointed)
                _, pages, _ = reader.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
            assert await store.check() == []
            return Path(f"{path}-wal").stat().st_size, pages

    never, never_pages = await wal_after(tmp_path / "never.db", 10**6)
    checkpointed, pages = await wal_after(tmp_path / "checkpointed.db", 120)
    assert checkpointed < never / 3, (checkpointed, never)
    assert pages < 120 + 20 < never_pages  # at most one commit past the threshold


async def test_an_overgrown_wal_sends_commits_to_the_thread_until_it_is_truncated(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, commits: Commits
) -> None:
    """A reader holding a snapshot stops checkpoints, and the WAL grows: the checkpoint that
    follows copies all of it, so it must not run on the loop. Commits go to the thread until
    the WAL has started over and SQLite has truncated it back to WAL_SIZE_LIMIT."""
    monkeypatch.setattr(sqlite_writer, "CHECKPOINT_FRAMES", 30)
    monkeypatch.setattr(sqlite_writer, "WAL_SIZE_LIMIT", 2 * 30 * 4096)
    wal = Path(f"{db_path}-wal")
    text = "word " * 400
    async with open_store(db_path, sqlite_loop_commit_ms=GENEROUS) as store:
        memory = await warmed(store, commits)
        with closing(sqlite3.connect(db_path, isolation_level=None)) as reader:
            reader.execute("BEGIN")
            reader.execute("SELECT count(*) FROM items").fetchall()  # a snapshot, held
            for _ in range(200):
                await memory.add("user", text)
                if wal.stat().st_size > sqlite_writer.WAL_SIZE_LIMIT:
                    break
            assert wal.stat().st_size > sqlite_writer.WAL_SIZE_LIMIT
            commits.clear()
            for _ in range(loop_commits._WAL_CHECK_EVERY + 1):  # the loop looks now and then
                await memory.add("user", text)
                if not commits[-1][0]:
                    break
            commits.clear()
            for _ in range(5):
                await memory.add("user", text)
            assert commits == [(False, 1)] * 5  # the thread's, every one
            reader.execute("COMMIT")
        commits.clear()
        for _ in range(100):  # the thread checkpoints, the WAL starts over, truncated
            await memory.add("user", text)
            if commits[-1][0]:
                break
        assert commits[-1] == (True, 1), commits  # back on the loop
        assert wal.stat().st_size <= sqlite_writer.WAL_SIZE_LIMIT
        assert await store.check() == []


def test_a_forked_child_closes_the_store_while_a_parent_thread_commits(db_path: Path) -> None:
    """A fork copies the loop connection's lock as it is: held, if a parent thread was inside
    a commit. The child's close() must not wait for it (it would wait forever)."""
    store = asyncio.run(opened(db_path))
    stop = threading.Event()

    def appender() -> None:  # commits on its own loop, holding that lock much of the time
        async def run() -> None:
            memory = store.session("t", estimator=WordEstimator(), limits=LIMITS)
            while not stop.is_set():
                await memory.add("user", "x " * 50)

        asyncio.run(run())

    thread = threading.Thread(target=appender)
    thread.start()
    try:
        time.sleep(0.3)  # the loop has taken over from the thread
        hung = 0
        for _ in range(10):
            pid = os.fork()
            if pid == 0:  # the child: close, or be killed by the alarm
                signal.alarm(10)
                asyncio.run(store.close())
                os._exit(0)
            _, status = os.waitpid(pid, 0)
            hung += os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM
        assert hung == 0
    finally:
        stop.set()
        thread.join(30)
        asyncio.run(store.close())


async def test_a_write_cancelled_after_its_leader_answered_it_leaves_no_unretrieved_error(
    warm: Warm, commits: Commits
) -> None:
    """The leader commits a whole tick's writes at once and answers each. A follower cancelled
    after that, before it resumed, can no longer be cancelled: its answer (here a failure) is
    dropped, as for any caller that gave up waiting, never left for asyncio to log at exit."""
    store, memory = warm
    await memory.add("user", "the session exists")
    other = store.session("s", estimator=ByteEstimator(), limits=LIMITS)  # fails in the batch
    reported: list[dict[str, object]] = []
    loop = asyncio.get_running_loop()
    loop.set_exception_handler(lambda _loop, context: reported.append(context))
    tasks: list[asyncio.Future[object]] = []

    async def lead_then_cancel() -> None:
        await memory.add("user", "the leader's")  # answers both writes, never yields after
        tasks[1].cancel()  # the follower has not resumed from its tick yet

    tasks.append(asyncio.ensure_future(lead_then_cancel()))
    tasks.append(asyncio.ensure_future(other.add("user", "counted by another estimator")))
    await tasks[0]
    with pytest.raises(asyncio.CancelledError) as cancelled:
        await tasks[1]
    del cancelled  # its traceback, and the tasks, hold the follower's answer till collected
    tasks.clear()
    gc.collect()
    assert commits[-1] == (True, 2)  # both were in the leader's one commit
    assert reported == []
    assert [item.content for item in await memory.items()] == ["the session exists", "the leader's"]
    assert await store.check() == []
