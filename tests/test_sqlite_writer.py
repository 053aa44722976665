"""SQLite's writer thread: group commit keeps every caller's own guarantee."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from memstore import IdempotencyConflictError, MemoryLimits, MemoryStore, WordEstimator
from memstore.db import sqlite_writer

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
