"""The compaction lease: short, renewed by its holder, taken over at once from a dead holder
of the same host, judged by the database's clock, and never silent about who holds it."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
from collections.abc import Sequence
from pathlib import Path

import pytest
from clients import memstore_cli
from conftest import DatabaseClock, write_lock_held
from sqlalchemy import update

from memstore import (
    LeaseHeldError,
    MemoryItem,
    MemoryLimits,
    MemoryStore,
    Settings,
    WordEstimator,
)
from memstore.db import lease
from memstore.db.tables import sessions
from memstore.processes import ProcessIdentity, start_time

LIMITS = MemoryLimits(hard=10_000, target=40, keep_recent=2)


async def fill(store: MemoryStore, n: int = 8) -> None:
    memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
    for i in range(n):
        await memory.add("user", f"message {i} with a few more words")


async def quick(previous: str | None, items: Sequence[MemoryItem]) -> str:
    return f"summary of {len(items)} items"


def handle(store: MemoryStore, summarizer: object = quick) -> object:
    return store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=summarizer)  # type: ignore[arg-type]


async def set_holder(store: MemoryStore, **columns: object) -> None:
    """Write a lease row by hand: another worker's, as the database would hold it."""
    values = {"lease_token": sessions.c.lease_token + 1, **columns}
    await store.database.run_write(
        lambda conn: conn.execute(update(sessions).where(sessions.c.id == "s").values(**values))
    )


# -- a holder that died -----------------------------------------------------------------------

#: A worker that takes the lease and then hangs in its summarizer, saying who it is.
STUCK_WORKER = """
import asyncio, sys
from memstore import MemoryLimits, MemoryStore, WordEstimator
LIMITS = MemoryLimits(hard=10_000, target=40, keep_recent=2)
async def stuck(previous, items):
    print("summarizing", flush=True)
    await asyncio.Event().wait()
async def main():
    async with MemoryStore.open(sys.argv[1]) as store:
        print(store.worker_id, flush=True)
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=stuck)
        await memory.compact()
asyncio.run(main())
"""


async def test_a_holder_killed_in_its_summarizer_is_replaced_at_once(backend_url: str) -> None:
    async with MemoryStore.open(backend_url) as store:
        await fill(store)
    worker = subprocess.Popen(
        [sys.executable, "-c", STUCK_WORKER, backend_url], stdout=subprocess.PIPE, text=True
    )
    assert worker.stdout is not None
    dead_id = await asyncio.to_thread(worker.stdout.readline)
    assert await asyncio.to_thread(worker.stdout.readline) == "summarizing\n"
    worker.send_signal(signal.SIGKILL)
    await asyncio.to_thread(worker.wait, 30)
    async with MemoryStore.open(backend_url) as store:  # the default, 10 s lease
        held = await lease.lease_holder(store.database, "s")
        assert held is not None and held.owner == dead_id.strip() and held.expires_in > 5
        report = await handle(store).compact()  # type: ignore[attr-defined]
        assert report is not None  # not LeaseHeldError: the holder is gone, no wait
        assert report.took_over_from == dead_id.strip()
        shown = await handle(store).reports()  # type: ignore[attr-defined]
        assert shown[-1].took_over_from == dead_id.strip()
        assert await store.check() == []


async def test_a_pid_that_now_belongs_to_another_process_is_not_taken_for_alive(
    store: MemoryStore,
) -> None:
    await fill(store)
    other = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        started = start_time(other.pid)
        assert started is not None, "this test needs /proc"
        host = ProcessIdentity.current().host
        # The holder's pid is alive, but a process that started then is another one.
        await set_holder(
            store, lease_owner="ghost", lease_host=host, lease_pid=other.pid,
            lease_started=started + 1, lease_expires_at=10.0**10,
        )  # fmt: skip
        report = await handle(store).compact()  # type: ignore[attr-defined]
        assert report is not None and report.took_over_from == "ghost"
        # The same pid with its true start time is a live holder: it is left alone.
        await set_holder(
            store, lease_owner="alive", lease_host=host, lease_pid=other.pid,
            lease_started=started, lease_expires_at=10.0**10,
        )  # fmt: skip
        with pytest.raises(LeaseHeldError) as held:
            await handle(store).compact(wait=False)  # type: ignore[attr-defined]
        assert held.value.holder == "alive" and held.value.pid == other.pid
    finally:
        other.kill()
        other.wait()


