"""Ranking by meaning: exact cosine scoring of stored vectors, with numpy, in the read.

A search with a :class:`SemanticQuery` ranks the rows of its scope by the cosine similarity
of their vectors with the query's (vectors are stored unit-length, so it is a dot product),
over every candidate: exact, no approximate index. Rows without a vector of the query's
embedder are simply not in this ranking (the word ranking still finds them), and vectors
of another embedder are never read: a query never mixes embedders.

**The item vectors are cached in process memory** (:class:`VectorCache`, one per store and
embedder): reading 100k vectors from the database for every search would cost more than the
search. The cache stays right across processes with one check per search, in the search's
own read transaction: the embedder's ``generation`` (bumped by every vector write, whoever
writes) and the number of its vectors. A higher generation loads only the rows written since;
fewer vectors than cached (a prune or purge deleted items, and their vectors with them) loads
them all again. Long-term entries are few: they are scored straight from their table.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass
from datetime import datetime

import numpy as np
from sqlalchemy import Connection, and_, func, or_, select

from memstore.core.search_terms import SNIPPET_ELLIPSIS, SNIPPET_WORDS, SearchHit, SearchScope
from memstore.db.reads import ITEM_COLUMNS, row_to_item
from memstore.db.tables import entry_vectors, item_vectors, items, ltm_entries
from memstore.db.vectors import entry_text, generation

#: Candidates fetched per hit wanted when only what left working memory counts, and how much
#: wider the net grows each time the filter turned too many of them away.
OVERFETCH = 4
_ENTRY_COLUMNS = (
    ltm_entries.c.scope, ltm_entries.c.key, ltm_entries.c.value, ltm_entries.c.version,
    ltm_entries.c.created_at, ltm_entries.c.updated_at, ltm_entries.c.expires_at,
    ltm_entries.c.source,
)  # fmt: skip


def decode(blob: bytes, dimensions: int) -> np.ndarray:
    """A stored vector (float32 bytes) as an array."""
    return np.frombuffer(bytes(blob), dtype="<f4", count=dimensions)


def encode(vector: np.ndarray) -> bytes:
    """A vector as stored: float32, little-endian."""
    return np.asarray(vector, dtype="<f4").tobytes()


class VectorCache:
    """One embedder's item vectors in memory, with the session of each (thread-safe: the
    reader threads share it)."""

    def __init__(self, embedder: str, dimensions: int) -> None:
        self.embedder, self.dimensions = embedder, dimensions
        self._lock = threading.Lock()
        self._generation = -1
        self._rows = -1
        self._clear()

    def _clear(self) -> None:
        self._ids: list[str] = []
        self._row: dict[str, int] = {}
        self._codes: dict[str, int] = {}
        self._matrix = np.zeros((0, self.dimensions), dtype=np.float32)
        self._sessions = np.zeros(0, dtype=np.int64)

    def __len__(self) -> int:
        return len(self._ids)

    @property
    def rows(self) -> int:
        """The embedder's rows (vectors and failures) at the last refresh (-1: none yet)."""
        return self._rows

    def refresh(self, conn: Connection) -> None:
        """Bring the cache up to what ``conn``'s transaction sees.

        Unchanged (the common case) costs two index reads: the generation, and the number of
        the embedder's rows. A new generation loads the rows written since; fewer rows than
        before without one (a prune or a purge deleted items) loads everything again.
        """
        current = generation(conn, self.embedder)
        rows = conn.execute(
            select(func.count())
            .select_from(item_vectors)
            .where(item_vectors.c.embedder == self.embedder)
        ).scalar_one()
        with self._lock:
            if current == self._generation and rows == self._rows:
                return
            if current < self._generation:  # another database behind the same URL
                self._clear()
                self._generation = -1
            self._load(conn, self._generation)
            # Counting the vectors themselves reads every row (the failed ones have none), so
            # it is done only when something changed: deletions show as fewer of them.
            vectors = conn.execute(
                select(func.count())
                .select_from(item_vectors)
                .where(item_vectors.c.embedder == self.embedder, item_vectors.c.vector.is_not(None))
            ).scalar_one()
            if vectors != len(self._ids):
                self._clear()
                self._load(conn, -1)
            self._generation, self._rows = current, rows

    def _load(self, conn: Connection, after: int) -> None:
        query = (
            select(item_vectors.c.item_id, items.c.session_id, item_vectors.c.vector)
            .join(items, items.c.id == item_vectors.c.item_id)
            .where(
                item_vectors.c.embedder == self.embedder,
                item_vectors.c.generation > after,
                item_vectors.c.vector.is_not(None),
            )
        )
        rows = conn.execute(query).all()
        if not rows:
            return
        new = [row for row in rows if row.item_id not in self._row]
        for row in rows:
            if row.item_id in self._row:  # written again (same text, same embedder)
                self._matrix[self._row[row.item_id]] = decode(row.vector, self.dimensions)
        if not new:
            return
        start = len(self._ids)
        block = np.frombuffer(b"".join(bytes(row.vector) for row in new), dtype="<f4")
        self._matrix = np.vstack([self._matrix, block.reshape(len(new), self.dimensions)])
        codes = [self._codes.setdefault(row.session_id, len(self._codes)) for row in new]
        self._sessions = np.concatenate([self._sessions, np.asarray(codes, dtype=np.int64)])
        for offset, row in enumerate(new):
            self._row[row.item_id] = start + offset
            self._ids.append(row.item_id)

    def top(
        self, query: np.ndarray, sessions: tuple[str, ...] | None, count: int
    ) -> tuple[list[str], np.ndarray, int]:
        """The ``count`` best cached items of ``sessions`` (``None``: all): their ids and
        scores, best first, and how many items the sessions have in the cache."""
        with self._lock:
            matrix, codes, ids = self._matrix, self._sessions, self._ids
            wanted = None if sessions is None else [self._codes.get(s, -1) for s in sessions]
        # One product over every row (no copy of the matrix), the other sessions' rows then
        # pushed to the bottom: cheaper than gathering the rows of the scope first.
        scores = matrix @ query
        if wanted is not None:
            scores[~np.isin(codes, wanted)] = -np.inf
        total = len(scores) if wanted is None else int(np.isfinite(scores).sum())
        count = min(count, total)
        if count == 0:
            return [], scores[:0], total
        best = np.argpartition(-scores, count - 1)[:count]
        best = best[np.argsort(-scores[best], kind="stable")]
        return [ids[i] for i in best], scores[best], total


