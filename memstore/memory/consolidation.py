"""Consolidation: distil what a session said into long-term entries of its scope.

``await memory.consolidate()`` (and, for a scoped session, every compaction) runs one
consolidation of the session, in this order, with no transaction open between the steps:

1. take the session's lease, the one compactions take, as they take it
   (:mod:`memstore.memory.lease_runner`: waiting for a compaction that holds it, up to
   :data:`LEASE_WAIT_S_FACTOR` lease times), and keep it alive with a heartbeat;
2. read the items no earlier run consumed (after a compaction: only those that left working
   memory);
3. extract facts from them (an :class:`~memstore.Extractor`: the offline
   :class:`~memstore.OfflineExtractor` by default, or a model's), told the budget;
4. read what the slots those facts name hold, and decide each fact's fate
   (:func:`memstore.extraction.slots.decide`: people win, nothing twice, newer supersedes
   older, what the user stated always, the rest within a budget of the tokens consumed);
5. commit the entries, the run's report and the record of what it consumed in one
   transaction, fenced by the lease (:func:`memstore.db.consolidation_runs.commit_run`); if a
   person wrote a slot meanwhile, plan again from step 4.

A dry run stops after step 4 and writes nothing (it takes no lease). A run with nothing new
to consume writes nothing at all, so consolidating twice is a no-op. While the application
traces, each run is an ``upsert_memory`` span with its report's counts
(:mod:`memstore.memory.tracing`).
"""

from __future__ import annotations

import dataclasses
import functools
import os
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from memstore.core.consolidation_report import ConsolidationReport
from memstore.core.values import ITEM_OVERHEAD_TOKENS, MemoryItem
from memstore.db import consolidation_runs as runs
from memstore.db.lease import Lease, LeaseHolder
from memstore.db.reads import utcnow
from memstore.errors import (
    SessionNotFoundError,
    StorageError,
    ValidationError,
)
from memstore.extraction.protocols import Extractor, FactLike
from memstore.extraction.slots import (
    SHORT_CONVERSATION_TOKENS,
    budget_for,
    decide,
    fact_slot,
    provenance,
)
from memstore.memory.lease_runner import LeaseRunner, lease_held
from memstore.memory.tracing import UPSERT_MEMORY, start

if TYPE_CHECKING:
    from memstore.memory.context import SessionContext

#: How long an asked-for run waits for a compaction (or another run) holding the lease: a
#: compaction takes well under a lease time, and a dead holder's lease expires within one.
LEASE_WAIT_S_FACTOR = 2.0
#: Plans one run may make when people keep writing its slots under it.
MAX_PLANS = 3


