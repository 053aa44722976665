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
        confined_to: str | None = None,
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
            confined_to: A reader confined to one scope (``memstore mcp --scope``): only
                the sessions recorded in it or in none, and its own entries; with neither
                ``sessions`` nor ``scopes``, everything it may read. The embedder then sees
                the text of those sessions only.

        Returns:
            Hits carrying the item (with its fate and the compaction that removed it), the
            summary or the entry, a score and a snippet.

        Raises:
            ValidationError: a bad query, limit, session id, scope or mode.
            EmbeddingError: ``mode="semantic"`` and the embedder failed.
        """
        from memstore.core.search_terms import SearchScope

        scope = SearchScope.across(sessions, scopes)
        if confined_to is None:
            return await search_scope(self._db, self.embedding, query, scope, limit, mode)
        return await self._confined(query, scope, sessions, scopes, confined_to, limit, mode)

    async def _confined(
        self,
        query: str,
        scope: SearchScope,
        sessions: Iterable[str] | None,
        scopes: Iterable[str] | None,
        confined_to: str,
        limit: int,
        mode: SearchMode | None,
    ) -> list[SearchHit]:
        from memstore.core.ltm_entries import validate_scope
        from memstore.core.search_terms import SearchScope, search_terms, validate_limit
        from memstore.db.scope_search import confined_scope, confined_search
        from memstore.errors import ValidationError
        from memstore.memory.embedding import ranking

        pinned = validate_scope(confined_to, "confined_to")
        if any(other != pinned for other in scope.scopes or ()):
            raise ValidationError("scopes", f"the search is confined to scope {pinned!r}")
        if sessions is None and scopes is None:
            scope = SearchScope(None, (pinned,))
        terms, count = search_terms(query), validate_limit(limit)
        # Vectors are made for the confined scope's rows only: the embedder never sees
        # another scope's text.
        narrowed = await self._db.run_read(partial(confined_scope, search=scope, scope=pinned))
        terms, semantic = await ranking(self.embedding, query, terms, narrowed, mode)
        return await confined_search(
            self._db, terms, scope, pinned, count, reads.utcnow(), semantic
        )

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

    async def index_lag(self) -> int:
        """How many items the full-text index does not hold yet (0 on PostgreSQL): news, not
        a fault (appends do not index; the writer catches up in bulk, and a search scans what
        is not indexed yet)."""
        from memstore.db.audit import index_lag

        return await index_lag(self._db)

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
