"""A handle opened with a scope cannot read, nor write, a session recorded in another scope.

``store.session(ID, scope="user:alice")`` on a session ``user:bob``'s handle made refuses every
call with the error an append gets (``ValidationError`` naming ``scope``), writes nothing, and
shows none of bob's text; bob's own handle, an unscoped one and ``store.attach`` still work.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from conftest import table_counts

from memstore import MemoryLimits, MemoryStore, ValidationError, WordEstimator
from memstore.memory.session import SessionMemory

LIMITS = MemoryLimits(hard=40, target=25, keep_recent=2)
SECRET = "ZX4417"
REFUSAL = "session 'bob-chat' belongs to 'user:bob', not 'user:alice'"

#: Every call of a handle that touches its session, reads first.
CALLS: dict[str, Callable[[SessionMemory], Awaitable[Any]]] = {
    "build_model_input": lambda m: m.build_model_input(),
    "build_model_input(recall)": lambda m: m.build_model_input(recall="passport number"),
    "search": lambda m: m.search("passport"),
    "search(include_active)": lambda m: m.search("passport", include_active=True),
    "consolidation_reports": lambda m: m.consolidation_reports(),
    "items": lambda m: m.items(),
    "forgotten_items": lambda m: m.forgotten_items(),
    "summary": lambda m: m.summary(),
    "snapshot": lambda m: m.snapshot(),
    "estimated_tokens": lambda m: m.estimated_tokens(),
    "reports": lambda m: m.reports(),
    "require": lambda m: m.require(),
    "plan_compaction": lambda m: m.plan_compaction(),
    "compact": lambda m: m.compact(),
    "consolidate": lambda m: m.consolidate(),
    "consolidate(dry_run)": lambda m: m.consolidate(dry_run=True),
    "clear": lambda m: m.clear(),
    "pop_item": lambda m: m.pop_item(),
    "end_pending": lambda m: m.end_pending(),
    "record_input_count": lambda m: m.record_input_count("gpt-4o-mini", 10, 12),
    "add": lambda m: m.add("user", "alice writes here"),
    "add_items": lambda m: m.add_items([{"role": "user", "content": "alice again"}]),
}


async def _bobs_session(store: MemoryStore) -> SessionMemory:
    bob = store.session("bob-chat", scope="user:bob", limits=LIMITS, estimator=WordEstimator())
    await bob.add("user", f"My passport number is {SECRET}.")
    for turn in range(12):
        role = "user" if turn % 2 else "assistant"
        await bob.add(role, f"turn {turn} about the passport renewal and the trip")
    assert await bob.reports(), "bob's session compacted: there is history to recall"
    await bob.consolidate()
    return bob


@pytest.mark.parametrize("call", CALLS, ids=list(CALLS))
async def test_a_handle_of_another_scope_is_refused_everything(
    any_store: MemoryStore, call: str
) -> None:
    await _bobs_session(any_store)
    counts = await table_counts(any_store)
    alice = any_store.session(
        "bob-chat", scope="user:alice", limits=LIMITS, estimator=WordEstimator()
    )
    with pytest.raises(ValidationError) as refused:
        await CALLS[call](alice)
    assert refused.value.field == "scope"
    assert str(refused.value) == f"scope: {REFUSAL}"
    assert SECRET not in str(refused.value)
    assert await table_counts(any_store) == counts


async def test_its_owner_and_unscoped_readers_still_read(any_store: MemoryStore) -> None:
    bob = await _bobs_session(any_store)
    hits = await bob.search("passport number")
    assert SECRET in hits[0].text
    assert await bob.build_model_input(recall="passport number")
    assert await bob.consolidation_reports()
    unscoped = any_store.session("bob-chat", limits=LIMITS, estimator=WordEstimator())
    assert await unscoped.items() == await bob.items()
    attached = await any_store.attach("bob-chat")
    assert attached.scope == "user:bob" and await attached.reports() == await bob.reports()


async def test_a_session_of_no_scope_stays_open_to_a_scoped_handle(any_store: MemoryStore) -> None:
    """As for writes: a session recorded in no scope belongs to nobody."""
    await any_store.session("shared", estimator=WordEstimator()).add("user", "hello there")
    alice = any_store.session("shared", scope="user:alice", estimator=WordEstimator())
    assert [item.content for item in await alice.items()] == ["hello there"]
    await alice.add("user", "alice adds a line")
    assert len(await alice.items()) == 2
