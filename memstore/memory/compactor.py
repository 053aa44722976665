"""One session's compaction run: the lease, a snapshot, the summarizer, the commit.

In order, each step with no transaction open between them:

1. take the session's lease (:mod:`memstore.memory.lease_runner`); if another worker holds
   it, stop and say who (it is compacting right now);
2. while the lease is held, a heartbeat renews it every third of its length; if a renewal
   finds the lease taken over, the run stops (the summarizer is cancelled) and commits
   nothing;
3. read a snapshot, plan phases 1-3 around one summarizer call (:mod:`memstore.core.policy`);
4. commit the plan under compare-and-swap (:mod:`memstore.db.compaction`); a lost race
   re-plans, up to :data:`MAX_COMPACTION_ROUNDS` plans per run.

A run that ends without committing gives the lease back. Each call (an append's trigger, a
``compact()``) is one ``memstore.compact`` span while the application traces
(:mod:`memstore.memory.tracing`), carrying the figures of the last report it committed.

:meth:`Compactor.run_manual` is what ``compact()`` uses: while another worker holds the
lease it waits (the lease runner's back-off) until the lease is free or the wait runs out,
then runs as if it had been called alone. Its default bound,
:func:`wait_bound`, is one summarizer call plus one lease: the longest a live holder keeps
the lease for one compaction, and the longest a dead holder elsewhere keeps it at all.
"""

from __future__ import annotations

import asyncio
import logging
import math
import os
import time
from dataclasses import replace
from functools import partial
from typing import TYPE_CHECKING, Any

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
from memstore.core.values import MemoryLimits
from memstore.db import compaction
from memstore.db.lease import Lease, LeaseHolder
from memstore.db.reads import read_fold_start, utcnow
from memstore.errors import (
    CompactionConflictError,
    MemstoreError,
    ValidationError,
)
from memstore.extraction.protocols import Summarizer, summarizer_name
from memstore.memory.lease_runner import Heartbeat, LeaseRunner, lease_held
from memstore.memory.tracing import COMPACT, MemorySpan, start

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable

    from memstore.memory.context import SessionContext

log = logging.getLogger("memstore")

