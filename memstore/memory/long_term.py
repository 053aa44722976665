"""Long-term memory: scoped, versioned JSON entries that outlive sessions.

Sessions forget; long-term memory keeps what must outlive them ("I prefer tests with
pytest"). It is one table shared by every session and process, reached as ``store.ltm``.

* **Scopes and keys.** An entry is addressed by ``(scope, key)``. A scope is ``global`` or
  ``kind:name`` (``user:alice``, ``agent:reviewer``, ``project:checkout``): the kind is 1-32
  lowercase letters, digits, ``_`` or ``-`` starting with a letter; the name 1-95 characters
  of letters, digits and ``._:@+-`` starting with a letter or digit. A key is 1-256 printable
  characters (no control, format or line-separator characters) without surrounding white space.
* **Values** are JSON: a string, number, bool, list or object (``None`` is refused at the top:
  delete instead); no NaN or infinity, no NUL characters or lone surrogates (PostgreSQL's
  JSON refuses them), object keys are strings, at most 64 levels deep and
  ``Settings.ltm_max_value_bytes`` (64 KiB) of compact UTF-8 JSON. What you read back equals
  what you wrote (tuples and other non-JSON types are refused rather than converted).
* **Versions.** Every write (set, delete) increments the entry's version, and versions never
  repeat: an entry re-created after a delete continues after the version of its delete.
  ``expected_version`` makes ``set``/``delete`` a compare-and-set; an absent entry (never
  written, deleted or expired) has version **0**, so ``expected_version=0`` means "only if it
  does not exist". A stale one raises :class:`VersionConflictError` and writes nothing.
* **Expiry.** ``ttl`` (seconds or a timedelta) or ``expires_at`` sets when an entry stops
  being visible; every ``set`` decides its own expiry (no argument: the entry never expires).
  Expired entries are invisible to ``get``, ``list`` and the model input, and count as absent
  for compare-and-set; :meth:`LongTermMemory.prune` deletes them, recording an ``expire``.
* **History.** Every change is recorded (``set`` with its value, ``delete``, ``expire``) and
  :meth:`LongTermMemory.history` returns them oldest first.
* **Model input.** A session opened with ``ltm_scopes`` gets one ``developer`` message,
  "Relevant memories", built here by :func:`fit_memories` within a token budget and rendered
  by :func:`memstore.render.input.memories_message` as fenced, escaped JSON lines.
* **Traces.** ``set``, ``delete`` and ``prune`` are spans of the application's trace
  (``upsert_memory``, ``update_memory``, ``create_memory``, ``delete_memory``) while it
  traces: :mod:`memstore.memory.tracing`.
"""

from __future__ import annotations

import builtins
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Any

from memstore.config import Settings
from memstore.core.ltm_entries import (
    DEFAULT_SCOPE,
    LongTermChange,
    LongTermEntry,
    encode_value,
    resolve_expiry,
    validate_expected_version,
    validate_key,
    validate_prefix,
    validate_scope,
    validate_scopes,
)
from memstore.db import Database
from memstore.db import ltm as ltm_db
from memstore.db.reads import utcnow
from memstore.memory.tracing import DELETE_MEMORY, RECORD_COUNT, entry_write, start
from memstore.render.input import fit_block, memories_message, memory_line

if TYPE_CHECKING:
    from memstore.memory.embedding import EmbeddingService

__all__ = [
    "LongTermChange",
    "LongTermEntry",
    "LongTermMemory",
    "MemoriesBlock",
    "MemoryCandidates",
    "fit_memories",
]

#: Entries read for one model input: far more than any sensible budget can show.
MAX_RENDERED_ENTRIES = 200
#: Expired rows deleted per write transaction by ``prune``: keeps each lock short.
PRUNE_BATCH = 500

Clock = Callable[[], datetime]
CountTokens = Callable[[str], int]


# -- the model-input message -----------------------------------------------------------------


@dataclass(frozen=True)
class MemoriesBlock:
    """The "Relevant memories" message and what it costs.

    Attributes:
        message: The ``developer`` input message.
        tokens: Its estimated tokens, framing included (counted against the hard limit).
        shown: The entries it lists, highest priority first.
        omitted: Live entries of the scopes left out to fit the budget.
    """

    message: dict[str, Any]
    tokens: int
    shown: tuple[LongTermEntry, ...]
    omitted: int


def fit_memories(
    entries: Sequence[LongTermEntry], total: int, count: CountTokens, budget: int
) -> MemoriesBlock | None:
    """The message listing entries chosen greedily, in priority order, to fit ``budget``.

    Entries are taken in order (highest priority first); one that does not fit is skipped and
    the next ones are still tried, so a large entry never hides the small ones after it. The
    final message is counted whole, and the lowest-priority entry dropped until it fits.

    Args:
        entries: Candidates, highest priority first.
        total: Live entries in the scopes (``total - shown`` are reported as omitted).
        count: The session's token estimator.
        budget: Tokens the message may use, framing included.

    Returns:
        The block, or ``None`` when no entry fits (then no message is added).
    """
    fitted = fit_block(
        entries,
        memory_line,
        lambda chosen: memories_message(chosen, omitted=total - len(chosen)),
        count,
        budget,
    )
    if fitted is None:
        return None
    message, tokens, chosen = fitted
    return MemoriesBlock(message, tokens, tuple(chosen), total - len(chosen))


