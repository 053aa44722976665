"""The gathering tick: a write that no other writer can join commits at once.

Before it commits on the event loop, a write yields the loop once so that writers ready in
the same tick join its commit (``SqliteWriter._may_be_joined`` decides). Where each commit
ran, and the warmed-up stores, come from ``loopsupport.py``.
"""

from __future__ import annotations

import asyncio
import itertools
import types
from pathlib import Path

import pytest
from loopsupport import GENEROUS, LIMITS, Commits, Warm, open_store, opened, warmed

from memstore import Settings, WordEstimator
from memstore.db import sqlite_writer, tick


async def test_a_lone_writer_commits_without_waiting_a_tick(warm: Warm, commits: Commits) -> None:
    """Nothing else ready on the loop: no writer can join, so none waits for one."""
    _, memory = warm
    polled: list[int] = []
    asyncio.get_running_loop().call_later(0, polled.append, 1)  # runs when the loop polls
    for i in range(5):
        await memory.add("user", f"message {i}")
    assert polled == []  # no append let the loop run a pass
    assert commits == [(True, 1)] * 5
    await asyncio.sleep(0.01)
    assert polled == [1]


async def test_a_tight_loop_of_appends_still_lets_the_loop_poll(
    warm: Warm, commits: Commits, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A run of skipped ticks lasts the loop-commit budget at most: timers and sockets still
    run that often. (The writer's clock advances 1 ms a reading: no disk makes it flaky.)"""
    store, memory = warm
    writer = store.database.writer()
    assert writer is not None
    writer._budget_s = 0.005  # the bound only; commits still go to the loop (GENEROUS)
    readings = itertools.count()
    monkeypatch.setattr(
        tick, "time", types.SimpleNamespace(perf_counter=lambda: next(readings) / 1000)
    )
    loop = asyncio.get_running_loop()
    passes = 0
    run_once = loop._run_once  # type: ignore[attr-defined]

    def counted() -> None:  # a callback would be a ready one, and change what it counts
        nonlocal passes
        passes += 1
        run_once()

    monkeypatch.setattr(loop, "_run_once", counted)
    for i in range(60):
        await memory.add("user", f"message {i}")
    assert 60 // 7 <= passes <= 60 // 4, passes  # about one pass a run of ~6 appends
    assert all(on_loop for on_loop, _ in commits)


async def test_two_stores_on_one_loop_both_skip_the_tick(
    db_path: Path, tmp_path: Path, commits: Commits
) -> None:
    """The run is the loop's, not the store's: another store's marker is no callback."""
    async with (
        open_store(db_path, sqlite_loop_commit_ms=GENEROUS) as one,
        open_store(tmp_path / "two.db", sqlite_loop_commit_ms=GENEROUS) as two,
    ):
        sessions = [await warmed(one, commits), await warmed(two, commits)]
        polled: list[int] = []
        asyncio.get_running_loop().call_later(0, polled.append, 1)  # runs at the next pass
        for i in range(6):
            await sessions[i % 2].add("user", f"message {i}")
        assert polled == []  # no append, to either store, made a pass
        assert commits == [(True, 1)] * 6


async def test_an_append_after_the_loop_ran_a_pass_skips_the_tick_too(
    warm: Warm, commits: Commits
) -> None:
    """The budget bounds a run of skips without a pass of the loop, not the time since the
    last tick: an agent appending once per model call skips it every time."""
    _, memory = warm
    writer = memory.store.database.writer()
    assert writer is not None
    writer._budget_s = 0.05  # the bound only (two commits never take that long)
    loop = asyncio.get_running_loop()
    for i in range(5):
        await asyncio.sleep(0.1)  # longer than the bound; the loop runs passes meanwhile
        polled: list[int] = []
        loop.call_later(0, polled.append, i)  # due now: runs at the loop's next pass
        await memory.add("user", f"message {i}")
        await memory.add("user", f"message {i} again")  # a pass before it would run it
        assert polled == [], i  # neither append made a pass
    assert commits == [(True, 1)] * 10


class _ForeignScheduling(asyncio.SelectorEventLoop):
    """A loop that schedules its callbacks elsewhere (as qasync's do through Qt)."""

    def call_soon(self, callback, *args, context=None):  # type: ignore[no-untyped-def]
        return super().call_soon(callback, *args, context=context)


def test_only_a_standard_loop_without_a_task_factory_may_skip_the_tick(tmp_path: Path) -> None:
    writer = sqlite_writer.SqliteWriter(tmp_path / "x.db", Settings(sqlite_loop_commit_ms=GENEROUS))
    loops = [asyncio.new_event_loop(), asyncio.new_event_loop(), _ForeignScheduling()]
    standard, with_factory, foreign = loops
    try:
        assert not writer._may_be_joined(standard)  # idle: no writer can join
        assert not writer._may_be_joined(standard)  # its own run marker does not count
        standard.call_soon(lambda: None)
        assert writer._may_be_joined(standard)  # another callback is due in this tick
        with_factory.set_task_factory(lambda loop, coro, **kwargs: asyncio.Task(coro, loop=loop))
        assert writer._may_be_joined(with_factory)  # eager tasks would start one by one
        assert writer._may_be_joined(foreign)  # its ready queue is not where it schedules
        assert writer._may_be_joined(types.SimpleNamespace())  # type: ignore[arg-type]  # uvloop
        idle = asyncio.new_event_loop()
        loops.append(idle)
        writer._gathering = [types.SimpleNamespace(), types.SimpleNamespace()]  # type: ignore[list-item]
        assert writer._may_be_joined(idle)  # another thread's loop gathers a write too
        writer._gathering = []
    finally:
        for loop in loops:
            loop.close()
        writer.close().result(timeout=10)


def test_a_run_left_by_a_stopped_loop_ends_with_that_loop(db_path: Path) -> None:
    """A loop stopped right after a skip never runs its run's marker. The thread's next loop
    starts a run of its own instead of continuing that one (holding the dead loop)."""
    store = asyncio.run(opened(db_path))
    memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)

    async def skip_then_stop() -> None:
        for i in range(20):  # until the loop commits (a new writer measures on its thread)
            await memory.add("user", f"warm-up {i}")
        asyncio.get_running_loop().stop()  # before the pass that would run the marker
        await asyncio.Event().wait()

    async def add_then_look() -> object:
        await memory.add("user", "on the next loop")
        return tick._RUN.loop  # before any pass (which ends the run)

    first, second = asyncio.new_event_loop(), asyncio.new_event_loop()
    try:
        with pytest.raises(RuntimeError, match="stopped before"):
            first.run_until_complete(skip_then_stop())
        assert tick._RUN.loop is first and tick._RUN.marker is not None
        assert second.run_until_complete(add_then_look()) is second  # its own run
    finally:
        for loop in (first, second):
            for task in asyncio.all_tasks(loop):
                task.cancel()
            loop.close()
        asyncio.run(store.close())
