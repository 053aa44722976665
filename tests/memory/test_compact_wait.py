"""``compact()`` while another process compacts: it waits its turn (bounded), then compacts as
if it had been called alone; ``wait=False`` keeps the immediate ``LeaseHeldError``."""

from __future__ import annotations

import asyncio
import logging
import subprocess
import sys
from collections.abc import Sequence

import pytest
from conftest import DatabaseClock
from sqlalchemy import update

from memstore import (
    LeaseHeldError,
    MemoryItem,
    MemoryLimits,
    MemoryStore,
    WordEstimator,
)
from memstore.db.tables import sessions

LIMITS = MemoryLimits(hard=10_000, target=60, keep_recent=2)

#: Another worker: takes the lease, says so, summarizes for a while, then commits.
SLOW_WORKER = """
import asyncio, sys
from memstore import MemoryLimits, MemoryStore, WordEstimator
LIMITS = MemoryLimits(hard=10_000, target=60, keep_recent=2)
async def slow(previous, items):
    print("summarizing", flush=True)
    await asyncio.sleep(float(sys.argv[2]))
    return "summary by the other worker"
async def main():
    async with MemoryStore.open(sys.argv[1]) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=slow)
        report = await memory.compact()
        print("committed", report.compaction_count, flush=True)
asyncio.run(main())
"""


async def mine(previous: str | None, items: Sequence[MemoryItem]) -> str:
    return f"my summary after {previous!r} of {len(items)} items"


async def fill(memory: object, start: int, n: int) -> None:
    for i in range(start, start + n):
        await memory.add("user", f"message {i}")  # type: ignore[attr-defined]


async def test_compact_waits_for_another_process_then_compacts_as_if_alone(
    backend_url: str,
) -> None:
    async with MemoryStore.open(backend_url) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=mine)
        await fill(memory, 0, 8)
        other = subprocess.Popen(
            [sys.executable, "-c", SLOW_WORKER, backend_url, "1.5"],
            stdout=subprocess.PIPE,
            text=True,
        )
        assert other.stdout is not None
        assert await asyncio.to_thread(other.stdout.readline) == "summarizing\n"
        await fill(memory, 8, 6)  # written while the other process summarizes
        report = await memory.compact()  # waits instead of raising LeaseHeldError
        out, _ = await asyncio.to_thread(other.communicate, timeout=60)
        assert other.returncode == 0 and out.strip() == "committed 1"
        assert report is not None
        assert report.compaction_count == 2  # ran after the other one, not instead of it
        assert report.trigger == "manual"
        # Forced toward the target, like a compact() called alone: the other worker's summary
        # was folded in, and what was written meanwhile (beyond keep_recent) summarized.
        assert await memory.summary() == "my summary after 'summary by the other worker' of 6 items"
        assert await memory.estimated_tokens() <= LIMITS.target
        assert len(await memory.items()) == LIMITS.keep_recent
        assert await store.check() == []


async def hold_lease_elsewhere(store: MemoryStore, expires_at: float) -> None:
    """Another host's worker holds the lease (its own host: never taken over early)."""
    await store.database.run_write(
        lambda conn: conn.execute(
            update(sessions)
            .where(sessions.c.id == "s")
            .values(
                lease_owner="far:1:x",
                lease_host="elsewhere",
                lease_pid=1,
                lease_expires_at=expires_at,
                lease_token=sessions.c.lease_token + 1,
            )
        )
    )


async def test_a_wait_that_runs_out_returns_none_and_says_why(
    store: MemoryStore, db_clock: DatabaseClock, caplog: pytest.LogCaptureFixture
) -> None:
    memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=mine)
    await fill(memory, 0, 8)
    await hold_lease_elsewhere(store, db_clock.now + 600)
    before = await memory.snapshot()
    with caplog.at_level(logging.WARNING, logger="memstore"):
        assert await memory.compact(wait_timeout=0.3) is None
    assert "far:1:x" in caplog.text and "compact" in caplog.text
    after = await memory.snapshot()
    assert after is not None and before is not None and after.version == before.version


async def test_wait_false_keeps_the_immediate_error(
    store: MemoryStore, db_clock: DatabaseClock
) -> None:
    memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=mine)
    await fill(memory, 0, 8)
    await hold_lease_elsewhere(store, db_clock.now + 8)
    with pytest.raises(LeaseHeldError) as held:
        await memory.compact(wait=False)
    assert held.value.holder == "far:1:x"


async def test_the_wait_ends_when_the_lease_runs_out(
    store: MemoryStore, db_clock: DatabaseClock
) -> None:
    memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=mine)
    await fill(memory, 0, 8)
    await hold_lease_elsewhere(store, db_clock.now + 8)
    waiting = asyncio.create_task(memory.compact(wait_timeout=30))
    await asyncio.sleep(0.3)
    assert not waiting.done()  # still waiting for the other host's lease
    db_clock.now += 9  # that worker died elsewhere: its lease runs out
    report = await asyncio.wait_for(waiting, 10)
    assert report is not None and report.took_over_from == "far:1:x"


@pytest.mark.parametrize("bad", [-1, float("nan"), "soon", True])
async def test_a_bad_wait_timeout_is_refused_by_name(store: MemoryStore, bad: object) -> None:
    from memstore import ValidationError

    memory = store.session("s", estimator=WordEstimator(), limits=LIMITS, summarizer=mine)
    with pytest.raises(ValidationError) as refused:
        await memory.compact(wait_timeout=bad)  # type: ignore[arg-type]
    assert refused.value.field == "wait_timeout"
