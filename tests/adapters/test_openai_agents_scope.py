"""Scoped MemstoreSessions: the Agents SDK sessions of one user share recall and consolidation.

The real Agents SDK (``Runner`` with its ``OpenAIResponsesModel``) talks to memstore's offline
stand-in ``/v1/responses`` through the real ``openai`` client; both backends.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, OpenAIResponsesModel, Runner
from conftest import recalled_lines, table_counts

from memstore import MemoryLimits, MemoryStore, SessionOptions, WordEstimator
from memstore.errors import ValidationError
from memstore.model_side.stand_in_server import StandInModel, text_reply
from memstore.openai_agents import MemstoreSession

ALICE, BOB = "user:alice", "user:bob"
LIMITS = MemoryLimits(hard=300, target=200, keep_recent=2)
ANSWER = "You booked TAP flight TP1234 to Lisbon, leaving on March 14."


def agent_on(standin: StandInModel) -> Agent[Any]:
    model = OpenAIResponsesModel(model="gpt-test", openai_client=standin.client())
    return Agent(name="travel", model=model)


def scoped(session_id: str, url: str, scope: str | None, **options: Any) -> MemstoreSession:
    options.setdefault("estimator", WordEstimator())
    options.setdefault("limits", LIMITS)
    return MemstoreSession.from_url(session_id, url, scope=scope, **options)


async def test_two_sdk_sessions_of_one_scope_share_recall(backend_url: str) -> None:
    standin = StandInModel()
    standin.queue(
        lambda r: text_reply(r, ANSWER),
        lambda r: text_reply(r, "Noted."),
        lambda r: text_reply(r, "It is TP1234."),
        lambda r: text_reply(r, "I do not know."),
    )
    agent = agent_on(standin)
    first = scoped("alice-1", backend_url, ALICE)
    await Runner.run(agent, "Which airline did I book for the Lisbon trip?", session=first)
    await first.close()

    second = scoped("alice-2", backend_url, ALICE, recall_budget=120)
    await Runner.run(agent, "I am packing for the trip.", session=second)
    await Runner.run(agent, "Which flight to Lisbon did I book?", session=second)
    # The SDK's own request for the second session's next turn recalled the first's answer.
    assert "TP1234" in json.dumps(standin.bodies[2]["input"])
    memory = await second.memory()
    assert memory.scope == ALICE
    lines = recalled_lines(await memory.build_model_input(recall="Lisbon flight airline"))
    assert any(line["session"] == "alice-1" and "TP1234" in str(line["text"]) for line in lines)

    # Another user's session, on the same database, never sees it.
    other = scoped("bob-1", backend_url, BOB, recall_budget=120)
    await Runner.run(agent, "Which flight to Lisbon did I book?", session=other)
    assert "TP1234" not in json.dumps(standin.bodies[3]["input"])
    bob = await other.memory()
    assert "TP1234" not in json.dumps(await bob.build_model_input(recall="Lisbon flight"))
    await second.close()
    await other.close()


@pytest.mark.parametrize("consolidate", [True, False])
async def test_a_scoped_sdk_session_consolidates_what_compaction_removes(
    backend_url: str, consolidate: bool
) -> None:
    standin = StandInModel()
    standin.queue(*[lambda r, n=n: text_reply(r, f"Noted, fact {n}.") for n in range(8)])
    agent = agent_on(standin)
    small = MemoryLimits(hard=120, target=80, keep_recent=2)
    session = scoped("alice-1", backend_url, ALICE, limits=small, consolidate=consolidate)
    for said in [
        "My sister Maria lives in Porto and teaches chemistry at the university.",
        "I adopted a beagle named Biscuit in January, he is three years old.",
        "My favourite dish is grilled sardines, I order them every Friday in Lisbon.",
        "I work as a nurse at Santa Maria hospital on the night shift since 2019.",
        "We are planning a trip to Kyoto in April with my two daughters Ana and Rita.",
        "I run the Lisbon half marathon every March, my best time is 1 hour 52 minutes.",
    ]:
        await Runner.run(agent, said, session=session)
    memory = await session.memory()
    assert await memory.reports()  # compactions happened
    await session.close()
    async with MemoryStore.open(backend_url) as store:
        entries = await store.ltm.list(scope=ALICE)
    if consolidate:
        assert entries and all(e.source and e.source["session"] == "alice-1" for e in entries)
        assert all(e.key.startswith("fact:") for e in entries)
    else:
        assert entries == []


@pytest.mark.parametrize("scope", ["Not A Scope", "user:", "", 42])
async def test_an_invalid_scope_is_a_typed_error_and_writes_nothing(
    backend_url: str, tmp_path: Path, scope: Any
) -> None:
    with pytest.raises(ValidationError) as raised:
        MemstoreSession.from_url("alice-1", backend_url, scope=scope)
    assert raised.value.field == "scope"
    if "://" not in backend_url:
        assert not Path(backend_url).exists()  # nothing was even opened
    async with MemoryStore.open(backend_url) as store:
        assert await store.sessions() == []
        assert set((await table_counts(store)).values()) == {0}


async def test_session_options_open_the_session_as_keywords_do(backend_url: str) -> None:
    """``options=SessionOptions(...)`` is what the keywords say; a keyword replaces its field."""
    options = SessionOptions(scope=ALICE, estimator=WordEstimator(), limits=LIMITS)
    given = MemstoreSession.from_url("alice-1", backend_url, options=options)
    replaced = MemstoreSession.from_url("bob-1", backend_url, options=options, scope=BOB)
    try:
        await given.add_items([{"role": "user", "content": "hello"}])
        await replaced.add_items([{"role": "user", "content": "hello"}])
        first, second = await given.memory(), await replaced.memory()
        assert (first.scope, second.scope) == (ALICE, BOB)
        assert first.estimator.name == WordEstimator().name
        assert first.handle == (await given.memory()).handle  # one writer: one handle
    finally:
        await given.close()
        await replaced.close()
    async with MemoryStore.open(backend_url) as store:
        assert {info.id: info.scope for info in await store.sessions()} == {
            "alice-1": ALICE,
            "bob-1": BOB,
        }
