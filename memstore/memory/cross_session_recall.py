"""A scoped session's recall: its own forgotten history and its scope's other sessions.

A session opened with ``scope="user:alice"`` recalls, for a query (or, with ``recall_budget``,
the newest user message), from three places: what left its own working memory, every other
session recorded in the same scope (active or forgotten: their working memory is not in this
input), and, through the "Relevant memories" message, the scope's long-term entries. The
search is :mod:`memstore.db.scope_search` (only the scope's sessions are ever searched), the
rendering :mod:`memstore.render.scope_recall` (each line names its session and when it was
written).

Budget: an explicit ``recall_budget`` caps the block; without one it may use the larger of
``hard - target`` and the room working memory and the memories leave, so a fresh session of a
known user spends its whole hard limit on what it knows of them. The block is always within
the room the memories left, so the input stays within the hard limit.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import TYPE_CHECKING

from memstore.core.ltm_entries import memory_budget
from memstore.core.policy import Snapshot
from memstore.core.search_terms import SearchScope, search_terms
from memstore.core.values import MemoryLimits
from memstore.db import reads
from memstore.db.scope_search import scope_members, scope_passages
from memstore.memory.tracing import recalling
from memstore.render.recall import RECALL_CANDIDATES, novel_passages, recall_query
from memstore.render.scope_recall import ScopeRecallBlock, fit_scope_recall

if TYPE_CHECKING:
    from memstore.db import Database
    from memstore.memory.embedding import EmbeddingService
    from memstore.memory.long_term import MemoriesBlock


@dataclass(frozen=True)
class ScopedHandle:
    """What a scoped recall needs of the handle."""

    database: Database
    session_id: str
    scope: str
    limits: MemoryLimits
    count: Callable[[str], int]
    recall_budget: int | None
    embedding: EmbeddingService | None = None


async def scoped_recall(
    sources: ScopedHandle,
    snap: Snapshot | None,
    terms: tuple[str, ...] | None,
    memories: MemoriesBlock | None,
    room: int,
    spare: int,
    text: str | None = None,
) -> ScopeRecallBlock | None:
    """The recall block of a scoped session (``None``: no query, or nothing matches).

    Args:
        sources: The handle's configuration.
        snap: Its working memory (``None``: the session has no item yet).
        terms: The query's words; ``None``: the newest user message, if the handle recalls
            by default (``recall_budget``).
        memories: The memories block already in the input (its text is not recalled again).
        room: Tokens left under the hard limit after the memories.
        spare: Tokens neither working memory nor the memories use.
        text: The query's text, when ``terms`` came from one (ranked by meaning too).
    """
    if terms is None:
        query = None
        if sources.recall_budget is not None and snap is not None:
            query = recall_query(snap.items)
        if query is None:
            return None
        terms = search_terms(query)
    else:
        query = text
    if query is None:
        return None
    with recalling(sources.session_id, terms, sources.scope) as span:
        semantic = None
        if sources.embedding is not None:
            from memstore.memory.embedding import ranking

            members = await sources.database.run_read(partial(scope_members, scope=sources.scope))
            scope = SearchScope(tuple(dict.fromkeys([sources.session_id, *members])), ())
            terms, semantic = await ranking(sources.embedding, query, terms, scope)
        found, when, _others = await scope_passages(
            sources.database,
            terms,
            sources.session_id,
            sources.scope,
            RECALL_CANDIDATES,
            reads.utcnow(),
            own=snap is not None and snap.compaction_count > 0,
            semantic=semantic,
        )
        held: list[str] = []
        if snap is not None:
            held += [item.content for item in snap.items]
            held += [text for text in (snap.summary,) if text is not None]
        if memories is not None:
            held.append(memories.message["content"])
        if sources.recall_budget is not None:
            budget = sources.recall_budget
        else:
            budget = max(memory_budget(None, sources.limits), spare)
        block = fit_scope_recall(
            sources.scope, novel_passages(found, held), when, sources.count, min(budget, room)
        )
        span.recalled(len(found), block)
        return block
