"""One session's model input, assembled: working memory, long-term memories, recalled passages.

The session handle decides *what* the model may see; this module gathers it and shares the hard
limit between the parts, in this order:

1. the "Relevant memories" message (long-term entries of the handle's scopes), at most
   ``ltm_budget`` tokens. Without an explicit ``ltm_budget`` the message may grow past
   ``hard - target`` into the room working memory leaves: a fresh session shows more
   memories. When the entries do not all fit, those that best match the query (or the newest
   user message) go first (:meth:`LongTermMemory.memories`); when the input also recalls,
   only those take their share first (half the room), and the others fill what recall left;
2. recalled passages (what left working memory and matches the query), at most
   ``recall_budget`` tokens and never more than the memories left. A scoped session recalls
   from its scope's other sessions too (:mod:`memstore.memory.cross_session_recall`), and
   without an explicit ``recall_budget`` its recall may likewise fill the room working memory
   and the memories leave;
3. working memory (summary and items) within what remains, through the policy's
   :func:`~memstore.core.policy.bounded_view`, so the whole input stays within the hard limit
   even while another worker is mid-compaction.

Working memory keeps its place: memories and recall grow only into room it does not use, so
neither ever pushes a current item out of the view beyond ``hard - target`` tokens each.

Rendering (labels, fences, Responses messages) is :mod:`memstore.render`; the search is
:mod:`memstore.db.search`. Each input is a ``memstore.build_model_input`` span while the
application traces, and its recall a ``search_memory`` span within it
(:mod:`memstore.memory.tracing`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memstore.core.ltm_entries import memory_budget
from memstore.core.policy import Snapshot, bounded_view
from memstore.core.search_terms import SearchScope, search_terms
from memstore.core.values import MemoryItem
from memstore.db import reads
from memstore.db import search as search_db
from memstore.memory.tracing import BUILD_MODEL_INPUT, MemorySpan, recalling, start
from memstore.render.input import build_input
from memstore.render.recall import (
    RECALL_CANDIDATES,
    RecallBlock,
    fit_recall,
    novel_passages,
    recall_query,
)

if TYPE_CHECKING:
    from memstore.memory.context import SessionContext
    from memstore.memory.long_term import LongTermMemory, MemoriesBlock
    from memstore.render.scope_recall import ScopeRecallBlock


@dataclass(frozen=True)
class InputSources:
    """What one handle's model input draws on (its configuration; no state)."""

    #: The session: its database, limits, count, scope (recall spans its sessions), embedder.
    context: SessionContext
    ltm_scopes: Sequence[str]
    ltm_budget: int
    recall_budget: int | None
    long_term: Callable[[], LongTermMemory]
    #: ``ltm_budget`` was given: the memories never grow past it.
    fixed_ltm_budget: bool = True


async def assemble(sources: InputSources, recall: str | None) -> list[dict[str, Any]]:
    """The Responses API ``input`` list for ``sources``, never above the hard limit.

    Raises:
        ValidationError: ``recall`` is not text, blank or too long.
    """
    with start(BUILD_MODEL_INPUT, conversation=sources.context.session_id) as span:
        messages = await _assemble(sources, recall, span)
        span.update(
            {
                "memstore.input.messages": len(messages),
                "memstore.limits.hard": sources.context.limits.hard,
            }
        )
        return messages