class Consolidator:
    """Runs consolidations of one session for its handle.

    Args:
        context: The session (:class:`~memstore.memory.context.SessionContext`); its
            ``scope`` is the handle's (``None``: the session's recorded one).
        extractor: Finds the facts.
    """

    def __init__(self, context: SessionContext, extractor: Extractor) -> None:
        self._context = context
        self._db = context.database
        self._session_id = context.session_id
        self._leases = LeaseRunner(context)
        self.extractor = extractor

    async def run(
        self,
        *,
        dry_run: bool = False,
        forgotten_only: bool = False,
        compaction: int | None = None,
        wait: bool = True,
    ) -> ConsolidationReport | None:
        """One run (module docstring).

        Args:
            dry_run: Decide, report, write nothing.
            forgotten_only: Consume only items that left working memory (after a compaction).
            compaction: The compaction that triggered the run, for provenance.
            wait: Wait for a lease another worker holds (else return ``None`` at once).

        Returns:
            The report (``number`` is ``None`` when nothing was committed); ``None`` when
            ``wait`` is false and another worker holds the lease.

        Raises:
            SessionNotFoundError: no such session.
            ValidationError: the session has no scope (``scope``), or another than the
                handle's.
            LeaseHeldError: another worker kept the lease past the wait.
        """
        with start(UPSERT_MEMORY, operation=UPSERT_MEMORY, conversation=self._session_id) as span:
            report = await self._run(dry_run, forgotten_only, compaction, wait)
            span.consolidated(report)
            return report

    async def _run(
        self, dry_run: bool, forgotten_only: bool, compaction: int | None, wait: bool
    ) -> ConsolidationReport | None:
        scope = await self._resolve_scope()
        if dry_run:
            pending = await runs.unconsumed_items(
                self._db, self._session_id, forgotten_only=forgotten_only
            )
            return await self._plan(scope, pending, compaction, dry_run=True)
        lease = await self._take_lease(wait)
        if lease is None:
            return None
        return await self._leases.hold(
            lease,
            lambda heartbeat: heartbeat.guard(
                self._consume(scope, lease, forgotten_only, compaction)
            ),
            committed=lambda report: report.number is not None,
        )

    async def reports(self) -> list[ConsolidationReport]:
        """Every committed run of the session, oldest first."""
        return [
            ConsolidationReport.from_dict(record)
            for record in await runs.run_reports(self._db, self._session_id)
        ]

    async def _resolve_scope(self) -> str:
        found, recorded = await runs.session_scope(self._db, self._session_id)
        if not found:
            raise SessionNotFoundError(self._session_id)
        given = self._context.scope
        if given is not None and recorded is not None and recorded != given:
            raise ValidationError(
                "scope",
                f"session {self._session_id!r} belongs to {recorded!r}, not {given!r}",
            )
        scope = recorded or given
        if scope is None:
            raise ValidationError(
                "scope",
                f"session {self._session_id!r} belongs to no scope: open it with "
                "store.session(id, scope='user:...') to consolidate it",
            )
        return scope

    async def _take_lease(self, wait: bool) -> Lease | None:
        lease_s = self._context.settings.lease_s
        taken = await self._leases.take(wait=lease_s * LEASE_WAIT_S_FACTOR if wait else 0.0)
        if taken is None:
            raise SessionNotFoundError(self._session_id)
        if isinstance(taken, LeaseHolder):
            if wait:
                raise lease_held(self._session_id, taken)
            return None
        return taken

    async def _consume(
        self,
        scope: str,
        lease: Lease,
        forgotten_only: bool,
        compaction: int | None,
    ) -> ConsolidationReport:
        pending = await runs.unconsumed_items(
            self._db, self._session_id, forgotten_only=forgotten_only
        )
        facts = await self._extract(pending)
        for _attempt in range(MAX_PLANS):
            report = await self._decide(scope, pending, facts, compaction, dry_run=False)
            if not pending:
                return report
            record = runs.RunRecord(
                session_id=self._session_id,
                scope=scope,
                owner=self._context.worker.id,
                lease_token=lease.token,
                extractor=self.extractor.name,
                compaction=compaction,
                worker=report.worker,
                started_at=report.started_at,
                finished_at=utcnow(),
                seqs=report.items,
                source_tokens=report.source_tokens,
                entry_tokens=report.entry_tokens,
            )
            sources = _sources(self._session_id, report, pending)
            try:
                number = await runs.commit_run(
                    self._db,
                    record,
                    report.decisions,
                    sources,
                    functools.partial(_stored_report, report),
                )
            except runs.RunConflict:
                continue
            return _numbered(report, number)
        raise StorageError(
            f"consolidation of {self._session_id!r}: long-term entries kept changing under it"
        )

    async def _plan(
        self,
        scope: str,
        pending: Sequence[MemoryItem],
        compaction: int | None,
        *,
        dry_run: bool,
    ) -> ConsolidationReport:
        facts = await self._extract(pending)
        return await self._decide(scope, pending, facts, compaction, dry_run=dry_run)

    async def _extract(self, pending: Sequence[MemoryItem]) -> Sequence[FactLike]:
        """The extractor's facts, told the budget the session has left."""
        if not pending:
            return []
        source = sum(item.estimated_tokens + ITEM_OVERHEAD_TOKENS for item in pending)
        consumed, written = await runs.session_totals(self._db, self._session_id)
        room = max(0, budget_for(consumed + source) - written)
        return await self.extractor(pending, max_tokens=room, count_tokens=self._context.count)

    async def _decide(
        self,
        scope: str,
        pending: Sequence[MemoryItem],
        facts: Sequence[FactLike],
        compaction: int | None,
        *,
        dry_run: bool,
    ) -> ConsolidationReport:
        started = utcnow()
        keys = [fact_slot(fact) for fact in facts]
        slots = await runs.slot_states(self._db, scope, keys, started)
        source_tokens = sum(item.estimated_tokens + ITEM_OVERHEAD_TOKENS for item in pending)
        # Cumulative over the session's runs: what a compaction's small batch could not
        # afford, the next run (or the end of the conversation) may.
        consumed, written = await runs.session_totals(self._db, self._session_id)
        budget = max(0, budget_for(consumed + source_tokens) - written)
        short = consumed + source_tokens <= SHORT_CONVERSATION_TOKENS
        decisions = decide(facts, slots, budget=budget, count=self._context.count, short=short)
        return ConsolidationReport(
            session_id=self._session_id,
            scope=scope,
            number=None,
            dry_run=dry_run,
            extractor=self.extractor.name,
            compaction=compaction,
            items=tuple(item.seq for item in pending),
            source_tokens=source_tokens,
            budget=budget,
            decisions=tuple(decisions),
            started_at=started,
            finished_at=utcnow(),
            worker=f"{self._context.worker.host}:{os.getpid()}",
        )


def _stored_report(report: ConsolidationReport, number: int) -> dict[str, Any]:
    return _numbered(report, number).to_dict()


def _numbered(report: ConsolidationReport, number: int) -> ConsolidationReport:
    return dataclasses.replace(report, number=number)


def _sources(
    session_id: str, report: ConsolidationReport, pending: Sequence[MemoryItem]
) -> dict[str, dict[str, Any]]:
    removed_by = {item.seq: item.removed_by for item in pending}
    out: dict[str, dict[str, Any]] = {}
    for decision in report.decisions:
        if decision.writes:
            compactions = [removed_by.get(seq) for seq in decision.seqs]
            known = [number for number in compactions if number is not None]
            out[decision.key] = provenance(
                session_id,
                decision,
                run=None,
                compaction=max(known) if known else report.compaction,
                extractor=report.extractor,
            )
    return out
