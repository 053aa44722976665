"""What a session handle does with its scope: recall across it, consolidate into it.

A handle opened with ``scope="user:alice"`` belongs to that long-term scope (its first append
records it): the scope comes first among its ``ltm_scopes``, its recall spans the scope's
other sessions (:mod:`memstore.memory.cross_session_recall`), and ``consolidate()`` (and,
unless ``consolidate=False``, every compaction it commits) distils what it said into the
scope's entries (:mod:`memstore.memory.consolidation`).

:class:`Consolidating` is a base of :class:`~memstore.memory.session.SessionMemory`; it keeps
the consolidation machinery (:mod:`memstore.memory.consolidation`, which loads the fact
extractor) out of a handle until one is asked for, so ``memstore show`` never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from memstore.core.ltm_entries import validate_scope, validate_scopes
from memstore.core.validation import validate_flag

if TYPE_CHECKING:
    from memstore.config import Settings
    from memstore.core.consolidation_report import ConsolidationReport
    from memstore.core.records import CompactionReport
    from memstore.core.tokens import TokenEstimator
    from memstore.db import Database
    from memstore.extraction.protocols import Extractor
    from memstore.memory.consolidation import Consolidator
    from memstore.memory.worker import Worker


class Consolidating:
    """Consolidation for a session handle (the attributes below are the handle's)."""

    session_id: str
    scope: str | None
    settings: Settings
    worker: Worker
    estimator: TokenEstimator
    extractor: Extractor | None
    _db: Database
    _consolidator: Consolidator | None = None

    @staticmethod
    def scoping(scope: str | None, extractor: Extractor | None) -> tuple[str | None, Any]:
        """The handle's scope (validated) and extractor."""
        return (None if scope is None else validate_scope(scope)), extractor

    def scoped_ltm_scopes(self, ltm_scopes: Iterable[str]) -> tuple[str, ...]:
        """The handle's long-term scopes: its own first, then ``ltm_scopes``."""
        others = validate_scopes(ltm_scopes)
        return others if self.scope is None else validate_scopes([self.scope, *others])

    def scope_observers(self, consolidate: bool) -> list[Callable[[CompactionReport], Any]]:
        """The compaction observers a handle starts with: a scoped one consolidates what each
        compaction removes (unless ``consolidate`` is false)."""
        return [self._consolidate_removed] if self.scope is not None and consolidate else []

    async def consolidate(self, *, dry_run: bool = False) -> ConsolidationReport | None:
        """Distil what the session said into long-term entries of its scope (one run of
        :mod:`memstore.memory.consolidation`: under the lease, in one transaction, nothing
        twice, people win). ``dry_run``: decide and report, write nothing.

        Returns:
            The run's report (``number`` is ``None`` when nothing was committed).

        Raises:
            ValidationError: the session belongs to no scope (``scope``), or ``dry_run`` is
                not a bool.
            SessionNotFoundError: no such session.
            LeaseHeldError: another worker kept the session's lease past the wait.
        """
        return await self.consolidator.run(dry_run=validate_flag("dry_run", dry_run))

    async def consolidation_reports(self) -> list[ConsolidationReport]:
        """Every committed consolidation run of the session, oldest first."""
        return await self.consolidator.reports()

    @property
    def consolidator(self) -> Consolidator:
        """The session's consolidation runner (loaded on first use)."""
        if self._consolidator is None:
            from memstore.extraction.extractor import OfflineExtractor
            from memstore.extraction.protocols import as_extractor
            from memstore.memory.consolidation import Consolidator

            self._consolidator = Consolidator(
                database=self._db,
                settings=self.settings,
                worker=self.worker,
                session_id=self.session_id,
                scope=self.scope,
                count=self.estimator.count,
                extractor=as_extractor(self.extractor or OfflineExtractor()),
            )
        return self._consolidator

    async def _consolidate_removed(self, report: CompactionReport) -> None:
        # What a compaction removed leaves working memory: distil it now, under the lease the
        # compaction just released. A worker busy with the lease is not waited for: the next
        # run (another compaction's, or an asked-for one) consumes these items too.
        await self.consolidator.run(
            forgotten_only=True, compaction=report.compaction_count, wait=False
        )