#: Plans one run may make (lost races and follow-up compactions together) before it gives
#: up: the winner already bounded the session, and the next append will look again.
MAX_COMPACTION_ROUNDS = 4

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
        context: The session (:class:`~memstore.memory.context.SessionContext`).
        summarizer: Phase 2's summarizer.
        notify: Tells the handle's observers about a committed report.
    """

    def __init__(
        self,
        context: SessionContext,
        summarizer: Summarizer,
        notify: Callable[[CompactionReport], Awaitable[None]],
    ) -> None:
        self._context = context
        self._leases = LeaseRunner(context)
        self._summarizer = summarizer
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

    async def after_append(self, total: int, user_turns: int, duplicate: bool) -> None:
        """Compact if an append that left the session at ``total`` tokens and ``user_turns``
        user turns since the last compaction sets a trigger off (a repeated key's does not).

        Never raises: the append committed, and a failure here is logged (raising would
        invite a retry that stores the item twice). A lease held by another worker is no
        failure: that worker is compacting this session right now.
        """
        fault_point("after-append")
        trigger = None if duplicate else compaction_trigger(self._context.limits, total, user_turns)
        if trigger is None:
            return
        try:
            await self.run(trigger)
        except MemstoreError as error:
            log.warning(
                "memstore: compaction of %s after an append failed (%s); it will be retried",
                self._context.session_id,
                error,
            )
        except Exception:  # a bug, not an expected failure: loud in the log, not in add()
            log.exception(
                "memstore: compaction of %s after an append failed; it will be retried",
                self._context.session_id,
            )

    def _span(self, trigger: str) -> MemorySpan:
        span = start(COMPACT, conversation=self._context.session_id)
        span.set("memstore.compaction.trigger", trigger)
        return span

    async def _rounds(self, trigger: str, deadline: float | None = None) -> Outcome:
        last: CompactionReport | None = None
        attempt = 1  # plans made for the compaction being attempted (1 + lost races)
        for _ in range(MAX_COMPACTION_ROUNDS):
            # Until one commits, a caller that waits waits for the lease in every round.
            wait = 0.0 if deadline is None or last is not None else deadline - _now()
            outcome = await self._once(trigger, attempt, max(0.0, wait))
            if isinstance(outcome, CompactionConflictError):
                # Lost the race, or the lease (paused or cut off past it): nothing written.
                log.info("memstore: %s; re-planning", outcome)
                attempt += 1
                continue
            if not isinstance(outcome, CompactionReport):
                return last if last is not None else outcome
            last, attempt = outcome, 1
            if trigger == "manual" or outcome.after_tokens < self._context.limits.hard:
                return last
            trigger = "hard_limit"  # appends during the compaction refilled it
        return last

    async def run_manual(self, *, wait: bool, timeout: float) -> CompactionReport | None:
        """A ``compact()`` call: waiting up to ``timeout`` seconds for another worker's
        compaction (``wait``), then compacting as if called alone; or not waiting.

        Raises:
            LeaseHeldError: not ``wait``, and another worker holds the lease.
        """
        session_id = self._context.session_id
        with self._span("manual") as span:
            outcome = await self._rounds("manual", _now() + timeout if wait else None)
            span.compacted(outcome)
            if not isinstance(outcome, LeaseHolder):
                return outcome
            if not wait:
                raise lease_held(session_id, outcome)
            span.fail(f"gave up after waiting {timeout:g}s for the lease")
        log.warning(
            "memstore: compact() of %s gave up after waiting %gs for the compaction of %s "
            "(its lease runs %.1fs more); nothing was compacted",
            session_id,
            timeout,
            outcome.owner,
            outcome.expires_in,
        )
        return None

    async def _once(
        self, trigger: str, attempt: int, wait: float
    ) -> Outcome | CompactionConflictError:
        lease = await self._leases.take(wait=wait)
        if not isinstance(lease, Lease):
            return lease
        try:
            report = await self._leases.hold(
                lease,
                partial(self._plan_and_commit, trigger, attempt, lease),
                committed=lambda done: done is not None,
            )
        except CompactionConflictError as conflict:
            return conflict
        if report is not None:
            await self._notify(report)
        return report

    async def _plan_and_commit(
        self, trigger: str, attempt: int, lease: Lease, heartbeat: Heartbeat
    ) -> CompactionReport | None:
        context = self._context
        started = utcnow()
        snap = await context.snapshot()
        if snap is None:
            return None
        fault_point("after-snapshot")
        force = trigger in ("manual", "summarize_every")
        if not force and needs_compaction(snap, context.limits) is None:
            return None  # someone else's compaction already brought it down
        # The fold resumes the last summary written, even one phase 3 set aside for room,
        # and reads what phase 3 evicted unread since (a fold reads at most a full session).
        written, unfolded = await context.database.run_read(
            partial(read_fold_start, session_id=snap.session_id, max_tokens=context.limits.hard)
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
            context.database,
            plan,
            compaction.CommitContext(
                owner=context.worker.id,
                lease_token=lease.token,
                trigger=trigger,
                summarizer=summarizer_name(self._summarizer) if seconds else None,
                limits=context.limits,
                worker_host=context.worker.host,
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
        count = self._context.count
        draft = start_plan(snap, self._context.limits, force=force, drop_noise=drop_noise)
        new_summary, error, seconds, usage = None, None, None, None
        timeout = self._context.settings.summarizer_timeout_s
        if draft.candidates:
            room = summary_room(draft.budget, draft.remaining, draft.candidates)
            began = time.perf_counter()
            try:
                call = self._summarizer(
                    snap.fold_from,
                    snap.fold_items(draft.candidates),
                    max_tokens=room,
                    count_tokens=count,
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
        plan = finish_plan(draft, count, new_summary=new_summary, summary_error=error)
        return plan, seconds, usage


def _now() -> float:
    return asyncio.get_running_loop().time()