async def _assemble(
    sources: InputSources, recall: str | None, span: MemorySpan
) -> list[dict[str, Any]]:
    terms = None if recall is None else search_terms(recall, "recall")
    snap = await sources.context.snapshot()
    hard = sources.context.limits.hard
    free = hard - min(hard, 0 if snap is None else snap.total_tokens)
    recalls = terms is not None or sources.recall_budget is not None
    may_recall = recalls and (
        sources.context.scope is not None or (snap is not None and snap.compaction_count > 0)
    )
    query, text = terms, recall
    # The newest user message ranks the memories and the recall; without either, no query.
    if query is None and snap is not None and (sources.ltm_scopes or may_recall):
        text = recall_query(snap.items)
        query = None if text is None else search_terms(text)
    memories = None
    # Without a fixed ltm_budget, recall is given its room before the entries that do not
    # match the query: a passage that matches says more about the question than an entry
    # that does not. Those entries then fill what recall left (below).
    regrow = may_recall and bool(query) and not sources.fixed_ltm_budget
    candidates = None
    if sources.ltm_scopes:
        budget = sources.ltm_budget
        if not sources.fixed_ltm_budget:
            budget = max(budget, free // 2 if may_recall else free)
        candidates = await sources.long_term().candidates(
            sources.ltm_scopes, query=query, text=text
        )
        if candidates is not None:
            memories = await candidates.fit(
                sources.context.count, min(budget, hard), matching_only=regrow
            )
    room = hard - (0 if memories is None else memories.tokens)
    if sources.context.scope is not None:
        from memstore.memory.cross_session_recall import ScopedHandle, scoped_recall

        handle = ScopedHandle(
            sources.context.database,
            sources.context.session_id,
            sources.context.scope,
            sources.context.limits,
            sources.context.count,
            sources.recall_budget,
            sources.context.embedding,
        )
        spare = free - (0 if memories is None else memories.tokens)
        recalled: RecallBlock | ScopeRecallBlock | None = await scoped_recall(
            handle, snap, terms, memories, room, spare, recall
        )
    elif snap is None:
        return [] if memories is None else [memories.message]
    else:
        recalled = await _recall(sources, snap, terms, memories, room, recall)
    if regrow and candidates is not None and (memories is None or memories.omitted):
        shown = 0 if memories is None else memories.tokens
        left = free - shown - (0 if recalled is None else recalled.tokens)
        if left > 0:
            grown = await candidates.fit(sources.context.count, shown + left)
            memories = grown if grown is not None else memories
    if snap is None:
        return [block.message for block in (memories, recalled) if block is not None]
    room = hard - (0 if memories is None else memories.tokens)
    budget = room - (0 if recalled is None else recalled.tokens)
    kept, summary = bounded_view(snap, sources.context.limits, sources.context.count, budget)
    if span.recording:
        span.update(_parts(snap, kept, summary, memories, recalled))
    return build_input(
        kept,
        summary,
        memories=None if memories is None else memories.message,
        recalled=None if recalled is None else recalled.message,
    )


async def _recall(
    sources: InputSources,
    snap: Snapshot,
    terms: tuple[str, ...] | None,
    memories: MemoriesBlock | None,
    room: int,
    text: str | None = None,
) -> RecallBlock | None:
    if terms is None:
        query = None if sources.recall_budget is None else recall_query(snap.items)
        if query is None:
            return None
        terms = search_terms(query)
    else:
        query = text
    if query is None or snap.compaction_count == 0:  # nothing has left working memory yet
        return None
    with recalling(sources.context.session_id, terms) as span:
        from memstore.memory.embedding import ranking

        scope = SearchScope((sources.context.session_id,), (), include_active=False)
        terms, semantic = await ranking(sources.context.embedding, query, terms, scope)
        found = await search_db.passages(
            sources.context.database,
            terms,
            sources.context.session_id,
            RECALL_CANDIDATES,
            reads.utcnow(),
            semantic,
        )
        held = [item.content for item in snap.items]
        held += [text for text in (snap.summary,) if text is not None]
        if memories is not None:
            held.append(memories.message["content"])
        budget = memory_budget(sources.recall_budget, sources.context.limits, "recall_budget")
        block = fit_recall(novel_passages(found, held), sources.context.count, min(budget, room))
        span.recalled(len(found), block)
        return block


def _parts(
    snap: Snapshot,
    kept: Sequence[MemoryItem],
    summary: str | None,
    memories: MemoriesBlock | None,
    recalled: RecallBlock | ScopeRecallBlock | None,
) -> dict[str, Any]:
    """What a model input is made of, for its span: counts and tokens, never text."""
    return {
        "memstore.input.session_tokens": snap.total_tokens,
        "memstore.input.items": len(kept),
        "memstore.input.summary": summary is not None,
        "memstore.input.memories": 0 if memories is None else len(memories.shown),
        "memstore.input.memories_omitted": 0 if memories is None else memories.omitted,
        "memstore.input.memory_tokens": 0 if memories is None else memories.tokens,
        "memstore.input.recalled": 0 if recalled is None else len(recalled.hits),
        "memstore.input.recall_tokens": 0 if recalled is None else recalled.tokens,
    }
