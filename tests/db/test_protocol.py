"""The compaction protocol step by step: lease, fencing, compare-and-swap, concurrent appends."""

from __future__ import annotations

import sqlite3
from dataclasses import replace
from pathlib import Path

import pytest
from conftest import DatabaseClock, table_counts
from sqlalchemy import Connection, event, update

from memstore import CompactionConflictError, MemoryLimits, MemoryStore, StorageError, WordEstimator
from memstore.core.policy import CompactionPlan, plan_compaction
from memstore.core.values import Fate
from memstore.db import compaction, lease, reads
from memstore.db.compaction import CommitContext
from memstore.db.tables import items

#: Compactions here are forced: filling a session never reaches the hard limit.
LIMITS = MemoryLimits(hard=100_000, target=30, keep_recent=1)


@pytest.fixture
async def store(any_store: MemoryStore) -> MemoryStore:
    """The protocol must hold on SQLite and on PostgreSQL alike."""
    return any_store


count = WordEstimator().count


async def filled(store: MemoryStore, n: int = 6) -> None:
    memory = store.session("p", limits=LIMITS, estimator=WordEstimator())
    for i in range(n):
        await memory.add("user", f"item {i} has five words")


async def take(
    store: MemoryStore, owner: str, clock: DatabaseClock | None = None, at: float = 0.0
) -> int | None:
    """The lease's token if ``owner`` gets it (at time ``at`` of ``clock``), else ``None``."""
    if clock is not None:
        clock.now = at
    got = await lease.acquire_lease(store.database, "p", owner, 10.0)
    return got.token if isinstance(got, lease.Lease) else None


async def plan_as(
    store: MemoryStore, owner: str, clock: DatabaseClock | None = None, at: float = 0.0
) -> tuple[int, CompactionPlan]:
    token = await take(store, owner, clock, at)
    assert token is not None
    snap = await reads.snapshot(store.database, "p")
    assert snap is not None
    plan = plan_compaction(
        snap, LIMITS, count, lambda prev, items, **room: f"by {owner} {token}", force=True
    )
    return token, plan


def ctx(owner: str, token: int) -> CommitContext:
    return CommitContext(
        owner=owner,
        lease_token=token,
        trigger="manual",
        summarizer="t",
        limits=LIMITS,
        worker_host="h",
        worker_pid=1,
        started_at=reads.utcnow(),
        summarize_seconds=0.0,
        attempts=1,
    )


async def test_a_held_lease_is_not_granted_twice(
    store: MemoryStore, db_clock: DatabaseClock
) -> None:
    await filled(store)
    assert await take(store, "w1", db_clock, 100.0) == 1
    assert await take(store, "w2", db_clock, 105.0) is None
    assert await take(store, "w2", db_clock, 111.0) == 2


async def test_fencing_rejects_the_same_worker_after_its_lease_expired(
    store: MemoryStore, db_clock: DatabaseClock
) -> None:
    await filled(store)
    old_token, old_plan = await plan_as(store, "w1", db_clock, 100.0)
    new_token, new_plan = await plan_as(store, "w1", db_clock, 111.0)  # expired, re-acquired
    before = await store.session_info("p")
    with pytest.raises(CompactionConflictError):
        await compaction.commit_compaction(store.database, old_plan, ctx("w1", old_token))
    assert await store.session_info("p") == before  # nothing written
    report = await compaction.commit_compaction(store.database, new_plan, ctx("w1", new_token))
    assert report.compaction_count == 1


async def test_a_taken_over_lease_fences_the_old_holder(
    store: MemoryStore, db_clock: DatabaseClock
) -> None:
    await filled(store)
    token1, plan1 = await plan_as(store, "w1", db_clock, 100.0)
    token2, plan2 = await plan_as(store, "w2", db_clock, 111.0)
    await compaction.commit_compaction(store.database, plan2, ctx("w2", token2))
    with pytest.raises(CompactionConflictError) as raised:
        await compaction.commit_compaction(store.database, plan1, ctx("w1", token1))
    assert (raised.value.expected, raised.value.actual) == (0, 1)
    assert [r.summary_action for r in await (await store.attach("p")).reports()] == ["replaced"]
    assert await store.check() == []


async def test_a_plan_commits_at_most_once(store: MemoryStore, db_clock: DatabaseClock) -> None:
    await filled(store)
    token, plan = await plan_as(store, "w1", db_clock, 100.0)
    await compaction.commit_compaction(store.database, plan, ctx("w1", token))
    with pytest.raises(CompactionConflictError):
        await compaction.commit_compaction(store.database, plan, ctx("w1", token))
    assert (await store.session_info("p")).compaction_count == 1


