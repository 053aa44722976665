"""Searching a store and a session: by words, by meaning, or both fused; and how far the
store's vectors are.

Bases of :class:`~memstore.memory.store.MemoryStore` and
:class:`~memstore.memory.session.SessionMemory` (the attributes below are theirs).
The ranking is :mod:`memstore.db.search` (words) and :mod:`memstore.db.vector_search`
(meaning), fused by :mod:`memstore.core.fusion`; the embedder runs in
:mod:`memstore.memory.embedding`.
"""

from __future__ import annotations

from collections.abc import Iterable
from functools import partial
from typing import TYPE_CHECKING

from memstore.db import reads

if TYPE_CHECKING:
    from memstore.core.embedder import SearchMode
    from memstore.core.search_terms import SearchHit
    from memstore.db import Database
    from memstore.db.vectors import EmbeddingStatus
    from memstore.memory.embedding import EmbeddingService, RunCounts


class SearchActions:
    """``store.search`` and the store's embedding status."""

    _db: Database
    embedding: EmbeddingService | None

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
        from memstore.core.search_terms import SearchScope, search_terms, validate_limit
        from memstore.db import search as search_db
        from memstore.memory.embedding import ranking
        from memstore.memory.tracing import searching

        scope = SearchScope.across(sessions, scopes)
        with searching(query, scope) as span:
            terms, count = search_terms(query), validate_limit(limit)
            terms, semantic = await ranking(self.embedding, query, terms, scope, mode)
            found = await search_db.search(self._db, terms, scope, count, reads.utcnow(), semantic)
            return span.found(found)

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


class SessionSearch:
    """``memory.search``: one session's history."""

    session_id: str
    _db: Database
    _embedding: EmbeddingService | None

    async def search(
        self,
        query: str,
        *,
        limit: int = 10,
        include_active: bool = False,
        mode: SearchMode | None = None,
    ) -> list[SearchHit]:
        """Search the session's history: what left working memory, best match first.

        Args:
            query: Words to look for (text, not syntax: any character is safe).
            limit: Hits to return at most (1-1,000).
            include_active: Also search the active items and the current summary.
            mode: ``"lexical"``, ``"semantic"`` or ``"hybrid"``; by default hybrid when the
                store has an embedder, lexical otherwise.

        Returns:
            Hits with the item (and its fate and the compaction that removed it) or the
            summary, a score and a snippet; empty when nothing matches.

        Raises:
            ValidationError: a bad query, limit or mode.
            EmbeddingError: ``mode="semantic"`` and the embedder failed.
        """
        from memstore.core.search_terms import SearchScope, search_terms, validate_limit
        from memstore.db import search as search_db
        from memstore.memory.embedding import ranking
        from memstore.memory.tracing import searching

        scope = SearchScope((self.session_id,), (), include_active=bool(include_active))
        with searching(query, scope) as span:
            terms, count = search_terms(query), validate_limit(limit)
            terms, semantic = await ranking(self._embedding, query, terms, scope, mode)
            found = await search_db.search(self._db, terms, scope, count, reads.utcnow(), semantic)
            return span.found(found)