@dataclass(frozen=True)
class SemanticQuery:
    """What a search needs to rank by meaning.

    Attributes:
        vector: The query's unit vector.
        cache: The store's cache of this embedder's item vectors.
        lexical: Also rank by words and fuse (hybrid); ``False``: by meaning alone.
    """

    vector: np.ndarray
    cache: VectorCache
    lexical: bool = True

    @property
    def embedder(self) -> str:
        """The embedder's name."""
        return self.cache.embedder


def semantic_rows(
    conn: Connection, query: SemanticQuery, scope: SearchScope, limit: int, now: datetime
) -> list[SearchHit]:
    """The best ``limit`` rows of ``scope`` by cosine similarity, best first (a read)."""
    hits: list[SearchHit] = []
    if scope.sessions != ():
        hits += _item_rows(conn, query, scope, limit)
    if scope.scopes != ():
        hits += _entry_rows(conn, query, scope, limit, now)
    hits.sort(key=lambda hit: -hit.score)
    return hits[:limit]


def _item_rows(
    conn: Connection, query: SemanticQuery, scope: SearchScope, limit: int
) -> list[SearchHit]:
    query.cache.refresh(conn)
    # Every cached row of the scope's sessions passes when active rows count too (a deleted
    # one aside); only what left working memory needs a wider net.
    fetch = limit if scope.include_active else limit * OVERFETCH
    while True:
        chosen, scores, total = query.cache.top(query.vector, scope.sessions, fetch)
        if not chosen:
            return []
        where = [items.c.id.in_(chosen)]
        if not scope.include_active:
            where.append(items.c.fate.is_not(None))
        found = {row.id: row for row in conn.execute(select(*ITEM_COLUMNS).where(*where))}
        if len(found) >= limit or fetch >= total:
            break
        fetch *= OVERFETCH
    out = []
    for item_id, score in zip(chosen, scores, strict=True):
        row = found.get(item_id)
        if row is not None:
            item = row_to_item(row)
            out.append(
                SearchHit(
                    source="item", text=item.content, score=float(score),
                    snippet=opening(item.content), session_id=item.session_id, seq=item.seq,
                    fate=None if item.fate is None else item.fate.value,
                    compaction=item.removed_by, version=item.version, item=item,
                )
            )  # fmt: skip
    return out[:limit]


def _entry_rows(
    conn: Connection, query: SemanticQuery, scope: SearchScope, limit: int, now: datetime
) -> list[SearchHit]:
    from memstore.core.ltm_entries import LongTermEntry

    stmt = (
        select(*_ENTRY_COLUMNS, entry_vectors.c.vector)
        .join(
            entry_vectors,
            and_(
                entry_vectors.c.scope == ltm_entries.c.scope,
                entry_vectors.c.key == ltm_entries.c.key,
                entry_vectors.c.entry_version == ltm_entries.c.version,
            ),
        )
        .where(
            entry_vectors.c.embedder == query.embedder,
            entry_vectors.c.vector.is_not(None),
            or_(ltm_entries.c.expires_at.is_(None), ltm_entries.c.expires_at > now),
        )
    )
    if scope.scopes is not None:
        stmt = stmt.where(ltm_entries.c.scope.in_(scope.scopes))
    rows = conn.execute(stmt).all()
    if not rows:
        return []
    matrix = np.stack([decode(row.vector, query.cache.dimensions) for row in rows])
    scores = matrix @ query.vector
    out = []
    for index in np.argsort(-scores, kind="stable")[:limit]:
        row = rows[int(index)]
        entry = LongTermEntry(
            **{column.name: row._mapping[column.name] for column in _ENTRY_COLUMNS}
        )
        text = entry_text(entry.key, entry.value)
        out.append(
            SearchHit(
                source="ltm", text=text, score=float(scores[index]), snippet=opening(text),
                entry=entry,
            )
        )  # fmt: skip
    return out


def opening(text: str) -> str:
    """A meaning match's snippet: its first words (no word matched to mark)."""
    words = text.split()
    shown = " ".join(words[:SNIPPET_WORDS])
    return shown if len(words) <= SNIPPET_WORDS else f"{shown} {SNIPPET_ELLIPSIS}"
