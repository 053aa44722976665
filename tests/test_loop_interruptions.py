"""Interruptions (Ctrl-C) and failures around a commit on the event loop: raised once, on
the thread they hit; no write run twice; no caller left waiting; no lock kept.

Where each commit ran, and the warmed-up stores, come from ``loopsupport.py``.
"""

from __future__ import annotations

import asyncio
import threading
from typing import Any

import pytest
from loopsupport import Commits, Warm

from memstore import StorageError
from memstore.db import append as append_module
from memstore.db import writer_jobs


class _Interrupt(BaseException):
    """Stands for KeyboardInterrupt (the real one would stop the test run)."""


def _interrupted_once(results: list[object]) -> None:
    """The leader's caller got the interruption itself; the others, an error saying their
    write's fate is unknown (never the interruption: it may belong to another thread)."""
    leader, *others = results
    assert isinstance(leader, _Interrupt)
    for other in others:
        assert isinstance(other, StorageError) and isinstance(other.__cause__, _Interrupt)
        assert "may or may not be stored" in str(other)


@pytest.mark.parametrize("failure", [RuntimeError, _Interrupt])
async def test_a_begin_that_raises_leaves_no_writer_waiting_and_no_lock(
    warm: Warm,
    commits: Commits,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    failure: type[BaseException],
) -> None:
    """BEGIN on the loop fails with something other than a database error. An error: the
    thread commits the batch, as for any failure of the loop's connection, and a warning
    says so. An interruption (Ctrl-C): nothing is written. Either way the connection is let
    go, with any lock it took, and no caller is left waiting."""
    store, memory = warm
    await memory.add("user", "the session exists")
    writer = store.database.writer()
    assert writer is not None and writer._on_loop is not None
    on_loop = writer._on_loop
    on_loop._discard()  # the next loop commit opens a connection...

    class Failing:
        def execute(self, sql: str) -> None:
            raise failure  # ...whose BEGIN fails

        def close(self) -> None:
            pass

    monkeypatch.setattr(on_loop, "_open", Failing)
    adds = asyncio.gather(*(memory.add("user", f"m {i}") for i in range(3)), return_exceptions=True)
    results = await asyncio.wait_for(adds, timeout=10)  # a write left unanswered: a timeout
    assert on_loop._conn is None
    stored = [item.content for item in await memory.items()]
    if failure is _Interrupt:
        _interrupted_once(results)
        assert stored == ["the session exists"]
    else:
        assert [item.content for item in results] == ["m 0", "m 1", "m 2"]  # type: ignore[union-attr]
        assert commits[-1] == (False, 3)  # by the thread
        assert stored == ["the session exists", "m 0", "m 1", "m 2"]
        assert not on_loop.fast  # the thread keeps the writes a while, even at this budget
        assert "a commit on the event loop failed" in caplog.text
    assert await store.check() == []


async def test_an_interruption_during_a_statement_stops_the_whole_commit(
    warm: Warm, commits: Commits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Ctrl-C in one caller's statements is not that caller's failure: the batch is rolled
    back, and only the leader's caller gets the interruption raised."""
    store, memory = warm
    await memory.add("user", "the session exists")
    made: list[object] = []
    appended = append_module._appended  # runs between an append's BUMP and its INSERT

    def interrupting(*args: Any) -> object:
        made.append(args)
        if len(made) == 2:  # the second caller's, its BUMP run, its INSERT not yet
            raise _Interrupt
        return appended(*args)

    monkeypatch.setattr(append_module, "_appended", interrupting)
    adds = asyncio.gather(*(memory.add("user", f"m {i}") for i in range(3)), return_exceptions=True)
    results = await asyncio.wait_for(adds, timeout=10)
    monkeypatch.undo()
    _interrupted_once(results)
    assert commits[-1] == (True, 3)
    assert [item.content for item in await memory.items()] == ["the session exists"]
    assert await store.check() == []


async def test_an_interruption_after_the_commit_reaches_every_caller_once(
    warm: Warm, commits: Commits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Interrupted after its COMMIT (Ctrl-C in the bookkeeping that follows it), a loop
    commit must neither leave callers waiting nor be run again by the thread; each write is
    stored once."""
    store, memory = warm
    await memory.add("user", "the session exists")
    writer = store.database.writer()
    assert writer is not None and writer._on_loop is not None
    observe = writer._on_loop.observe
    interrupted: list[bool] = []

    def interrupting(seconds: float) -> None:
        if not interrupted and threading.current_thread().name != "memstore-writer":
            interrupted.append(True)
            raise _Interrupt
        observe(seconds)

    monkeypatch.setattr(writer._on_loop, "observe", interrupting)
    adds = asyncio.gather(*(memory.add("user", f"m {i}") for i in range(3)), return_exceptions=True)
    results = await asyncio.wait_for(adds, timeout=10)  # a write left unanswered: a timeout
    await asyncio.wrap_future(writer.close())  # whatever was queued to the thread has run
    _interrupted_once(results)
    assert commits[-1] == (True, 3)  # committed once, on the loop, and not again
    assert [item.content for item in await memory.items()] == [
        "the session exists", "m 0", "m 1", "m 2",
    ]  # fmt: skip
    assert await store.check() == []


async def test_an_interruption_while_answering_leaves_no_caller_waiting(
    warm: Warm, commits: Commits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Committed, then interrupted while the callers are being answered: those not answered
    yet hear that their write's fate is unknown (it is stored, once)."""
    store, memory = warm
    await memory.add("user", "the session exists")
    deliver = writer_jobs._deliver
    delivered: list[bool] = []

    def interrupting(future: asyncio.Future[object], outcome: object, failed: bool) -> None:
        delivered.append(True)
        if len(delivered) == 2:
            raise _Interrupt
        deliver(future, outcome, failed)

    monkeypatch.setattr(writer_jobs, "_deliver", interrupting)
    adds = asyncio.gather(*(memory.add("user", f"m {i}") for i in range(3)), return_exceptions=True)
    results = await asyncio.wait_for(adds, timeout=10)  # a write left unanswered: a timeout
    monkeypatch.undo()
    _interrupted_once(results)
    assert commits[-1] == (True, 3)
    assert [item.content for item in await memory.items()][1:] == ["m 0", "m 1", "m 2"]
    assert await store.check() == []