class MemoryCandidates:
    """The live entries of a handle's scopes for one model input, read once.

    :meth:`fit` may be called more than once (the model input fits the entries that match
    its query first, then all of them into what recall left): the entries are read once and
    the query's full-text search runs at most once.
    """

    def __init__(
        self,
        database: Database,
        scopes: Sequence[str],
        entries: tuple[LongTermEntry, ...],
        total: int,
        query: tuple[str, ...],
        now: datetime,
        text: str | None = None,
        embedding: EmbeddingService | None = None,
    ) -> None:
        self._db, self._scopes, self._now = database, tuple(scopes), now
        self.entries, self.total, self.query = entries, total, query
        self._text, self._embedding = text, embedding
        self._matching: list[LongTermEntry] | None = None

    async def fit(
        self, count: CountTokens, budget: int, *, matching_only: bool = False
    ) -> MemoriesBlock | None:
        """The block within ``budget``: every entry when all fit; else, with a query, those
        that best match it first, then the others (only those, with ``matching_only``)."""
        block = fit_memories(self.entries, self.total, count, budget)
        if block is not None and not block.omitted:
            return block
        if not self.query and self._text is None:
            return None if matching_only else block
        matching = await self.matching()
        if matching_only:
            return fit_memories(matching, self.total, count, budget)
        chosen = {(entry.scope, entry.key) for entry in matching}
        rest = [e for e in self.entries if (e.scope, e.key) not in chosen]
        return fit_memories([*matching, *rest], self.total, count, budget)

    async def matching(self) -> builtins.list[LongTermEntry]:
        """The entries that match the query, best first (searched once; by words and, with
        an embedder, by meaning too)."""
        if self._matching is None:
            from memstore.core.search_terms import SearchScope
            from memstore.db import search as search_db
            from memstore.memory.embedding import ranking

            scope = SearchScope((), self._scopes)
            terms, semantic = self.query, None
            if self._text is not None:
                terms, semantic = await ranking(self._embedding, self._text, terms, scope)
            hits = await search_db.search(
                self._db, terms, scope, MAX_RENDERED_ENTRIES, self._now, semantic
            )
            self._matching = [hit.entry for hit in hits if hit.entry is not None]
        return self._matching


# -- the API -----------------------------------------------------------------------------------