async def test_a_holder_on_another_host_is_waited_for_until_its_lease_runs_out(
    store: MemoryStore, db_clock: DatabaseClock
) -> None:
    await fill(store)
    await set_holder(
        store, lease_owner="far:1:x", lease_host="elsewhere", lease_pid=1,
        lease_started=None, lease_expires_at=db_clock.now + 8,
    )  # fmt: skip
    with pytest.raises(LeaseHeldError) as held:
        await handle(store).compact(wait=False)  # type: ignore[attr-defined]
    assert (held.value.holder, held.value.host) == ("far:1:x", "elsewhere")
    assert held.value.expires_in == pytest.approx(8)
    assert "far:1:x" in str(held.value) and "8.0s" in str(held.value)
    db_clock.now += 9  # its lease ran out: abandoned
    report = await handle(store).compact()  # type: ignore[attr-defined]
    assert report is not None and report.took_over_from == "far:1:x"


# -- one clock --------------------------------------------------------------------------------


async def test_a_worker_whose_clock_runs_ahead_takes_no_live_lease(
    store: MemoryStore, monkeypatch: pytest.MonkeyPatch
) -> None:
    await fill(store)
    taken = await lease.acquire_lease(store.database, "s", "far:1:x", 10.0)
    assert isinstance(taken, lease.Lease)
    await set_holder(store, lease_host="elsewhere", lease_token=sessions.c.lease_token)
    real = __import__("time").time
    monkeypatch.setattr("time.time", lambda: real() + 20)  # this worker's clock, 20 s ahead
    with pytest.raises(LeaseHeldError):
        await handle(store).compact(wait=False)  # type: ignore[attr-defined]


# -- heartbeats -------------------------------------------------------------------------------


