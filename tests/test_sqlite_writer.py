"""SQLite's writer thread: group commit keeps every caller's own guarantee."""

from __future__ import annotations

import asyncio
import ctypes
import os
import signal
import threading
from collections.abc import Callable
from pathlib import Path

import pytest

from memstore import IdempotencyConflictError, MemoryLimits, MemoryStore, WordEstimator
from memstore.config import Settings
from memstore.db import sqlite_writer
from memstore.db.append import Append, NewItem
from memstore.db.writer_jobs import Job
from memstore.errors import StorageError
from memstore.model import MemoryKind, MemoryRole, Priority

LIMITS = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)


@pytest.fixture
def batch_sizes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    commit = sqlite_writer.SqliteWriter._commit

    def recording(self, conn, batch):  # type: ignore[no-untyped-def]
        sizes.append(len(batch))
        return commit(self, conn, batch)

    monkeypatch.setattr(sqlite_writer.SqliteWriter, "_commit", recording)
    return sizes


async def test_concurrent_appends_commit_together_and_each_is_acknowledged(
    db_path: Path, batch_sizes: list[int]
) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
        items = await asyncio.gather(*(memory.add("user", f"message {i}") for i in range(64)))
        assert sorted(item.seq for item in items) == list(range(1, 65))
        assert len({item.version for item in items}) == 64
        assert max(batch_sizes) > 1  # they really were committed together
        assert sum(batch_sizes) == 64
        assert await store.check() == []
        info = await store.session_info("g")
        assert info.items_total == 64 and info.version == 64


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


async def test_writer_restarts_after_close_and_in_a_new_loop(db_path: Path) -> None:
    store = await MemoryStore.open(db_path)
    memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
    await memory.add("user", "before close")
    await store.close()
    async with MemoryStore.open(db_path) as reopened:
        again = reopened.session("g", estimator=WordEstimator(), limits=LIMITS)
        await again.add("user", "after reopen")
        assert [i.content for i in await again.items()] == ["before close", "after reopen"]


def test_a_caller_whose_loop_closed_does_not_kill_the_writer(db_path: Path) -> None:
    async def opened() -> MemoryStore:  # every write through the thread: it answers late
        return await MemoryStore.open(db_path, settings=Settings(sqlite_loop_commit_ms=0))

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


async def test_writes_after_close_are_refused_not_stranded(db_path: Path) -> None:
    from memstore import StorageError

    store = await MemoryStore.open(db_path)
    memory = store.session("g", estimator=WordEstimator(), limits=LIMITS)
    pending = [asyncio.ensure_future(memory.add("user", f"m {i}")) for i in range(50)]
    await asyncio.sleep(0)
    closing = asyncio.ensure_future(store.close())
    with pytest.raises(StorageError, match="closed"):
        await asyncio.wait_for(memory.add("user", "too late"), timeout=10)
    await closing
    outcomes = await asyncio.wait_for(asyncio.gather(*pending, return_exceptions=True), 10)
    # Every queued write was answered: committed, or refused because the store was closing.
    assert all(not isinstance(o, BaseException) or isinstance(o, StorageError) for o in outcomes)


def test_classified_errors_never_quote_driver_text() -> None:
    from memstore.db.errors import classify

    class DataError(Exception):
        sqlstate = "22P02"

    error = classify(DataError("invalid input for query argument $7: {'api_key': 'sk-SECRET'}"))
    assert "SECRET" not in str(error) and "22P02" in str(error)


async def test_a_missing_bind_parameter_is_an_error_not_a_null(db_path: Path) -> None:
    """SQLAlchemy refuses a statement run without one of its values; the writer must too."""
    from memstore.db.append import INSERT_ITEM
    from memstore.db.steps import run_steps

    async with MemoryStore.open(db_path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "the only item")

        def steps(dialect: str):  # type: ignore[no-untyped-def]
            yield INSERT_ITEM, {"id": "x", "session_id": "s", "seq": 2}  # most values missing
            return None

        with pytest.raises(KeyError, match="no value for bind parameter 'role'"):
            await run_steps(store.database, steps)
        assert [item.content for item in await memory.items()] == ["the only item"]