class LongTermMemory:
    """``store.ltm``: the scoped, versioned key-value store shared by every session.

    Args:
        database: The store's database.
        settings: Store settings (``ltm_max_value_bytes``).
        clock: Returns the current UTC time (tests move it to check expiry).
    """

    def __init__(
        self,
        database: Database,
        settings: Settings,
        *,
        clock: Clock = utcnow,
        embedding: EmbeddingService | None = None,
    ) -> None:
        self._db = database
        self.settings = settings
        self.clock = clock
        self._embedding = embedding

    async def set(
        self,
        key: str,
        value: Any,
        *,
        scope: str = DEFAULT_SCOPE,
        expected_version: int | None = None,
        ttl: float | timedelta | None = None,
        expires_at: datetime | None = None,
    ) -> LongTermEntry:
        """Create or replace an entry; one write transaction.

        Args:
            key: 1-256 printable characters.
            value: JSON (str, number, bool, list, dict).
            scope: ``global`` (default) or ``kind:name``.
            expected_version: Compare-and-set: write only if the live version is this one
                (0: only if there is no live entry). ``None``: write unconditionally.
            ttl: Expire this long after now (seconds or a timedelta).
            expires_at: Expire at this (timezone-aware) time. Without ``ttl`` and
                ``expires_at`` the entry never expires, whatever its previous expiry was.

        Returns:
            The stored entry (its new version).

        Raises:
            ValidationError: a bad key, scope, value, version or expiry (``field`` names it).
            VersionConflictError: ``expected_version`` is stale; nothing was written.
        """
        operation = entry_write(expected_version)
        with start(operation, operation=operation) as span:
            key, scope = validate_key(key), validate_scope(scope)
            span.entry(scope, key)
            encoded = encode_value(value, max_bytes=self.settings.ltm_max_value_bytes)
            expected = validate_expected_version(expected_version)
            now = self.clock()
            expiry = resolve_expiry(ttl, expires_at, now)
            record = await ltm_db.set_entry(
                self._db,
                scope,
                key,
                json.loads(encoded),  # a copy: later changes to the caller's object change nothing
                expected_version=expected,
                expires_at=expiry,
                now=now,
            )
            return span.written(LongTermEntry(**record))

    async def get(self, key: str, *, scope: str = DEFAULT_SCOPE) -> LongTermEntry | None:
        """The live entry, or ``None`` (never written, deleted or expired)."""
        record = await ltm_db.get_entry(
            self._db, validate_scope(scope), validate_key(key), self.clock()
        )
        return None if record is None else LongTermEntry(**record)

    async def delete(
        self, key: str, *, scope: str = DEFAULT_SCOPE, expected_version: int | None = None
    ) -> bool:
        """Delete an entry (recorded in its history); one write transaction.

        Args:
            key: The key.
            scope: Its scope.
            expected_version: Compare-and-set, as for :meth:`set`.

        Returns:
            ``True`` if a live entry was deleted, ``False`` if there was none.

        Raises:
            ValidationError: a bad key, scope or version.
            VersionConflictError: ``expected_version`` is stale; nothing was written.
        """
        with start(DELETE_MEMORY, operation=DELETE_MEMORY) as span:
            key, scope = validate_key(key), validate_scope(scope)
            span.entry(scope, key)
            deleted = await ltm_db.delete_entry(
                self._db,
                scope,
                key,
                expected_version=validate_expected_version(expected_version),
                now=self.clock(),
            )
            span.set(RECORD_COUNT, int(deleted))
            return deleted

    async def list(
        self, *, scope: str | None = None, prefix: str | None = None
    ) -> builtins.list[LongTermEntry]:
        """Live entries, ordered by scope then key.

        Args:
            scope: Only this scope (``None``: every scope).
            prefix: Only keys starting with this (case-sensitive).
        """
        records = await ltm_db.list_entries(
            self._db,
            scope=None if scope is None else validate_scope(scope),
            prefix=validate_prefix(prefix),
            now=self.clock(),
        )
        return [LongTermEntry(**record) for record in records]

    async def scopes(self) -> builtins.list[tuple[str, int]]:
        """Each scope that holds live entries, with how many it holds, ordered by scope."""
        return await ltm_db.live_scopes(self._db, self.clock())

    async def history(
        self, key: str, *, scope: str = DEFAULT_SCOPE
    ) -> builtins.list[LongTermChange]:
        """Every change of the entry, oldest first: each set (with its value), delete, expiry.

        Empty if the key was never written in this scope.
        """
        records = await ltm_db.history(self._db, validate_scope(scope), validate_key(key))
        return [LongTermChange(**record) for record in records]

    async def prune(self) -> int:
        """Delete every expired entry, recording an ``expire`` in its history.

        Returns:
            How many entries were deleted.
        """
        with start(DELETE_MEMORY, operation=DELETE_MEMORY) as span:
            span.set("memstore.ltm.expired_only", True)
            pruned = await ltm_db.prune_expired(self._db, self.clock(), batch=PRUNE_BATCH)
            span.set(RECORD_COUNT, pruned)
            return pruned

    async def memories(
        self,
        scopes: Sequence[str],
        count: CountTokens,
        budget: int,
        *,
        query: Sequence[str] | None = None,
    ) -> MemoriesBlock | None:
        """The "Relevant memories" message for ``scopes``, within ``budget`` tokens.

        Priority: the order of ``scopes``, then the most recently updated first. When the
        entries do not all fit and a ``query`` is given, the entries that best match it come
        first (full-text search over keys and values), then the others in that order. Entries
        that do not fit are left out (and their number reported in the message).

        Args:
            scopes: The scopes, highest priority first.
            count: The session's token estimator.
            budget: Tokens the message may use, framing included.
            query: Words to rank entries by when they do not all fit (already split:
                :func:`memstore.core.search_terms.search_terms`).

        Returns:
            The block, or ``None`` when the scopes hold no live entry or none fits.
        """
        found = await self.candidates(scopes, query=query)
        return None if found is None else await found.fit(count, budget)

    async def candidates(
        self, scopes: Sequence[str], *, query: Sequence[str] | None = None, text: str | None = None
    ) -> MemoryCandidates | None:
        """The live entries of ``scopes`` for one model input, read once, to fit to one
        budget and then another (:class:`MemoryCandidates`); ``None`` when there are none.
        ``text``: the query's text, ranked by meaning too when the store has an embedder."""
        scopes = validate_scopes(scopes)
        if not scopes:
            return None
        now = self.clock()
        records, total = await ltm_db.entries_in_scopes(
            self._db, scopes, now, limit=MAX_RENDERED_ENTRIES
        )
        entries = tuple(LongTermEntry(**record) for record in records)
        if not entries:
            return None
        return MemoryCandidates(
            self._db, scopes, entries, total, tuple(query or ()), now, text, self._embedding
        )

    #: Aliases that read well in agent code.
    remember = set
    recall = get
    forget = delete
