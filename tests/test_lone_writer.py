"""A writer alone on the loop (nothing else can join its commit) commits at once, with no
future and no batch (``SqliteWriter._commit_alone``): its outcome, its failures, a refusal by
the loop, a close() meanwhile, and interruptions.

Where each commit ran, and the warmed-up stores, come from ``loopsupport.py``.
"""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from loopsupport import Commits, Warm, close_during_loop_commits

from memstore import ByteEstimator, EstimatorMismatchError
from memstore.db import append as append_module
from memstore.db import loop_commits, sqlite_writer


class _Interrupt(BaseException):
    """Stands for KeyboardInterrupt (the real one would stop the test run)."""


@pytest.fixture
def alone(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """How many writes took the lone writer's way (so the tests below test it)."""
    taken: list[int] = []
    commit_alone = sqlite_writer.SqliteWriter._commit_alone

    def counted(self, *args):  # type: ignore[no-untyped-def]
        taken.append(1)
        return commit_alone(self, *args)

    monkeypatch.setattr(sqlite_writer.SqliteWriter, "_commit_alone", counted)
    return taken


async def test_appends_one_after_another_each_commit_alone_on_the_loop(
    warm: Warm, commits: Commits, alone: list[int]
) -> None:
    store, memory = warm
    items = [await memory.add("user", f"m {i}") for i in range(5)]
    assert [item.seq for item in items] == [1, 2, 3, 4, 5]
    assert commits == [(True, 1)] * 5 and len(alone) == 5
    assert [item.content for item in await memory.items()] == [f"m {i}" for i in range(5)]
    assert await store.check() == []


async def test_a_lone_append_that_fails_raises_it_and_writes_nothing(
    warm: Warm, commits: Commits, alone: list[int]
) -> None:
    store, memory = warm
    await memory.add("user", "counted in words")
    other = store.session("s", estimator=ByteEstimator(), limits=memory.limits)
    with pytest.raises(EstimatorMismatchError):
        await other.add("user", "counted in bytes")
    assert commits == [(True, 1), (True, 1)] and len(alone) == 2  # rolled back, on the loop
    assert [item.content for item in await memory.items()] == ["counted in words"]
    await memory.add("user", "and the next one")  # nothing was left held
    assert await store.check() == []


async def test_a_lone_append_the_loop_refuses_is_committed_by_the_thread(
    warm: Warm, commits: Commits, alone: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    _store, memory = warm
    monkeypatch.setattr(loop_commits.LoopCommits, "commit", lambda self, writes: None)
    item = await asyncio.wait_for(memory.add("user", "by the thread"), timeout=10)
    assert commits == [(False, 1)] and len(alone) == 1
    assert [stored.id for stored in await memory.items()] == [item.id]


async def test_close_during_a_lone_commit_lets_it_finish(
    warm: Warm, commits: Commits, alone: list[int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """close() on another thread lands while the lone writer commits: the loop's connection
    is closed by then, so the thread commits the write before it stops; nothing is refused."""
    store, memory = warm
    writer = close_during_loop_commits(store, monkeypatch)
    item = await asyncio.wait_for(memory.add("user", "written while closing"), timeout=10)
    await asyncio.wait_for(asyncio.wrap_future(writer.close()), timeout=10)  # it did stop
    assert commits == [(False, 1)] and len(alone) == 1
    assert not writer.usable and writer._leading == 0
    assert [stored.id for stored in await memory.items()] == [item.id]  # reads need no writer


@pytest.mark.parametrize("where", ["in its statements", "after its COMMIT"])
async def test_an_interruption_reaches_the_lone_caller_and_holds_nothing(
    warm: Warm, commits: Commits, alone: list[int], monkeypatch: pytest.MonkeyPatch, where: str
) -> None:
    """Ctrl-C in a lone commit is raised to its caller, the only one. Before COMMIT nothing
    is stored; after it the write is stored once. Either way the writer holds no lock and
    no leader, so later writes and close() go on."""
    store, memory = warm
    await memory.add("user", "the session exists")
    writer = store.database.writer()
    assert writer is not None and writer._on_loop is not None
    interrupted: list[bool] = []

    def once(real: Any) -> Any:
        def interrupting(*args: Any) -> Any:
            if not interrupted:
                interrupted.append(True)
                raise _Interrupt
            return real(*args)

        return interrupting

    if where == "in its statements":  # between the BUMP and the INSERT
        monkeypatch.setattr(append_module, "_appended", once(append_module._appended))
    else:  # the bookkeeping after the COMMIT
        monkeypatch.setattr(writer._on_loop, "observe", once(writer._on_loop.observe))
    with pytest.raises(_Interrupt):
        await memory.add("user", "interrupted")
    monkeypatch.undo()
    stored = [item.content for item in await memory.items()]
    assert stored == ["the session exists"] + (["interrupted"] if "after" in where else [])
    assert writer._leading == 0 and len(alone) == 2
    await memory.add("user", "and the next one")
    assert commits[-1] == (True, 1)
    assert await store.check() == []
    await asyncio.wait_for(asyncio.wrap_future(writer.close()), timeout=10)