async def test_a_writer_whose_thread_stopped_is_replaced(db_path: Path) -> None:
    """A writer thread that stopped by itself (not by ``close()``) is not used again: the
    next write gets a new writer instead of a queue that nobody reads; and a write that meets
    the old writer all the same (it asked ``usable`` just before the thread stopped) is told
    at once that it never ran."""
    async with MemoryStore.open(db_path, settings=Settings(sqlite_loop_commit_ms=0)) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "first")  # by the thread (no commits on the loop)
        writer = store.database.writer()
        assert writer is not None and writer.usable
        writer._jobs.put(None)  # its stop signal, with no close(): it stops by itself
        writer._thread.join(10)
        assert not writer._thread.is_alive() and not writer.usable
        late = NewItem(MemoryRole.USER, MemoryKind.USER_MESSAGE, Priority.NORMAL, "late", 1)
        with pytest.raises(StorageError, match="nothing was written"):
            await asyncio.wait_for(writer.run(Append("s", "words", LIMITS, late)), timeout=10)
        item = await asyncio.wait_for(memory.add("user", "second"), timeout=10)
        assert store.database.writer() is not writer
        assert [i.content for i in await memory.items()] == ["first", item.content]


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the bug
@pytest.mark.parametrize("bug", ["in its next wait", "answering the write before"])
async def test_writes_queued_for_a_thread_that_dies_are_answered(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, bug: str
) -> None:
    """A writer thread that dies by itself (a bug) answers the writes still queued for it,
    none of which ran: no caller waits forever, and the next write gets a new writer. Even
    when the bug is in answering the write it was handling, which then stays unanswered."""
    async with MemoryStore.open(db_path, settings=Settings(sqlite_loop_commit_ms=0)) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "first")
        writer = store.database.writer()
        assert writer is not None
        inside, release = threading.Event(), threading.Event()
        commit = sqlite_writer.SqliteWriter._begin_and_commit
        answer = sqlite_writer.answer_all

        def held(self, conn, writes):  # type: ignore[no-untyped-def]
            inside.set()
            release.wait(10)
            return commit(self, conn, writes)

        def die(self: sqlite_writer.SqliteWriter, batch: list[Job]) -> bool:
            raise RuntimeError("a bug in the writer thread")

        def fail_on_second(batch: list[Job], outcomes: list[tuple[object, bool]]) -> None:
            if any(getattr(job.factory.new, "content", None) == "second" for job in batch):
                raise ValueError("a bug in answering")
            answer(batch, outcomes)

        monkeypatch.setattr(sqlite_writer.SqliteWriter, "_begin_and_commit", held)
        second = asyncio.create_task(memory.add("user", "second"))
        assert await asyncio.to_thread(inside.wait, 10)  # the thread is committing "second"
        if bug == "in its next wait":
            monkeypatch.setattr(sqlite_writer.SqliteWriter, "_next_batch", die)
        else:
            monkeypatch.setattr(sqlite_writer, "answer_all", fail_on_second)
        third = asyncio.create_task(memory.add("user", "third"))
        for _ in range(100):  # until "third" waits in the queue, behind "second"
            if writer._thread_jobs == 2:
                break
            await asyncio.sleep(0)
        assert writer._thread_jobs == 2
        release.set()
        with pytest.raises(StorageError, match="nothing was written"):
            await asyncio.wait_for(third, timeout=10)
        writer._thread.join(10)
        assert not writer.usable and writer._thread_jobs == 0 and writer._stopped.done()
        if bug == "in its next wait":
            assert (await asyncio.wait_for(second, timeout=10)).content == "second"
        else:  # committed, but every answer to it fails
            assert not second.done()
            second.cancel()
        monkeypatch.undo()
        await memory.add("user", "fourth")
        assert [i.content for i in await memory.items()] == ["first", "second", "fourth"]
        assert await store.check() == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the bug
