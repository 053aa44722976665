"""Running the store's embedder: in the background, in batches, and for one search.

An append never waits for an embedding: it writes its row and returns, as without an
embedder. Vectors are made later, two ways:

* **In the background.** A compaction, a bulk import, :meth:`EmbeddingService.catch_up` and
  a search that finds more unembedded rows than it embeds itself start one run (an asyncio
  task; a run already going just goes round once more). A run walks every row that needs a
  vector of this embedder once: items of any fate and live long-term entries, whether never
  tried or failed before, :data:`BATCH` texts per call, at most :data:`CONCURRENCY` calls at
  once. A failed call is tried again after a pause that doubles (:data:`RETRIES`,
  :data:`BACKOFF_S`); when it keeps failing its rows are recorded as failed, with the error
  (``memstore check`` shows them), and the next run tries them again. Only the vector writes
  go through the writer, one transaction per batch. Closing the store stops the run.
* **For a search.** Before ranking, a search embeds the rows of its scope that were never
  tried, up to :data:`SEARCH_EMBED_LIMIT`, in the same calls as the query itself: a reworded
  question finds an answer written a moment ago. Beyond that limit, and on a read-only store,
  rows without a vector are found by their words alone until the background catches up.

A search whose embedder fails is not a failed search: hybrid ranking falls back to full text
(with a warning in the log); only an explicit ``mode="semantic"`` raises
:class:`EmbeddingError`.
"""

from __future__ import annotations

import asyncio
import contextlib
import inspect
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from functools import partial
from typing import Any

import numpy as np

from memstore.core.embedder import MAX_EMBEDDED_CHARS, Embedder, SearchMode, resolve_mode
from memstore.core.search_terms import SearchScope
from memstore.db import Database, reads
from memstore.db import vectors as vectors_db
from memstore.db.vector_search import SemanticQuery, VectorCache, encode
from memstore.errors import EmbedderMismatchError, EmbeddingError, MemstoreError

log = logging.getLogger("memstore")

#: Texts per embedder call: one request to an API (OpenAI takes up to 2,048 inputs), one
#: write transaction of vectors, and short enough that a failure costs little to redo.
BATCH = 256
#: Embedder calls in flight at once: an API answers several requests in parallel; an offline
#: model runs in threads on the machine's cores (two here).
CONCURRENCY = 2
#: Tries of one batch before its rows are recorded as failed.
RETRIES = 3
#: Pause before the first retry, doubled before each next one.
BACKOFF_S = 0.5
#: Unembedded rows a search embeds itself before ranking (with the query, :data:`BATCH` per
#: call): a few seconds of an API at most; more are left to the background, and found by their
#: words meanwhile.
SEARCH_EMBED_LIMIT = 2048


@dataclass
class RunCounts:
    """What one background run did.

    Attributes:
        embedded: Rows given a vector.
        failed: Rows recorded as failed.
    """

    embedded: int = 0
    failed: int = 0


