"""A Hypothesis state machine: random interleavings against a pure-Python model of the ledger.

The machine drives the database-level protocol directly (lease, snapshot, plan, commit) with a
model clock, so it can interleave what real workers rarely hit on cue: a commit from a stale
snapshot, a commit after the lease was taken over, a retried append, a reopen in between.
After every step the database must agree with the model and pass ``store.check()``.
"""

from __future__ import annotations

import asyncio
import shutil
import tempfile
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from conftest import POSTGRES_URL, migrated_postgres, migrated_sqlite
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, precondition, rule
from sqlalchemy import Float, literal

from memstore import (
    CompactionConflictError,
    IdempotencyConflictError,
    MemoryLimits,
    MemoryStore,
    WordEstimator,
)
from memstore.core.policy import CompactionPlan, plan_compaction
from memstore.db import compaction, lease, reads
from memstore.db.compaction import CommitContext

LIMITS = MemoryLimits(hard=10_000, target=40, keep_recent=2)
LEASE_S = 10.0
COUNT = WordEstimator().count


@dataclass
class Pending:
    """A compaction planned but not yet committed."""

    owner: str
    token: int
    plan: CompactionPlan


class LedgerMachine(RuleBasedStateMachine):
    #: Where the ledger lives: a fresh SQLite file per example (see LedgerMachinePostgres).
    postgres = False

    def __init__(self) -> None:
        super().__init__()
        self.dir = Path(tempfile.mkdtemp(prefix="memstore-ledger-"))
        self.loop = asyncio.new_event_loop()
        if self.postgres:
            assert POSTGRES_URL is not None
            self.url = self.run(migrated_postgres(POSTGRES_URL))
        else:
            self.url = str(migrated_sqlite(self.dir / "ledger.db"))
        self.store = self.run(MemoryStore.open(self.url))
        self.memory = self.store.session("s", limits=LIMITS, estimator=WordEstimator())
        # The model.
        self.active: list[str] = []  # item ids, oldest first
        self.fates: dict[str, str] = {}
        self.keys: dict[str, tuple[str, str]] = {}  # key -> (item id, content)
        self.compactions = 0
        self.lease: tuple[str, int, float] | None = None  # owner, token, expires
        self.tokens = 0
        self.clock = 1000.0
        self.pending: list[Pending] = []
        # Leases read the database's clock; here they read the model's.
        self._real_now = lease.database_now
        lease.database_now = lambda _conn: literal(self.clock, Float)  # type: ignore[assignment]

    def run(self, awaitable: Any) -> Any:
        return self.loop.run_until_complete(awaitable)

    # -- appends ---------------------------------------------------------------------------

    @rule(words=st.integers(1, 12), key=st.none() | st.sampled_from(["k1", "k2", "k3", "k4"]))
    def append(self, words: int, key: str | None) -> None:
        content = " ".join(["word"] * words) + f" #{len(self.fates) + len(self.active)}"
        if key is not None and key in self.keys and self.keys[key][1] != content:
            try:
                self.run(self.memory.add("user", content, idempotency_key=key))
            except IdempotencyConflictError:
                return
            raise AssertionError("reusing a key for other content must be refused")
        item = self.run(self.memory.add("user", content, idempotency_key=key))
        if key is not None:
            self.keys[key] = (item.id, content)
        self.active.append(item.id)

    @precondition(lambda self: bool(self.keys))
    @rule(data=st.data())
    def retry_append(self, data: st.DataObject) -> None:
        key = data.draw(st.sampled_from(sorted(self.keys)))
        item_id, content = self.keys[key]
        again = self.run(self.memory.add("user", content, idempotency_key=key))
        assert again.id == item_id  # the retry returns the first item, appends nothing

    # -- compaction protocol ---------------------------------------------------------------

    @rule(owner=st.sampled_from(["w1", "w1", "w2"]), fail=st.booleans())
    def start_compaction(self, owner: str, fail: bool) -> None:
        db = self.store.database
        got = self.run(lease.acquire_lease(db, "s", owner, LEASE_S))
        token = got.token if isinstance(got, lease.Lease) else None
        exists = bool(self.active or self.fates)  # the first append creates the session row
        free = exists and (self.lease is None or self.lease[2] < self.clock)
        if not free:
            assert token is None
            return
        self.tokens += 1
        assert token == self.tokens
        self.lease = (owner, token, self.clock + LEASE_S)
        snap = self.run(reads.snapshot(db, "s"))
        if snap is None:
            return

        def summarize(previous: str | None, items: object, **room: object) -> str:
            if fail:
                raise RuntimeError("summarizer failure")
            return f"summary {self.tokens}"

        plan = plan_compaction(snap, LIMITS, COUNT, summarize, force=True)
        self.pending.append(Pending(owner, token, plan))

    @rule(seconds=st.sampled_from([1.0, 6.0, 11.0]))
    def advance_clock(self, seconds: float) -> None:
        self.clock += seconds

    @precondition(lambda self: bool(self.pending))
    @rule(data=st.data())
    def commit(self, data: st.DataObject) -> None:
        pending = self.pending.pop(data.draw(st.integers(0, len(self.pending) - 1)))
        snap = pending.plan.snapshot
        expected_ok = (
            snap.compaction_count == self.compactions
            and self.lease is not None
            and self.lease[:2] == (pending.owner, pending.token)
        )
        ctx = CommitContext(
            owner=pending.owner,
            lease_token=pending.token,
            trigger="manual",
            summarizer="model",
            limits=LIMITS,
            worker_host="test",
            worker_pid=1,
            started_at=reads.utcnow(),
            summarize_seconds=0.0,
            attempts=1,
        )
        before = self.run(self.store.session_info("s"))
        try:
            report = self.run(compaction.commit_compaction(self.store.database, pending.plan, ctx))
        except CompactionConflictError:
            assert not expected_ok, "a valid commit was refused"
            after = self.run(self.store.session_info("s"))
            assert after == before  # the loser wrote nothing
            return
        assert expected_ok, "a stale or fenced-off commit was accepted"
        self.compactions += 1
        assert report.compaction_count == self.compactions
        self.lease = None
        for item_id, fate in report.removed.items():
            self.active.remove(item_id)
            self.fates[item_id] = fate

    @precondition(lambda self: bool(self.pending))
    @rule()
    def release(self) -> None:
        pending = self.pending.pop()
        self.run(lease.release_lease(self.store.database, "s", pending.owner, pending.token))
        if self.lease is not None and self.lease[:2] == (pending.owner, pending.token):
            self.lease = None

    @rule()
    def reopen(self) -> None:
        self.run(self.store.close())
        self.store = self.run(MemoryStore.open(self.url))
        self.memory = self.store.session("s", limits=LIMITS, estimator=WordEstimator())

    # -- what must always hold -------------------------------------------------------------

    @invariant()
    def database_matches_model(self) -> None:
        if not self.active and not self.fates:
            return
        items = self.run(self.memory.items())
        assert [i.id for i in items] == self.active
        forgotten = self.run(self.memory.forgotten_items())
        assert {i.id: i.fate for i in forgotten} == self.fates
        info = self.run(self.store.session_info("s"))
        assert info.compaction_count == self.compactions
        assert self.run(self.store.check()) == []

    def teardown(self) -> None:
        lease.database_now = self._real_now  # type: ignore[assignment]
        self.run(self.store.close())
        self.loop.close()
        shutil.rmtree(self.dir, ignore_errors=True)


LedgerMachine.TestCase.settings = settings(
    max_examples=30,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
TestLedger = LedgerMachine.TestCase


class LedgerMachinePostgres(LedgerMachine):
    """The same machine on PostgreSQL: the protocol must hold under READ COMMITTED too."""

    postgres = True


LedgerMachinePostgres.TestCase.settings = settings(
    max_examples=15,
    stateful_step_count=25,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)


@pytest.mark.skipif(not POSTGRES_URL, reason="PostgreSQL variant: set MEMSTORE_TEST_POSTGRES_URL")
class TestLedgerPostgres(LedgerMachinePostgres.TestCase):  # type: ignore[misc,valid-type]
    pass