@pytest.mark.parametrize("where", ["taking", "answering"])
async def test_writes_in_the_hands_of_a_thread_that_dies_are_answered(
    db_path: Path, monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """A writer thread that dies by itself (a bug) with writes in its hands answers them
    too, that they may or may not be stored: it dies having taken them from the queue (so
    they never ran), or having committed them but before answering (so they are stored)."""
    take = sqlite_writer.SqliteWriter._next_batch
    answer = sqlite_writer.answer_all
    batches = 0  # the thread's, counted from its start: the first is "first"'s

    def take_then_die(self: sqlite_writer.SqliteWriter, batch: list[Job]) -> bool:
        nonlocal batches
        batches += 1
        if batches == 1:
            return take(self, batch)
        batch.append(self._jobs.get())
        raise RuntimeError("a bug in the writer thread")

    def die_answering(batch: list[Job], outcomes: list[tuple[object, bool]]) -> None:
        nonlocal batches
        if threading.current_thread().name == "memstore-writer":
            batches += 1
            if batches == 2:
                raise RuntimeError("a bug in the writer thread")
        answer(batch, outcomes)

    if where == "taking":  # patched before the thread starts: it takes "first" as usual
        monkeypatch.setattr(sqlite_writer.SqliteWriter, "_next_batch", take_then_die)
    else:
        monkeypatch.setattr(sqlite_writer, "answer_all", die_answering)
    async with MemoryStore.open(db_path, settings=Settings(sqlite_loop_commit_ms=0)) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "first")
        writer = store.database.writer()
        assert writer is not None
        with pytest.raises(StorageError, match="may or may not be stored"):
            await asyncio.wait_for(memory.add("user", "second"), timeout=10)
        writer._thread.join(10)
        assert not writer.usable and writer._thread_jobs == 0
        monkeypatch.undo()
        await memory.add("user", "third")
        stored = [i.content for i in await memory.items()]
        assert stored == (["first", "third"] if where == "taking" else ["first", "second", "third"])
        assert await store.check() == []


@pytest.mark.filterwarnings("ignore::pytest.PytestUnhandledThreadExceptionWarning")  # the bug
async def test_a_thread_that_fails_to_answer_as_it_stops_still_reports_stopping(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Whatever happens while the thread answers what it leaves, it closes its connection and
    tells close() that it stopped: a store's close() never waits for it forever."""
    async with MemoryStore.open(db_path, settings=Settings(sqlite_loop_commit_ms=0)) as store:
        await store.session("s", estimator=WordEstimator(), limits=LIMITS).add("user", "first")
        writer = store.database.writer()
        assert writer is not None

        def broken(jobs: object) -> list[Job]:
            raise RuntimeError("a bug while the thread stops")

        monkeypatch.setattr(sqlite_writer, "take_queued", broken)
        writer._jobs.put(None)
        writer._thread.join(10)
        assert not writer._thread.is_alive() and writer._stopped.done()
        assert not writer.usable


def _fork_in_c() -> int:
    """fork(2) called from C, as a pre-forking server or an extension may: no at-fork hooks."""
    return int(ctypes.CDLL(None, use_errno=True).fork())


@pytest.mark.parametrize("fork", [os.fork, _fork_in_c], ids=["os.fork", "fork in C"])
def test_a_forked_child_writes_through_a_writer_of_its_own(
    db_path: Path, fork: Callable[[], int]
) -> None:
    """The parent's writer thread is not in a forked child, and its connections must not be
    used there: the child makes a writer of its own, however it was forked."""

    async def opened() -> tuple[MemoryStore, object]:
        store = await MemoryStore.open(db_path)
        await store.session("s", estimator=WordEstimator(), limits=LIMITS).add("user", "parent")
        return store, store.database.writer()

    store, parents = asyncio.run(opened())
    try:
        pid = fork()
        if pid == 0:  # the child: exit 0 only if it wrote through a new writer
            signal.alarm(10)
            code = 1

            async def child() -> None:
                nonlocal code
                memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
                await memory.add("user", "child")
                code = 0 if store.database.writer() is not parents else 2

            try:
                asyncio.run(child())
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
        assert parents.usable  # type: ignore[attr-defined]
    finally:
        asyncio.run(store.close())

    async def contents() -> list[str]:
        async with MemoryStore.open(db_path) as reopened:
            memory = reopened.session("s", estimator=WordEstimator(), limits=LIMITS)
            return [item.content for item in await memory.items()]

    assert asyncio.run(contents()) == ["parent", "child"]