class EmbeddingService:
    """The store's embedder, with its background run and its vector cache.

    Args:
        database: The store's database.
        embedder: Anything with ``name``, ``dimensions`` and ``async embed(texts)``.
        read_only: The store writes nothing: no background run, no stored vectors.
    """

    def __init__(self, database: Database, embedder: Embedder, *, read_only: bool) -> None:
        self._db = database
        self.embedder = embedder
        self.name = str(embedder.name)
        self.dimensions = int(embedder.dimensions)
        self.read_only = read_only
        self.cache = VectorCache(self.name, self.dimensions)
        self._task: asyncio.Task[RunCounts] | None = None
        self._again = False
        self._closed = False
        self._limit: asyncio.Semaphore | None = None

    async def check_dimensions(self) -> None:
        """Refuse an embedder whose name stored vectors of another size here.

        Raises:
            EmbedderMismatchError: the name's stored vectors have other dimensions.
        """
        recorded = await self._db.run_read(partial(vectors_db.recorded_dimensions, name=self.name))
        if recorded is not None and recorded != self.dimensions:
            raise EmbedderMismatchError(self.name, expected=recorded, actual=self.dimensions)

    # -- calling the embedder ----------------------------------------------------------------

    async def embed(self, texts: Sequence[str]) -> np.ndarray:
        """Unit vectors for ``texts`` (one call of the embedder).

        Raises:
            EmbeddingError: the embedder raised, or did not return one vector of its
                dimensions per text, or returned a value that is not a finite number.
        """
        clipped = [text[:MAX_EMBEDDED_CHARS] for text in texts]
        try:
            result: Any = self.embedder.embed(clipped)
            if inspect.isawaitable(result):
                result = await result
            matrix = np.asarray(result, dtype=np.float32)
        except MemstoreError:
            raise
        except Exception as error:  # the embedder's own failure, whatever it raises
            raise EmbeddingError(f"embedder {self.name!r} failed: {error}") from error
        if matrix.shape != (len(texts), self.dimensions):
            raise EmbeddingError(
                f"embedder {self.name!r} returned shape {matrix.shape} for {len(texts)} "
                f"text(s) of {self.dimensions} dimensions"
            )
        norms = np.linalg.norm(matrix, axis=1, keepdims=True)
        if not np.all(np.isfinite(norms)):
            raise EmbeddingError(f"embedder {self.name!r} returned a non-finite vector")
        # A zero vector (a text of no word the model knows) is kept: it matches nothing.
        unit: np.ndarray = matrix / np.where(norms == 0, 1.0, norms)
        return unit

    async def _embed_with_retries(self, texts: Sequence[str]) -> np.ndarray:
        pause = BACKOFF_S
        if self._limit is None:
            self._limit = asyncio.Semaphore(CONCURRENCY)
        for attempt in range(1, RETRIES + 1):
            try:
                async with self._limit:
                    return await self.embed(texts)
            except EmbeddingError as error:
                if attempt == RETRIES:
                    raise
                log.warning("memstore: %s; retrying in %.1fs", error, pause)
                await asyncio.sleep(pause)
                pause *= 2
        raise AssertionError("unreachable")  # pragma: no cover

    # -- a search ----------------------------------------------------------------------------

    async def semantic_query(
        self, text: str, scope: SearchScope, mode: SearchMode
    ) -> SemanticQuery | None:
        """The query's vector for a search of ``scope``, after embedding what the scope has
        never had embedded (up to :data:`SEARCH_EMBED_LIMIT`; see the module docstring).

        Returns:
            ``None`` when the embedder failed and ``mode`` is hybrid (full text alone then).

        Raises:
            EmbeddingError: the embedder failed and ``mode`` is ``"semantic"``.
        """
        missing: list[vectors_db.PendingText] = []
        if not self.read_only:
            missing, more = await self._db.run_read(
                partial(
                    vectors_db.untried_in_scope, name=self.name, scope=scope,
                    now=reads.utcnow(), limit=SEARCH_EMBED_LIMIT, known_rows=self.cache.rows,
                )
            )  # fmt: skip
            if more:
                self.start()
        texts = [text, *(row.text for row in missing)]
        try:
            matrix = np.concatenate(
                [await self.embed(texts[i : i + BATCH]) for i in range(0, len(texts), BATCH)]
            )
        except EmbeddingError as error:
            if mode == "semantic":
                raise
            log.warning("memstore: %s; ranking by words alone", error)
            return None
        if missing:
            pairs = zip(missing, matrix[1:], strict=True)
            try:
                await self._write([vectors_db.Embedded(row, encode(v)) for row, v in pairs])
            except MemstoreError as error:  # the search goes on: those rows rank by words
                log.warning("memstore: storing vectors failed (%s); the background retries", error)
        return SemanticQuery(matrix[0], self.cache, lexical=mode == "hybrid")

    async def _write(self, done: Sequence[vectors_db.Embedded]) -> int:
        return await self._db.run_write(
            partial(vectors_db.write_vectors, name=self.name, dimensions=self.dimensions, done=done)
        )

    # -- the background run ----------------------------------------------------------------

    def start(self) -> None:
        """Start a background run (or, while one runs, have it go round once more)."""
        if self.read_only or self._closed:
            return
        loop = asyncio.get_running_loop()
        if self._task is not None and not self._task.done() and self._task.get_loop() is loop:
            self._again = True
            return
        if self._limit is not None and self._task is not None and self._task.get_loop() is not loop:
            self._limit = None  # a semaphore belongs to the loop it first waited on
        self._task = loop.create_task(self._run(), name="memstore-embed")

    async def catch_up(self) -> RunCounts:
        """Embed every row that needs a vector now, and wait for it (a run of its own after
        any run going on)."""
        if self._task is not None and not self._task.done():
            with contextlib.suppress(Exception):
                await asyncio.shield(self._task)
        self.start()
        task = self._task
        return RunCounts() if task is None else await asyncio.shield(task)

    async def _run(self) -> RunCounts:
        counts = RunCounts()
        try:
            while True:
                self._again = False
                await self._walk(counts)
                if not self._again:
                    return counts
        except asyncio.CancelledError:
            raise
        except MemstoreError as error:  # the database refused: the next run starts over
            log.warning("memstore: background embedding stopped (%s)", error)
            return counts
        except Exception:  # a bug must not die silently in a task
            log.exception("memstore: background embedding stopped")
            return counts

    async def _walk(self, counts: RunCounts) -> None:
        after_item, after_entry = "", ("", "")
        page = BATCH * CONCURRENCY
        while True:
            now = reads.utcnow()
            rows = await self._db.run_read(
                partial(_pending_page, name=self.name, now=now, after=(after_item, after_entry),
                        limit=page)
            )  # fmt: skip
            if not rows:
                return
            for row in rows:
                if row.item_id is not None:
                    after_item = max(after_item, row.item_id)
                else:
                    after_entry = max(after_entry, (row.scope or "", row.key or ""))
            batches = [rows[i : i + BATCH] for i in range(0, len(rows), BATCH)]
            results = await asyncio.gather(*(self._one_batch(b) for b in batches))
            for embedded, failed in results:
                counts.embedded += embedded
                counts.failed += failed

    async def _one_batch(self, rows: Sequence[vectors_db.PendingText]) -> tuple[int, int]:
        try:
            matrix = await self._embed_with_retries([row.text for row in rows])
        except EmbeddingError as error:
            log.warning("memstore: %s; %d row(s) recorded as failed", error, len(rows))
            await self._write([vectors_db.Embedded(row, None, str(error)) for row in rows])
            return 0, len(rows)
        pairs = zip(rows, matrix, strict=True)
        await self._write([vectors_db.Embedded(row, encode(v)) for row, v in pairs])
        return len(rows), 0

    async def close(self) -> None:
        """Stop the background run (a batch being written commits or not, as a whole)."""
        self._closed = True
        task, self._task = self._task, None
        if task is not None and not task.done():
            task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await task

    async def status(self) -> vectors_db.EmbeddingStatus:
        """How far this embedder is (:func:`memstore.db.vectors.embedding_status`)."""
        return await self._db.run_read(
            partial(vectors_db.embedding_status, name=self.name, now=reads.utcnow())
        )


