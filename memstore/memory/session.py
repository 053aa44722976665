"""SessionMemory: one session's handle; orchestrates policy + database + summarizer.

The order of an append:

1. validate and count tokens *before* any transaction (bad input writes nothing);
2. one short write transaction appends the item and returns the session's new total;
3. if a trigger fires (hard limit reached, or ``summarize_every`` user turns), compact:
   take the lease, read a snapshot, run phase 1, call the summarizer with no transaction
   open, run phase 3, and commit the plan under compare-and-swap; a lost race re-plans.

A compaction that fails after the append committed is logged, not raised: the item is
stored (raising would invite a duplicate retry), ``build_model_input`` stays bounded, and
the next append tries again.

The handle is a few parts over one :class:`~memstore.memory.context.SessionContext`: the
compactor (:mod:`memstore.memory.compactor`), the model input (``ltm_scopes``' memories,
recalled passages, working memory, all within the hard limit:
:mod:`memstore.memory.model_input`) and consolidation into its ``scope``
(:mod:`memstore.memory.scoped`). What it is opened with is one
:class:`~memstore.memory.options.SessionOptions`.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from memstore.core.ltm_entries import memory_budget
from memstore.core.policy import CompactionPlan, Snapshot
from memstore.core.records import CompactionReport
from memstore.core.search_terms import SearchScope
from memstore.core.validation import validate_handle, validate_idempotency_key, validate_text
from memstore.core.values import (
    DEFAULT_KIND,
    MemoryItem,
    MemoryKind,
    MemoryRole,
    Priority,
    check_kind_role,
    parse_kind,
    parse_priority,
    parse_role,
)
from memstore.db import append as appends
from memstore.db import reads, rewind
from memstore.db.confined import confine
from memstore.errors import SessionNotFoundError
from memstore.extraction.protocols import as_summarizer
from memstore.memory.compactor import Compactor, wait_bound
from memstore.memory.context import SessionContext
from memstore.memory.item_batch import new_items
from memstore.memory.model_input import InputSources, assemble
from memstore.memory.options import SessionOptions
from memstore.memory.parts import delegate
from memstore.memory.scoped import SessionConsolidation, handle_scopes
from memstore.memory.store_search import search_scope
from memstore.memory.tracing import traced_append
from memstore.memory.worker import Worker, new_handle_id

if TYPE_CHECKING:
    from memstore.config import Settings
    from memstore.core.embedder import SearchMode
    from memstore.core.search_terms import SearchHit
    from memstore.db import Database
    from memstore.extraction.protocols import Extractor, Summarizer
    from memstore.memory.embedding import EmbeddingService
    from memstore.memory.long_term import LongTermMemory


log = logging.getLogger("memstore")

Observer = Callable[[CompactionReport], Any]


class SessionMemory:
    """One session's working memory, as seen by one worker.

    Stateless beyond its configuration: every call reads or writes the database, so handles in
    any number of processes see one session. Its items record its id (:mod:`memstore.core.turns`).
    Open one with :meth:`MemoryStore.session <memstore.MemoryStore.session>` or
    :meth:`~memstore.MemoryStore.attach`.

    Args:
        session_id: The session (validated).
        options: What the handle is opened with; defaults filled in here.
        database: The store's database.
        settings: Store-wide settings.
        worker: This process's identity in leases.
        long_term: The store's long-term memory (loaded on first use).
        embedding: The store's embedder (``None``: words only).
    """

    def __init__(
        self,
        session_id: str,
        options: SessionOptions,
        *,
        database: Database,
        settings: Settings,
        worker: Worker,
        long_term: Callable[[], LongTermMemory],
        embedding: EmbeddingService | None = None,
    ) -> None:
        handle = options.handle
        self.handle = new_handle_id() if handle is None else validate_handle(handle)
        self.scope, self.ltm_scopes = handle_scopes(options.scope, options.ltm_scopes)
        #: What the handle was opened with, the defaults filled in.
        self.options = options = options.resolved()
        assert options.limits is not None and options.estimator is not None
        assert options.summarizer is not None
        limits = options.limits
        self.ltm_budget = memory_budget(options.ltm_budget, limits)
        #: Set: every model input recalls (``None``: only when asked, with the default).
        self.recall_budget = (
            None
            if options.recall_budget is None
            else memory_budget(options.recall_budget, limits, "recall_budget")
        )
        self.summarizer: Summarizer = as_summarizer(options.summarizer)
        self.extractor: Extractor | None = options.extractor
        self.session_id, self.settings, self.worker = session_id, settings, worker
        self.limits, self.estimator = limits, options.estimator
        self._long_term = long_term
        # A scoped handle's every transaction refuses a session of another scope.
        self._db = database = confine(database, session_id, self.scope)
        self._context = context = SessionContext(
            database, settings, worker, session_id, limits, options.estimator, self.scope,
            embedding,
        )  # fmt: skip
        self._consolidation = SessionConsolidation(context, options.extractor)
        self._observers: list[Observer] = self._consolidation.observers(options.consolidate)
        self._compactor = Compactor(context, self.summarizer, self._notify)
        self._input_sources = InputSources(
            context=context,
            ltm_scopes=self.ltm_scopes,
            ltm_budget=self.ltm_budget,
            recall_budget=self.recall_budget,
            long_term=long_term,
            fixed_ltm_budget=options.ltm_budget is not None,
        )

    consolidate = delegate("_consolidation", SessionConsolidation.consolidate)
    consolidation_reports = delegate("_consolidation", SessionConsolidation.consolidation_reports)

    @property
    def ltm(self) -> LongTermMemory:
        """Long-term memory, shared by every session of the store (loaded on first use: a
        handle that never touches it, as ``memstore show`` does, never imports it)."""
        return self._long_term()

    # -- writing ---------------------------------------------------------------------------

    @traced_append
    async def add(
        self,
        role: MemoryRole | str,
        content: str,
        *,
        kind: MemoryKind | str | None = None,
        priority: Priority | str | int = Priority.NORMAL,
        idempotency_key: str | None = None,
    ) -> MemoryItem:
        """Append an item, then compact if a trigger fires.

        Args:
            role: ``user``, ``assistant``, ``tool`` or ``developer`` (or the enum).
            content: The text; surrounding white space is stripped.
            kind: Defaults from the role (``tool`` -> ``TOOL_OBSERVATION``,
                ``developer`` -> ``DECISION``).
            priority: ``LOW``, ``NORMAL`` (default) or ``HIGH``, or 10 / 50 / 100.
            idempotency_key: Makes a retry after an unknown outcome safe: the same key
                returns the stored item instead of appending again.

        Returns:
            The stored item (for a repeated key, the item stored the first time).

        Raises:
            ValidationError: bad content, role, kind or priority (``field`` names it).
            IdempotencyConflictError: the key was used for different content.
            EstimatorMismatchError: the session was counted with another estimator.
            LockTimeoutError: the database stayed locked past the busy timeout.
        """
        role_ = parse_role(role)
        kind_ = DEFAULT_KIND[role_] if kind is None else parse_kind(kind)
        check_kind_role(kind_, role_)
        text = validate_text("content", content, max_bytes=self.settings.max_item_bytes)
        new = appends.NewItem(
            role=role_,
            kind=kind_,
            priority=parse_priority(priority),
            content=text,
            # Counted before the transaction: tokenizing must not lengthen the write lock.
            estimated_tokens=self.estimator.count(text),
            idempotency_key=validate_idempotency_key(idempotency_key),
            handle=self.handle,
        )
        result = await appends.append(
            self._db, self.session_id, self.estimator.name, self.limits, [new], self.scope
        )
        await self._compactor.after_append(result.total_tokens, result.user_turns, result.duplicate)
        return result.item

    @traced_append
    async def add_items(
        self,
        items: Sequence[Mapping[str, Any]],
        *,
        priority: Priority | str | int | Sequence[Priority | str | int] = Priority.NORMAL,
        idempotency_key: str | None = None,
        decisions: Iterable[int] = (),
    ) -> list[MemoryItem]:
        """Append Responses API items verbatim, all in one transaction, then compact once.

        Each item is stored as given (it comes back with the same keys and values) beside the
        text memstore derives from it; its kind and role follow from its type
        (:mod:`memstore.core.carried_items`). A turn is stored whole or not at all.

        Args:
            items: Responses input items (JSON objects): messages, ``function_call`` and
                ``function_call_output``, ``reasoning``, hosted tool calls...
            priority: One priority for every item, or one per item.
            idempotency_key: Identifies the whole batch: a retry with the same key returns
                the items stored the first time and writes nothing.
            decisions: Indexes of call outputs to record as ``DECISION`` (a call that
                changed something: summaries keep decisions first) instead of
                ``TOOL_OBSERVATION``.

        Returns:
            The stored items, in order.

        Raises:
            ValidationError: what the Responses API refuses, an item over the size limit, or an
                output for a call answered already or of another kind; ``field`` names it.
        """
        key = validate_idempotency_key(idempotency_key)
        news = new_items(
            items, priority, key, frozenset(decisions), max_bytes=self.settings.max_item_bytes,
            count=self.estimator.count, handle=self.handle, wait_seconds=self.settings.pending_s,
        )  # fmt: skip
        if not news:
            return []
        result = await appends.append(
            self._db, self.session_id, self.estimator.name, self.limits, news, self.scope
        )
        await self._compactor.after_append(result.total_tokens, result.user_turns, result.duplicate)
        return list(result.items)

    async def pop_item(self) -> MemoryItem | None:
        """Take back the newest active item this handle added (never another handle's), return
        it (``None``: none); its row keeps the fate ``popped`` (a compaction, trigger ``pop``)."""
        host, handle = self.worker.host, self.handle
        done = await rewind.pop_item(self._db, self.session_id, self.limits, host, handle)
        if done is not None:
            await self._notify(done.report)
        return None if done is None else done.items[0]

    async def end_pending(self) -> None:
        """This handle is done: its calls wait no more (a late output is still stored)."""
        await rewind.end_pending(self._db, self.session_id, self.handle)

    async def clear(self) -> CompactionReport | None:
        """Take every active item and the summary out of working memory, on the record.

        Each item keeps the fate ``cleared``; the summary is removed by the same recorded
        compaction (trigger ``clear``). Returns its report (``None``: nothing to clear).
        """
        done = await rewind.clear(self._db, self.session_id, self.limits, self.worker.host)
        if done is None:
            return None
        await self._notify(done.report)
        return done.report

    async def compact(
        self, *, wait: bool = True, wait_timeout: float | None = None
    ) -> CompactionReport | None:
        """Compact now: drop noise, summarize every unprotected item, enforce the target.

        While another worker compacts this session, the call waits for it to finish, then
        compacts as if it had been called alone (toward the target, over what that worker
        left). A worker that dies holding the lease delays it by at most one lease.

        Args:
            wait: ``False``: raise :class:`LeaseHeldError` at once instead of waiting.
            wait_timeout: Seconds to wait at most (default ``summarizer_timeout_s +
                lease_s``: one summarizer call and one lease). When they run out the call
                logs a warning naming the holder and returns ``None``; nothing is written.

        Returns:
            The report, or ``None`` when there is nothing to compact (no session yet, or
            nothing a compaction would change) or the wait ran out.

        Raises:
            LeaseHeldError: ``wait=False`` and another worker holds the compaction lease:
                who, and for how long its lease runs.
            ValidationError: ``wait_timeout`` is not a number of seconds >= 0.
        """
        timeout = wait_bound(self.settings, wait_timeout)
        if await self._context.snapshot() is None:  # refuse a wrong estimator before any write
            return None
        return await self._compactor.run_manual(wait=wait, timeout=timeout)

    async def plan_compaction(self) -> CompactionPlan | None:
        """What :meth:`compact` would do now, computed but not written (a dry run).

        The summarizer *is* called (the plan depends on its answer); nothing is written and no
        lease is taken. Returns ``None`` for a session that does not exist yet.
        """
        snap = await self._context.snapshot()
        if snap is None:
            return None
        plan, _seconds, _usage = await self._compactor.plan(snap, force=True, drop_noise=True)
        return plan

    async def _notify(self, report: CompactionReport) -> None:
        embedding = self._context.embedding
        if embedding is not None:  # what left working memory gets its vectors now
            embedding.start()
        for observer in list(self._observers):
            try:
                result = observer(report)
                if inspect.isawaitable(result):
                    await result
            except Exception:  # an observer's bug must not undo or hide a compaction
                log.exception("memstore: compaction observer %r failed", observer)

    # -- reading ---------------------------------------------------------------------------

    async def estimated_tokens(self) -> int:
        """The session's total: items + 4 each, the summary + 12 (0 before any append)."""
        snap = await reads.snapshot(self._db, self.session_id)
        return 0 if snap is None else snap.total_tokens

    async def items(self) -> list[MemoryItem]:
        """Active items, oldest first."""
        return await reads.active_items(self._db, self.session_id)

    async def forgotten_items(self) -> list[MemoryItem]:
        """Items removed by compactions (rows are never deleted), by seq, with their fate."""
        return [item for item in await reads.all_items(self._db, self.session_id) if item.fate]

    async def summary(self) -> str | None:
        """The rolling summary, or ``None``."""
        snap = await reads.snapshot(self._db, self.session_id)
        return None if snap is None else snap.summary

    async def snapshot(self) -> Snapshot | None:
        """A consistent read of the whole working memory (``None``: not written yet)."""
        return await reads.snapshot(self._db, self.session_id)

    async def build_model_input(self, *, recall: str | None = None) -> list[dict[str, Any]]:
        """The Responses API ``input`` list, never above the hard limit.

        While the session waits for a compaction (another worker holds the lease), the
        policy's model-free phases are applied to what is returned, not to what is stored.

        With ``ltm_scopes``, one "Relevant memories" ``developer`` message follows the
        summary. Its tokens (message framing included, at most ``ltm_budget``; the
        lowest-priority entries are left out to fit) count against the hard limit, and
        working memory is shown within what remains, so the whole input stays within it.
        Memories never enter the session itself: they do not trigger compactions.

        With ``recall`` (or, on a handle opened with ``recall_budget``, by default with the
        newest user message), one more fenced ``developer`` message follows: the passages
        that left working memory and best match it, oldest first, within ``recall_budget``
        tokens (default ``hard - target``), counted against the hard limit the same way.
        Nothing the input already holds is recalled.

        Args:
            recall: What to search the session's history for.

        Raises:
            ValidationError: ``recall`` is not text, blank or too long.
        """
        return await assemble(self._input_sources, recall)

    async def reports(self) -> list[CompactionReport]:
        """Every compaction report of the session, oldest first."""
        return await reads.reports(self._db, self.session_id)

    async def require(self) -> Snapshot:
        """The snapshot, or raise :class:`SessionNotFoundError` (for tools and the CLI)."""
        snap = await reads.snapshot(self._db, self.session_id)
        if snap is None:
            raise SessionNotFoundError(self.session_id)
        return snap

    async def record_input_count(self, model: str, estimated: int, reported: int) -> None:
        """Record memstore's count of one model request beside the model's ``input_tokens``
        (:mod:`memstore.core.input_counts`); ``memstore show`` sums them up."""
        from memstore.core.input_counts import InputCount
        from memstore.db import request_counts

        count = InputCount(0, model, estimated, reported)
        await request_counts.record(self._db, self.session_id, count)

    def add_observer(
        self, callback: Observer | Callable[[CompactionReport], Awaitable[Any]]
    ) -> None:
        """Call ``callback(report)`` (sync or async) after every compaction this handle commits."""
        self._observers.append(callback)

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
        scope = SearchScope((self.session_id,), (), include_active=bool(include_active))
        context = self._context
        return await search_scope(context.database, context.embedding, query, scope, limit, mode)