class Gate:
    """A summarizer that waits at a gate the test opens."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.open = asyncio.Event()
        self.cancelled = False

    async def __call__(self, previous: str | None, items: Sequence[MemoryItem]) -> str:
        self.entered.set()
        try:
            await self.open.wait()
        except asyncio.CancelledError:
            self.cancelled = True
            raise
        return "summary after the wait"


async def test_a_holder_renews_its_lease_while_its_summarizer_runs(db_path: Path) -> None:
    settings = Settings(lease_s=1.0)
    async with MemoryStore.open(db_path, settings=settings) as store:
        await fill(store)
        gate = Gate()
        running = asyncio.create_task(handle(store, gate).compact())  # type: ignore[attr-defined]
        await gate.entered.wait()
        await asyncio.sleep(2.5)  # two and a half leases: only heartbeats keep it
        other = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=quick)
        with pytest.raises(LeaseHeldError):
            await other.compact(wait=False)
        gate.open.set()
        report = await running
        assert report is not None and report.took_over_from is None
        assert await store.check() == []


async def test_a_heartbeat_that_meets_a_locked_database_harms_nothing(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    settings = Settings(lease_s=3.0, busy_timeout_s=0.2)
    async with MemoryStore.open(db_path, settings=settings) as store:
        await fill(store)
        gate = Gate()
        running = asyncio.create_task(handle(store, gate).compact())  # type: ignore[attr-defined]
        await gate.entered.wait()
        async with write_lock_held(str(db_path)):
            await asyncio.sleep(1.5)  # a heartbeat (every 1 s) times out on the lock
        gate.open.set()
        report = await running
        assert report is not None
        assert await store.check() == []
    assert "renewing the lease of s failed" in caplog.text  # a heartbeat did meet the lock


async def test_a_compaction_cancelled_by_its_caller_is_cancelled_and_gives_the_lease_back(
    db_path: Path,
) -> None:
    async with MemoryStore.open(db_path) as store:
        await fill(store)
        gate = Gate()
        running = asyncio.create_task(handle(store, gate).compact())  # type: ignore[attr-defined]
        await gate.entered.wait()
        running.cancel()
        with pytest.raises(asyncio.CancelledError):
            await running
        assert gate.cancelled
        assert await lease.lease_holder(store.database, "s") is None  # released
        assert (await store.session_info("s")).compaction_count == 0
        report = await handle(store).compact()  # type: ignore[attr-defined]
        assert report is not None and report.took_over_from is None


async def test_a_holder_whose_lease_was_taken_stops_and_commits_nothing(
    db_path: Path,
) -> None:
    settings = Settings(lease_s=0.6)
    async with MemoryStore.open(db_path, settings=settings) as store:
        await fill(store)
        gate = Gate()
        running = asyncio.create_task(handle(store, gate).compact(wait=False))  # type: ignore[attr-defined]
        await gate.entered.wait()
        # Another worker took the lease over (this one paused past it, say).
        await set_holder(
            store, lease_owner="thief", lease_host="elsewhere", lease_expires_at=10.0**10
        )
        with pytest.raises(LeaseHeldError) as held:
            await running  # its next heartbeat finds the new token: it stops
        assert held.value.holder == "thief"
        assert gate.cancelled  # the summarizer was stopped, not waited for
        assert (await store.session_info("s")).compaction_count == 0
        assert await store.check() == []


async def test_a_refused_commit_says_the_lease_was_taken_over(store: MemoryStore) -> None:
    from memstore import LeaseLostError
    from memstore.core.policy import plan_compaction
    from memstore.db import compaction, reads

    await fill(store)
    taken = await lease.acquire_lease(store.database, "s", "w1", 10.0)
    assert isinstance(taken, lease.Lease)
    snap = await reads.snapshot(store.database, "s")
    assert snap is not None
    plan = plan_compaction(
        snap, LIMITS, WordEstimator().count, lambda p, i, **room: "s", force=True
    )
    await set_holder(store, lease_owner="w2")
    context = compaction.CommitContext(
        "w1", taken.token, "manual", None, LIMITS, "h", os.getpid(), reads.utcnow(), 0.0, 1
    )
    with pytest.raises(LeaseLostError) as refused:
        await compaction.commit_compaction(store.database, plan, context)
    assert "taken over" in str(refused.value) and "w2" in str(refused.value)


async def test_the_cli_shows_who_holds_the_lease_and_compact_says_so(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        await fill(store)
        await set_holder(
            store, lease_owner="far:7:x", lease_host="elsewhere", lease_pid=7,
            lease_expires_at=10.0**10,
        )  # fmt: skip
    shown = await asyncio.to_thread(memstore_cli, db_path, "show", "s")
    assert "compaction lease: held by far:7:x (pid 7 on elsewhere)" in shown.stdout
    compacted = await asyncio.to_thread(memstore_cli, db_path, "compact", "s")
    assert compacted.returncode == 1
    assert (
        compacted.stderr.strip().splitlines() == [compacted.stderr.strip()]
        and "another worker (far:7:x) holds the compaction lease" in compacted.stderr
    )
    async with MemoryStore.open(db_path) as store:
        await set_holder(store, lease_expires_at=0.0)  # it expired, never released
    shown = await asyncio.to_thread(memstore_cli, db_path, "show", "s", "--json")
    assert '"owner": "far:7:x"' in shown.stdout
    compacted = await asyncio.to_thread(memstore_cli, db_path, "compact", "s")
    assert compacted.returncode == 0
    reports = await asyncio.to_thread(memstore_cli, db_path, "reports", "s", "--json")
    assert '"took_over_from": "far:7:x"' in reports.stdout


def test_a_killed_process_its_parent_has_not_reaped_yet_runs_no_more() -> None:
    from memstore.processes import is_running

    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    started = start_time(child.pid)
    assert is_running(child.pid, started)
    child.send_signal(signal.SIGKILL)
    for _ in range(500):  # until the kernel has made it a zombie (bounded: 5 s)
        if not is_running(child.pid, started):
            break
        __import__("time").sleep(0.01)
    assert not is_running(child.pid, started)  # a zombie: its pid still exists
    child.wait()
