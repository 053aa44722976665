"""What a session handle does with its scope: recall across it, consolidate into it.

A handle opened with ``scope="user:alice"`` belongs to that long-term scope (its first append
records it): the scope comes first among its ``ltm_scopes``, its recall spans the scope's
other sessions (:mod:`memstore.memory.cross_session_recall`), and ``consolidate()`` (and,
unless ``consolidate=False``, every compaction it commits) distils what it said into the
scope's entries (:mod:`memstore.memory.consolidation`).

:class:`SessionConsolidation` is the part of a handle
(:class:`~memstore.memory.session.SessionMemory`) that consolidates; it keeps the
consolidation machinery (which loads the fact extractor) out of a handle until one is asked
for, so ``memstore show`` never loads it.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from memstore.core.ltm_entries import validate_scope, validate_scopes
from memstore.core.validation import validate_flag

if TYPE_CHECKING:
    from memstore.core.consolidation_report import ConsolidationReport
    from memstore.core.records import CompactionReport
    from memstore.extraction.protocols import Extractor
    from memstore.memory.consolidation import Consolidator
    from memstore.memory.context import SessionContext


def handle_scopes(scope: object, ltm_scopes: Iterable[str]) -> tuple[str | None, tuple[str, ...]]:
    """A handle's scope (validated) and its long-term scopes: its own first, then
    ``ltm_scopes``.

    Raises:
        ValidationError: a bad scope (``scope``, ``ltm_scopes``).
    """
    own = None if scope is None else validate_scope(scope)
    others = validate_scopes(ltm_scopes)
    return own, (others if own is None else validate_scopes([own, *others]))


class SessionConsolidation:
    """A handle's consolidation (its runner is made on first use).

    Args:
        context: The handle's session.
        extractor: Finds facts (``None``: the offline extractor).
    """

    def __init__(self, context: SessionContext, extractor: Extractor | None) -> None:
        self._context = context
        self.extractor = extractor
        self._runner: Consolidator | None = None

    def observers(self, consolidate: bool) -> list[Callable[[CompactionReport], Any]]:
        """The compaction observers a handle starts with: a scoped one consolidates what each
        compaction removes (unless ``consolidate`` is false)."""
        return [self._after_compaction] if self._context.scope is not None and consolidate else []

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
        return await self._consolidator().run(dry_run=validate_flag("dry_run", dry_run))

    async def consolidation_reports(self) -> list[ConsolidationReport]:
        """Every committed consolidation run of the session, oldest first."""
        return await self._consolidator().reports()

    def _consolidator(self) -> Consolidator:
        if self._runner is None:
            from memstore.extraction.extractor import OfflineExtractor
            from memstore.extraction.protocols import as_extractor
            from memstore.memory.consolidation import Consolidator

            extractor = as_extractor(self.extractor or OfflineExtractor())
            self._runner = Consolidator(self._context, extractor)
        return self._runner

    async def _after_compaction(self, report: CompactionReport) -> None:
        # What a compaction removed leaves working memory: distil it now, under the lease the
        # compaction just released. A worker busy with the lease is not waited for: the next
        # run (another compaction's, or an asked-for one) consumes these items too.
        await self._consolidator().run(
            forgotten_only=True, compaction=report.compaction_count, wait=False
        )
