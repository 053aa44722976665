"""Shared by the tests of commits on the event loop: where each commit ran, and stores
whose writer commits on the loop already.

Each test records which thread ran every commit (``SqliteWriter._commit`` runs them all):
"on the loop" means on any thread but the writer's own (the one that runs an event loop).
Stores whose tests say where a commit runs get a budget no commit exceeds, however loaded
the machine, and are warmed up first (a new writer measures the disk on its thread before
it trusts the loop).
"""

from __future__ import annotations

import threading
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from memstore import MemoryLimits, MemoryStore, Settings, WordEstimator
from memstore.db import loop_commits, sqlite_writer
from memstore.session import SessionMemory

LIMITS = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)
#: Ten seconds: no commit of these tests takes that long, so only contention moves them.
GENEROUS = 10_000.0

Commits = list[tuple[bool, int]]


@pytest.fixture
def commits(monkeypatch: pytest.MonkeyPatch) -> Commits:
    """``(on an event loop's thread?, batch size)`` of every commit, in order."""
    recorded: Commits = []
    commit = sqlite_writer.SqliteWriter._commit

    def recording(self, conn, batch):  # type: ignore[no-untyped-def]
        recorded.append((threading.current_thread().name != "memstore-writer", len(batch)))
        return commit(self, conn, batch)

    monkeypatch.setattr(sqlite_writer.SqliteWriter, "_commit", recording)
    return recorded


def open_store(path: Path, **settings: object) -> MemoryStore:
    return MemoryStore.open(path, settings=Settings(**settings))  # type: ignore[arg-type,return-value]


async def warmed(store: MemoryStore, commits: Commits) -> SessionMemory:
    """Write until a commit runs on the loop, forget those commits, return session "s"."""
    warm_up = store.session("warm-up", estimator=WordEstimator(), limits=LIMITS)
    for i in range(20):
        await warm_up.add("user", f"warm-up {i}")
        if commits[-1][0]:
            break
    assert commits[-1][0], "the loop never took over"
    commits.clear()
    return store.session("s", estimator=WordEstimator(), limits=LIMITS)


Warm = tuple[MemoryStore, SessionMemory]


@pytest.fixture
async def warm(db_path: Path, commits: Commits) -> AsyncIterator[Warm]:
    """A store whose writer commits on the loop already, and its session "s"."""
    async with open_store(db_path, sqlite_loop_commit_ms=GENEROUS) as store:
        yield store, await warmed(store, commits)


async def opened(path: Path) -> MemoryStore:
    """A store with a budget no commit exceeds, opened (for tests that run their own loops)."""
    return await open_store(path, sqlite_loop_commit_ms=GENEROUS)


def close_during_loop_commits(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> sqlite_writer.SqliteWriter:
    """Make every loop commit first run ``close()`` on another thread, to its end, and return
    the store's writer. close() returns at once (the thread stops once no leader holds
    writes), and the loop's connection is closed by then: the thread commits instead."""
    writer = store.database.writer()
    assert writer is not None
    commit = loop_commits.LoopCommits.commit

    def closed_meanwhile(self, writes):  # type: ignore[no-untyped-def]
        closing = threading.Thread(target=writer.close)
        closing.start()
        closing.join(10)
        return commit(self, writes)

    monkeypatch.setattr(loop_commits.LoopCommits, "commit", closed_meanwhile)
    return writer
