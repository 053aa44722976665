"""One session's compaction run: the lease, a snapshot, the summarizer, the commit.

In order, each step with no transaction open between them:

1. take the session's lease (:mod:`memstore.db.lease`); if another worker holds it, stop
   and say who (it is compacting right now);
2. while the lease is held, a heartbeat renews it every third of its length; if a renewal
   finds the lease taken over, the run stops (the summarizer is cancelled) and commits
   nothing;
3. read a snapshot, plan phases 1-3 around one summarizer call (:mod:`memstore.core.policy`);
4. commit the plan under compare-and-swap (:mod:`memstore.db.compaction`); a lost race
   re-plans, up to :data:`MAX_COMPACTION_ROUNDS` plans per run.

A run that ends without committing gives the lease back. Each call (an append's trigger, a
``compact()``) is one ``memstore.compact`` span while the application traces
(:mod:`memstore.memory.tracing`), carrying the figures of the last report it committed.

:meth:`Compactor.run_when_free` is what ``compact()`` uses: while another worker holds the
lease it polls (backing off to :data:`MAX_WAIT_POLL_S`) until the lease is free or the wait
runs out, then runs as if it had been called alone. Its default bound,
:func:`wait_bound`, is one summarizer call plus one lease: the longest a live holder keeps
the lease for one compaction, and the longest a dead holder elsewhere keeps it at all.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import os
import time
from collections.abc import Awaitable, Callable, Coroutine
from dataclasses import replace
from functools import partial
from typing import Any, TypeVar

from memstore.config import Settings, fault_point
from memstore.core.policy import (
    CompactionPlan,
    Snapshot,
    finish_plan,
    needs_compaction,
    start_plan,
)
from memstore.core.records import CompactionReport
from memstore.core.redaction import redact
from memstore.core.summary_room import summary_room
from memstore.core.tokens import TokenEstimator
from memstore.core.values import MemoryLimits
from memstore.db import compaction
from memstore.db.engine import Database
from memstore.db.lease import Lease, LeaseHolder, acquire_lease, release_lease, renew_lease
from memstore.db.reads import read_fold_start, utcnow
from memstore.errors import (
    CompactionConflictError,
    LeaseHeldError,
    LeaseLostError,
    StorageError,
    ValidationError,
)
from memstore.extraction.protocols import Summarizer, summarizer_name
from memstore.memory.tracing import COMPACT, MemorySpan, start
from memstore.memory.worker import Worker

log = logging.getLogger("memstore")
T = TypeVar("T")

#: Plans one run may make (lost races and follow-up compactions together) before it gives
#: up: the winner already bounded the session, and the next append will look again.
MAX_COMPACTION_ROUNDS = 4
#: Heartbeats per lease length: two may fail (a busy database) before the lease runs out.
HEARTBEATS_PER_LEASE = 3

#: First and longest pause between looks at a lease another worker holds: short enough that
#: a waiting compact() starts soon after the holder finishes, long enough to cost nothing.
FIRST_WAIT_POLL_S = 0.05
MAX_WAIT_POLL_S = 0.5

Outcome = CompactionReport | LeaseHolder | None


def wait_bound(settings: Settings, given: object = None) -> float:
    """How long ``compact()`` waits for another worker's compaction: ``given`` seconds, or
    by default one summarizer call plus one lease (``summarizer_timeout_s + lease_s``).

    Raises:
        ValidationError: naming ``wait_timeout``: not a finite number of seconds >= 0.
    """
    if given is None:
        return settings.summarizer_timeout_s + settings.lease_s
    if (
        isinstance(given, bool)
        or not isinstance(given, (int, float))
        or not math.isfinite(given)
        or given < 0
    ):
        raise ValidationError("wait_timeout", f"must be seconds >= 0, got {given!r}")
    return float(given)


class Heartbeat:
    """Renews a lease in the background; cancels the work it guards once the lease is lost."""

    def __init__(self, db: Database, session_id: str, owner: str, token: int, lease_s: float):
        self._renew: Callable[[], Awaitable[bool]] = lambda: renew_lease(
            db, session_id, owner, token, lease_s
        )
        self._interval = lease_s / HEARTBEATS_PER_LEASE
        self._lease_s = lease_s
        self._session_id = session_id
        self._guarded: asyncio.Future[Any] | None = None
        self._task: asyncio.Task[None] | None = None
        self.lost = False

    async def __aenter__(self) -> Heartbeat:
        self._task = asyncio.create_task(self._beat())
        return self

    async def __aexit__(self, *_: object) -> None:
        assert self._task is not None
        self._task.cancel()
        try:
            await self._task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if current is not None and current.cancelling():
                raise  # the cancellation was the caller's too, not only the heartbeat's

    async def _beat(self) -> None:
        loop = asyncio.get_running_loop()
        renewed_at = loop.time()
        while True:
            await asyncio.sleep(self._interval)
            try:
                renewed = await self._renew()
            except Exception as error:  # a busy database: the next beat tries again...
                log.warning(
                    "memstore: renewing the lease of %s failed: %s", self._session_id, error
                )
                # ...unless a whole lease went by unrenewed: another worker may hold it now.
                renewed = loop.time() - renewed_at < self._lease_s
            else:
                renewed_at = loop.time()
            if not renewed:
                self.lost = True
                if self._guarded is not None:
                    self._guarded.cancel()
                return

    def check(self) -> None:
        """Raise :class:`LeaseLostError` if the heartbeat lost the lease (taken over, or not
        renewed for a whole lease time)."""
        if self.lost:
            raise LeaseLostError(self._session_id, taken_by=None, token=None)

    async def guard(self, work: Coroutine[Any, Any, T]) -> T:
        """Await ``work``, cancelled (and :class:`LeaseLostError` raised) if the lease is lost."""
        if self.lost:
            work.close()  # never started: closed, or asyncio warns it was never awaited
            self.check()
        task = asyncio.ensure_future(work)
        self._guarded = task
        try:
            return await task
        except asyncio.CancelledError:
            current = asyncio.current_task()
            if self.lost and (current is None or not current.cancelling()):
                self.check()
            raise
        finally:
            self._guarded = None


def compaction_trigger(limits: MemoryLimits, total: int, user_turns: int) -> str | None:
    """What an append that left the session at ``total`` tokens and ``user_turns`` user turns
    since the last compaction sets off: ``"hard_limit"``, ``"summarize_every"``, or nothing."""
    if total >= limits.hard:
        return "hard_limit"
    every = limits.summarize_every
    if every is not None and user_turns >= every:
        return "summarize_every"
    return None


class Compactor:
    """Runs compactions of one session for its handle (:class:`memstore.SessionMemory`).

    Args:
        snapshot: Reads the session's snapshot (checking its estimator).
        notify: Tells the handle's observers about a committed report.
    """

    def __init__(
        self,
        *,
        database: Database,
        settings: Settings,
        worker: Worker,
        session_id: str,
        limits: MemoryLimits,
        estimator: TokenEstimator,
        summarizer: Summarizer,
        snapshot: Callable[[], Awaitable[Snapshot | None]],
        notify: Callable[[CompactionReport], Awaitable[None]],
    ) -> None:
        self._db = database
        self._settings = settings
        self._worker = worker
        self._session_id = session_id
        self._limits = limits
        self._estimator = estimator
        self._summarizer = summarizer
        self._snapshot = snapshot
        self._notify = notify

    async def run(self, trigger: str) -> Outcome:
        """Compact until the session is below its hard limit (or once, for ``"manual"``).

        Returns:
            The last committed report; else the :class:`LeaseHolder` when another worker
            holds the lease; else ``None`` (nothing to compact).
        """
        with self._span(trigger) as span:
            outcome = await self._rounds(trigger)
            span.compacted(outcome)
            return outcome

    def _span(self, trigger: str) -> MemorySpan:
        span = start(COMPACT, conversation=self._session_id)
        span.set("memstore.compaction.trigger", trigger)
        return span

    async def _rounds(self, trigger: str) -> Outcome:
        last: CompactionReport | None = None
        attempt = 1  # plans made for the compaction being attempted (1 + lost races)
        for _ in range(MAX_COMPACTION_ROUNDS):
            outcome = await self._once(trigger, attempt)
            if isinstance(outcome, CompactionConflictError):
                # Lost the race, or the lease (paused or cut off past it): nothing written.
                log.info("memstore: %s; re-planning", outcome)
                attempt += 1
                continue
            if not isinstance(outcome, CompactionReport):
                return last if last is not None else outcome
            last, attempt = outcome, 1
            if trigger == "manual" or outcome.after_tokens < self._limits.hard:
                return last
            trigger = "hard_limit"  # appends during the compaction refilled it
        return last

    async def run_when_free(self, trigger: str, *, timeout: float) -> Outcome:
        """:meth:`run` (in the caller's span), waiting up to ``timeout`` seconds while another
        worker holds the lease.

        Returns:
            As :meth:`run`; the :class:`LeaseHolder` only when the wait ran out.
        """
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        pause = FIRST_WAIT_POLL_S
        while True:
            outcome = await self._rounds(trigger)
            left = deadline - loop.time()
            if not isinstance(outcome, LeaseHolder) or left <= 0:
                return outcome
            await asyncio.sleep(min(pause, left))
            pause = min(pause * 2, MAX_WAIT_POLL_S)

    async def run_manual(self, *, wait: bool, timeout: float) -> CompactionReport | None:
        """A ``compact()`` call: waiting for another worker's compaction (``wait``), or not.

        Raises:
            LeaseHeldError: not ``wait``, and another worker holds the lease.
        """
        with self._span("manual") as span:
            if wait:
                outcome = await self.run_when_free("manual", timeout=timeout)
            else:
                outcome = await self._rounds("manual")
            span.compacted(outcome)
            if not isinstance(outcome, LeaseHolder):
                return outcome
            if not wait:
                raise LeaseHeldError(
                    self._session_id,
                    holder=outcome.owner,
                    host=outcome.host,
                    pid=outcome.pid,
                    expires_in=outcome.expires_in,
                )
            span.fail(f"gave up after waiting {timeout:g}s for the lease")
        log.warning(
            "memstore: compact() of %s gave up after waiting %gs for the compaction of %s "
            "(its lease runs %.1fs more); nothing was compacted",
            self._session_id,
            timeout,
            outcome.owner,
            outcome.expires_in,
        )
        return None

    async def _once(self, trigger: str, attempt: int) -> Outcome | CompactionConflictError:
        owner = self._worker.id
        lease = await acquire_lease(self._db, self._session_id, owner, self._settings.lease_s)
        if not isinstance(lease, Lease):
            return lease
        committed = False
        try:
            async with Heartbeat(
                self._db, self._session_id, owner, lease.token, self._settings.lease_s
            ) as heartbeat:
                report = await self._plan_and_commit(trigger, attempt, owner, lease, heartbeat)
            committed = report is not None
        except CompactionConflictError as conflict:
            return conflict
        finally:
            if not committed:
                with contextlib.suppress(StorageError):  # it expires anyway
                    await release_lease(self._db, self._session_id, owner, lease.token)
        if report is not None:
            await self._notify(report)
        return report

    async def _plan_and_commit(
        self, trigger: str, attempt: int, owner: str, lease: Lease, heartbeat: Heartbeat
    ) -> CompactionReport | None:
        started = utcnow()
        snap = await self._snapshot()
        if snap is None:
            return None
        fault_point("after-snapshot")
        force = trigger in ("manual", "summarize_every")
        if not force and needs_compaction(snap, self._limits) is None:
            return None  # someone else's compaction already brought it down
        # The fold resumes the last summary written, even one phase 3 set aside for room,
        # and reads what phase 3 evicted unread since (a fold reads at most a full session).
        written, unfolded = await self._db.run_read(
            partial(read_fold_start, session_id=snap.session_id, max_tokens=self._limits.hard)
        )
        summary_written = None if written == snap.summary else written
        snap = replace(snap, summary_written=summary_written, unfolded=unfolded)
        plan, seconds, usage = await heartbeat.guard(
            self.plan(snap, force=force, drop_noise=trigger != "summarize_every")
        )
        if not plan.changes_anything:
            return None
        fault_point("before-commit")
        heartbeat.check()
        report = await compaction.commit_compaction(
            self._db,
            plan,
            compaction.CommitContext(
                owner=owner,
                lease_token=lease.token,
                trigger=trigger,
                summarizer=summarizer_name(self._summarizer) if seconds else None,
                limits=self._limits,
                worker_host=self._worker.host,
                worker_pid=os.getpid(),
                started_at=started,
                summarize_seconds=seconds or 0.0,
                attempts=attempt,
                usage=usage,
                took_over_from=lease.took_over_from,
            ),
        )
        fault_point("after-commit")
        return report

    async def plan(
        self, snap: Snapshot, *, force: bool, drop_noise: bool
    ) -> tuple[CompactionPlan, float | None, dict[str, Any] | None]:
        """Phases 1-3 around one summarizer call; no transaction is open here."""
        draft = start_plan(snap, self._limits, force=force, drop_noise=drop_noise)
        new_summary, error, seconds, usage = None, None, None, None
        timeout = self._settings.summarizer_timeout_s
        if draft.candidates:
            room = summary_room(draft.budget, draft.remaining, draft.candidates)
            began = time.perf_counter()
            try:
                call = self._summarizer(
                    snap.fold_from,
                    snap.fold_items(draft.candidates),
                    max_tokens=room,
                    count_tokens=self._estimator.count,
                )
                new_summary = await asyncio.wait_for(call, timeout=timeout)
                usage = getattr(new_summary, "usage", None)
            except TimeoutError:
                error = f"timed out after {timeout:g}s"
            except Exception as exc:  # any summarizer failure is recorded, never raised
                # Stored in the report for good and shown by `memstore reports`: no secrets.
                error = redact(f"{type(exc).__name__}: {exc}")
            seconds = time.perf_counter() - began
            if new_summary is not None and not isinstance(new_summary, str):
                error, new_summary = f"summarizer returned {type(new_summary).__name__}", None
        plan = finish_plan(
            draft, self._estimator.count, new_summary=new_summary, summary_error=error
        )
        return plan, seconds, usage
