"""SessionContext: what the runners of one session handle share.

A handle (:class:`~memstore.memory.session.SessionMemory`) builds one context when it opens,
and gives the same value to each of its runners: the compactor
(:mod:`memstore.memory.compactor`), the model-input assembly
(:mod:`memstore.memory.model_input`), consolidation (:mod:`memstore.memory.consolidation`),
the lease they take (:mod:`memstore.memory.leases`) and search
(:mod:`memstore.memory.store_search`). A runner adds only what is its own (the summarizer,
the extractor, the memories' budget) beside it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from memstore.db import reads
from memstore.errors import EstimatorMismatchError

if TYPE_CHECKING:
    from memstore.config import Settings
    from memstore.core.policy import Snapshot
    from memstore.core.tokens import TokenEstimator
    from memstore.core.values import MemoryLimits
    from memstore.db import Database
    from memstore.memory.embedding import EmbeddingService
    from memstore.memory.worker import Worker


@dataclass(frozen=True)
class SessionContext:
    """One session as its handle's runners see it (no state: every call reads the database).

    Attributes:
        database: The store's database, confined to the handle's scope.
        settings: Store-wide settings (lease length, timeouts, item size).
        worker: This process's identity in leases.
        session_id: The session.
        limits: The handle's token limits.
        estimator: How the session is counted.
        scope: The long-term scope the handle was opened with (``None``: none).
        embedding: The store's embedder and its background run (``None``: words only).
    """

    database: Database
    settings: Settings
    worker: Worker
    session_id: str
    limits: MemoryLimits
    estimator: TokenEstimator
    scope: str | None = None
    embedding: EmbeddingService | None = None

    def count(self, text: str) -> int:
        """``text``'s tokens, as the session counts them."""
        return self.estimator.count(text)

    async def snapshot(self) -> Snapshot | None:
        """The session's working memory, one moment (``None``: not written yet).

        Raises:
            EstimatorMismatchError: the session was counted with another estimator.
        """
        snap = await reads.snapshot(self.database, self.session_id)
        if snap is not None and snap.estimator != self.estimator.name:
            raise EstimatorMismatchError(
                self.session_id, expected=snap.estimator, actual=self.estimator.name
            )
        return snap