async def test_appends_during_a_compaction_are_kept_and_counted(
    store: MemoryStore, db_clock: DatabaseClock
) -> None:
    await filled(store)
    token, plan = await plan_as(store, "w1", db_clock, 100.0)
    memory = store.session("p", limits=LIMITS, estimator=WordEstimator())
    late = [await memory.add("user", f"late {i} arrives meanwhile") for i in range(3)]
    report = await compaction.commit_compaction(store.database, plan, ctx("w1", token))
    active = [i.id for i in await memory.items()]
    assert active[-3:] == [i.id for i in late]
    assert report.after_tokens == await memory.estimated_tokens()
    assert report.after_tokens == plan.after_tokens + 3 * (4 + 4)
    assert await store.check() == []


async def three_fates(store: MemoryStore, n: int = 12) -> tuple[int, CompactionPlan]:
    """A plan removing items of every fate (dropped, summarized, evicted), by hand."""
    await filled(store, n)
    token, plan = await plan_as(store, "w1")
    active = plan.snapshot.items
    dropped, summarized, evicted = active[:3], active[3:7], active[7:10]
    return token, replace(
        plan,
        kept=active[10:],
        dropped=tuple(item.id for item in dropped),
        summarized=tuple(item.id for item in summarized),
        evicted=tuple(item.id for item in evicted),
        removed_cost=sum(item.cost for item in active[:10]),
    )


async def test_every_removed_item_is_marked_with_its_own_fate_across_chunks(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two ids per statement: the 10 removed items take 2 + 2 + 2 statements.
    monkeypatch.setattr(compaction, "MARK_CHUNK", 2)
    token, plan = await three_fates(store)
    report = await compaction.commit_compaction(store.database, plan, ctx("w1", token))
    assert (report.items_dropped, report.items_summarized, report.items_evicted) == (3, 4, 3)
    memory = store.session("p", limits=LIMITS, estimator=WordEstimator())
    forgotten = {item.id: item for item in await memory.forgotten_items()}
    assert {item_id: forgotten[item_id].fate for item_id in plan.removed} == {
        item_id: Fate(fate) for item_id, fate in plan.removed.items()
    }
    assert {item.removed_by for item in forgotten.values()} == {1}
    assert [item.id for item in await memory.items()] == [item.id for item in plan.kept]
    assert await store.check() == []


async def test_an_item_removed_outside_the_compaction_rolls_the_commit_back(
    store: MemoryStore,
) -> None:
    """The row counts must add up: one item of the plan is no longer active (the ledger edited
    by hand), so its UPDATE matches nothing and the whole commit is undone."""
    token, plan = await three_fates(store)
    victim = plan.evicted[-1]

    await store.database.run_write(
        lambda conn: conn.execute(update(items).where(items.c.id == victim).values(fate="dropped"))
    )
    before = await table_counts(store), await store.session_info("p")
    with pytest.raises(CompactionConflictError) as raised:
        await compaction.commit_compaction(store.database, plan, ctx("w1", token))
    assert (raised.value.expected, raised.value.actual) == (10, 9)
    assert (await table_counts(store), await store.session_info("p")) == before
    memory = store.session("p", limits=LIMITS, estimator=WordEstimator())
    assert [item.removed_by for item in await memory.forgotten_items()] == [None]


async def test_a_compaction_of_more_ids_than_sqlites_oldest_parameter_limit(
    tmp_path: Path,
) -> None:
    """SQLite builds before 3.32 allow 999 parameters a statement: 1,100 items marked at once
    would not bind there; in chunks of MARK_CHUNK they do."""

    def limit(dbapi_connection: sqlite3.Connection, *_: object) -> None:
        dbapi_connection.setlimit(sqlite3.SQLITE_LIMIT_VARIABLE_NUMBER, 999)

    async with MemoryStore.open(tmp_path / "m.db"):
        pass  # created and migrated: the store below opens it without writing
    async with MemoryStore.open(tmp_path / "m.db") as store:
        # Before the first write: the writer thread checks its connection out then.
        event.listen(store.database.sync_engine, "checkout", limit)
        await filled(store, 1_101)

        def too_many(conn: Connection) -> None:  # the limit bites on the writer's connection
            conn.exec_driver_sql(f"SELECT {', '.join('?' * 1000)}", tuple([0] * 1000))

        with pytest.raises(StorageError):
            await store.database.run_write(too_many)
        token, plan = await plan_as(store, "w1")
        assert len(plan.summarized) == 1_100 > compaction.MARK_CHUNK
        report = await compaction.commit_compaction(store.database, plan, ctx("w1", token))
        assert report.items_summarized == 1_100
        memory = store.session("p", limits=LIMITS, estimator=WordEstimator())
        assert len(await memory.forgotten_items()) == 1_100
        assert await store.check() == []