def _pending_page(
    conn: Any, name: str, now: datetime, after: tuple[str, tuple[str, str]], limit: int
) -> list[vectors_db.PendingText]:
    """The next rows a run embeds: items after ``after[0]``, then entries (a read)."""
    rows = vectors_db.pending_items(conn, name, after=after[0], limit=limit)
    if len(rows) < limit:
        rows += vectors_db.pending_entries(conn, name, now, after=after[1], limit=limit - len(rows))
    return rows


async def ranking(
    service: EmbeddingService | None,
    query: str,
    terms: tuple[str, ...],
    scope: SearchScope,
    mode: object = None,
) -> tuple[tuple[str, ...], SemanticQuery | None]:
    """How one search ranks: its words, and its meaning when the mode and the store allow.

    Args:
        service: The store's embedding (``None``: no embedder).
        query: The query's text (embedded whole).
        terms: Its words (:func:`~memstore.core.search_terms.search_terms`).
        scope: What the search covers (its never-embedded rows are embedded first).
        mode: ``"lexical"``, ``"semantic"``, ``"hybrid"`` or ``None`` (the default).

    Raises:
        ValidationError: a bad mode, or one that needs an embedder the store lacks.
        EmbeddingError: ``mode="semantic"`` and the embedder failed.
    """
    chosen = resolve_mode(mode, service is not None)
    if chosen == "lexical" or service is None:
        return terms, None
    return terms, await service.semantic_query(query, scope, chosen)
