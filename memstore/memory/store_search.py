"""Searching a store and a session: by words, by meaning, or both fused; and how far the
store's vectors are.

:class:`StoreSearch` is a part the store holds (``store.search``, the embedding status); a
session handle's ``search`` runs :func:`search_scope` over its own session. The ranking is
:mod:`memstore.db.search` (words) and :mod:`memstore.db.vector_search` (meaning), fused by
:mod:`memstore.core.fusion`; the embedder runs in :mod:`memstore.memory.embedding`.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING

from memstore.db import reads

if TYPE_CHECKING:
    from memstore.core.embedder import SearchMode
    from memstore.core.search_terms import SearchHit, SearchScope
    from memstore.db import Database
    from memstore.db.vectors import EmbeddingStatus
    from memstore.memory.embedding import EmbeddingService, RunCounts


async def search_scope(
    db: Database,
    embedding: EmbeddingService | None,
    query: str,
    scope: SearchScope,
    limit: int,
    mode: SearchMode | None,
) -> list[SearchHit]:
    """Search ``scope`` for ``query``: by words, by meaning, or both fused (a
    ``search_memory`` span while the application traces).

    Raises:
        ValidationError: a bad query, limit or mode.
        EmbeddingError: ``mode="semantic"`` and the embedder failed.
    """
    from memstore.core.search_terms import search_terms, validate_limit
    from memstore.db import search as search_db
    from memstore.memory.embedding import ranking
    from memstore.memory.tracing import searching

    with searching(query, scope) as span:
        terms, count = search_terms(query), validate_limit(limit)
        terms, semantic = await ranking(embedding, query, terms, scope, mode)
        found = await search_db.search(db, terms, scope, count, reads.utcnow(), semantic)
        return span.found(found)


class StoreSearch:
    """``store.search`` and the store's embedding status.

    Args:
        database: The store's database.
        embedding: The store's embedder and its background run (``None``: words only).
    """

    def __init__(self, database: Database, embedding: EmbeddingService | None) -> None:
        self._db = database
        self.embedding = embedding

    async def search(
        self,
        query: str,
        *,
        sessions: Iterable[str] | None = None,
        scopes: Iterable[str] | None = None,
        limit: int = 10,
        mode: SearchMode | None = None,
    ) -> list[SearchHit]:
        """Search every session's items (of any fate) and summaries, and long-term memory.

        Args:
            query: Words to look for (text, not syntax: any character is safe).
            sessions: These sessions' history. Given alone, no long-term entry is searched.
            scopes: These scopes' long-term entries, and the history of the sessions
                recorded in them (``store.session(id, scope=...)``).
            limit: Hits to return at most (1-1,000), best first.
            mode: ``"lexical"``, ``"semantic"`` or ``"hybrid"``; by default hybrid with an
                embedder, lexical without (see :mod:`memstore.core.embedder`).

        Returns:
            Hits carrying the item (with its fate and the compaction that removed it), the
            summary or the entry, a score and a snippet.

        Raises:
            ValidationError: a bad query, limit, session id, scope or mode.
            EmbeddingError: ``mode="semantic"`` and the embedder failed.
        """
        from memstore.core.search_terms import SearchScope

        scope = SearchScope.across(sessions, scopes)
        return await search_scope(self._db, self.embedding, query, scope, limit, mode)

    async def embedding_status(self) -> list[EmbeddingStatus]:
        """How far each embedder's vectors are: the store's own first, then every other
        that stored vectors here (``memstore check`` shows them)."""
        from memstore.db import vectors as vectors_db

        names = await self._db.run_read(vectors_db.embedder_names)
        if self.embedding is not None:
            names = [self.embedding.name, *(n for n in names if n != self.embedding.name)]
        return [
            await self._db.run_read(
                partial(vectors_db.embedding_status, name=name, now=reads.utcnow())
            )
            for name in names
        ]

    async def embed_pending(self) -> RunCounts:
        """Embed every item and entry that has no vector of the store's embedder yet (or
        whose embedding failed), and wait for it. The background does the same by itself,
        after compactions and imports; this is for operators and benchmarks.

        Raises:
            ValidationError: the store has no embedder (``embedder``).
        """
        from memstore.errors import ValidationError

        if self.embedding is None:
            raise ValidationError("embedder", "the store was opened without one")
        return await self.embedding.catch_up()
