"""Recall across a scope's sessions, on SQLite and PostgreSQL.

A scoped session recalls from its own forgotten history, its scope's long-term entries and the
scope's other sessions (active or forgotten), each line naming its session and time, within
the hard limit; nothing of another scope ever appears. Long-term entries that do not all fit
are chosen by relevance to the query.
"""

from __future__ import annotations

import json

from conftest import recalled_lines

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.render.input import SUMMARY_PREAMBLE
from memstore.render.recall import RECALL_OPEN

LIMITS = MemoryLimits(hard=300, target=200, keep_recent=2)
ALICE, BOB = "user:alice", "user:bob"


def total_tokens(messages: list[dict[str, object]]) -> int:
    """The input's tokens as memstore counts them (the summary: its text + 12)."""
    total = 0
    for message in messages:
        content = str(message["content"])
        if content.startswith(SUMMARY_PREAMBLE):
            total += WordEstimator().count(content.split("\n\n", 1)[1]) + 12
        else:
            total += WordEstimator().count(content) + 4
    return total


async def test_a_fresh_session_recalls_its_scopes_other_sessions(any_store: MemoryStore) -> None:
    old = any_store.session("alice-1", scope=ALICE, limits=LIMITS, estimator=WordEstimator(),
                            consolidate=False)  # fmt: skip
    await old.add("user", "Which airline did I book for the Lisbon trip?")
    await old.add("assistant", "You booked TAP flight TP1234 leaving on March 14.")
    other = any_store.session("bob-1", scope=BOB, limits=LIMITS, estimator=WordEstimator())
    await other.add("user", "My Lisbon trip is booked with Ryanair flight FR9999.")
    await any_store.ltm.set("trip", "Bob flies to Lisbon on Ryanair", scope=BOB)

    fresh = any_store.session("alice-2", scope=ALICE, limits=LIMITS, estimator=WordEstimator())
    messages = await fresh.build_model_input(recall="Lisbon flight airline")
    lines = recalled_lines(messages)
    assert lines, messages
    assert {line["session"] for line in lines} == {"alice-1"}
    assert all(isinstance(line["when"], str) and line["when"] for line in lines)
    texts = " ".join(str(line["text"]) for line in lines)
    assert "TP1234" in texts
    everything = json.dumps(messages)
    assert "FR9999" not in everything and "Ryanair" not in everything  # never another scope
    assert total_tokens(messages) <= LIMITS.hard


async def test_own_forgotten_history_and_other_sessions_share_the_hard_limit(
    any_store: MemoryStore,
) -> None:
    words = " ".join(f"w{i}" for i in range(12))
    for n in range(3):
        past = any_store.session(f"alice-{n}", scope=ALICE, limits=LIMITS,
                                 estimator=WordEstimator(), consolidate=False)  # fmt: skip
        for i in range(12):
            await past.add("user", f"In session {n} note {i}: the harbour ferry {words}")
    me = any_store.session("alice-9", scope=ALICE, limits=LIMITS, estimator=WordEstimator(),
                           consolidate=False, recall_budget=250)  # fmt: skip
    for i in range(24):  # the first few match best; they soon leave working memory
        topic = "the harbour ferry" if i < 3 else "something else entirely"
        await me.add("user", f"Here note {i}: {topic} {words}")
    assert await me.reports()  # some of its own history left working memory
    messages = await me.build_model_input(recall="harbour ferry")
    lines = recalled_lines(messages)
    sessions = {line["session"] for line in lines}
    assert "alice-9" in sessions and sessions & {"alice-0", "alice-1", "alice-2"}
    assert sessions <= {"alice-0", "alice-1", "alice-2", "alice-9"}
    assert total_tokens(messages) <= LIMITS.hard
    own = [line for line in lines if line["session"] == "alice-9" and "seq" in line]
    active = {item.seq for item in await me.items()}
    assert all(line["seq"] not in active for line in own)  # only what left working memory


async def test_long_term_entries_that_do_not_fit_are_chosen_by_relevance(
    any_store: MemoryStore,
) -> None:
    for i in range(60):
        await any_store.ltm.set(f"note:{i:02}", f"ordinary remark number {i} about nothing much",
                                scope=ALICE)  # fmt: skip
    await any_store.ltm.set("note:allergy", "Alice is allergic to peanuts", scope=ALICE)
    for i in range(60, 80):  # newer than the one that matters: recency alone would hide it
        await any_store.ltm.set(f"note:{i:02}", f"ordinary remark number {i} about nothing much",
                                scope=ALICE)  # fmt: skip
    memory = any_store.session("plain", limits=LIMITS, estimator=WordEstimator(),
                               ltm_scopes=[ALICE], ltm_budget=90)  # fmt: skip
    messages = await memory.build_model_input(recall="is she allergic to peanuts?")
    assert "allergic to peanuts" in json.dumps(messages)
    await memory.add("user", "Any peanuts allergy I should know about?")
    messages = await memory.build_model_input()  # the newest user message is the query
    assert "allergic to peanuts" in json.dumps(messages)


async def test_recall_has_room_before_the_entries_that_do_not_match(any_store: MemoryStore) -> None:
    for i in range(80):  # far more than the input holds, none about the question
        await any_store.ltm.set(f"note:{i:02}", f"ordinary remark number {i} about nothing much",
                                scope=ALICE)  # fmt: skip
    await any_store.ltm.set("note:ferry", "Alice takes the harbour ferry on Mondays", scope=ALICE)
    old = any_store.session("alice-1", scope=ALICE, limits=LIMITS, estimator=WordEstimator(),
                            consolidate=False)  # fmt: skip
    for i in range(8):
        await old.add("user", f"Ferry note {i}: the harbour ferry left pier {i} late again today")
    fresh = any_store.session("alice-2", scope=ALICE, limits=LIMITS, estimator=WordEstimator())
    messages = await fresh.build_model_input(recall="harbour ferry")
    lines = recalled_lines(messages)
    # Every passage about the ferry: more than half the hard limit, which the entries would
    # otherwise have taken first.
    assert sum("harbour ferry left pier" in str(line["text"]) for line in lines) == 8
    raw = next(str(m["content"]) for m in messages if RECALL_OPEN in str(m["content"]))
    assert WordEstimator().count(raw) > LIMITS.hard // 2
    memories = json.dumps([m for m in messages if "<memories>" in str(m["content"])])
    assert "harbour ferry on Mondays" in memories  # the entry that matches comes first
    assert "ordinary remark" in memories  # the others fill what recall left
    assert total_tokens(messages) <= LIMITS.hard
    # Each line names its session; a line that leaves it out continues the line before.
    assert raw.count('"session":"alice-1"') < len(lines)
