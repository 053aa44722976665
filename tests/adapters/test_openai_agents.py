"""MemstoreSession against the real OpenAI Agents SDK, driven by the SDK's scripted model."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from agents import Agent, Runner, SessionSettings, function_tool
from agents.memory import Session
from agents.testing import ModelStep, ScriptedModel, assistant_message, function_call
from conftest import assert_valid_responses_input
from openai.types.responses import ResponseReasoningItem
from openai.types.responses.response_reasoning_item import Summary

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.adapters.agents_sdk import MemstoreSession
from memstore.core.values import Fate

HERE = Path(__file__).parent


@function_tool
def lookup(order: int) -> str:
    """Look up an order."""
    return f"order {order} left the warehouse on Monday"


def reasoning_item(text: str, n: int) -> ResponseReasoningItem:
    return ResponseReasoningItem(
        id=f"rs_{n}",
        type="reasoning",
        summary=[Summary(type="summary_text", text=text)],
        encrypted_content=f"gAAAAB-secret-{n}==",
    )


def session_on(store: MemoryStore, session_id: str = "chat-1", **options: Any) -> MemstoreSession:
    options.setdefault("estimator", WordEstimator())
    return MemstoreSession(store.session(session_id, **options))


def test_importable_without_the_sdk() -> None:
    code = (
        "import sys; sys.modules['agents'] = None; import memstore.adapters.agents_sdk; print('ok')"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.stdout.strip() == "ok", done.stderr


async def test_satisfies_the_protocol_and_carries_tool_turns(store: MemoryStore) -> None:
    session = session_on(store)
    assert isinstance(session, Session)
    model = ScriptedModel([
        [reasoning_item("the user wants order 4", 1),
         function_call("lookup", {"order": 4}, call_id="call_1")],
        [assistant_message("Order 4 left on Monday.")],
        [assistant_message("You asked about order 4.")],
    ])  # fmt: skip
    agent = Agent(name="support", model=model, tools=[lookup])
    first = await Runner.run(agent, "Where is order 4?", session=session)
    assert first.final_output == "Order 4 left on Monday."
    second = await Runner.run(agent, "What did I ask?", session=session)
    assert second.final_output == "You asked about order 4."
    sent = model.calls[-1].input
    assert_valid_responses_input(sent)
    types = [entry.get("type", "message") for entry in sent]
    assert types == ["message", "reasoning", "function_call", "function_call_output",
                     "message", "message"]  # fmt: skip
    stored = await session.get_items()
    assert stored[1]["encrypted_content"] == "gAAAAB-secret-1=="  # verbatim, blob included
    items = await session._memory.items()  # type: ignore[union-attr]
    assert items[1].content == "the user wants order 4"  # derived text, never the blob
    assert items[2].content == 'lookup({"order":4})'


async def test_streamed_runs_and_run_sync_store_the_same(store: MemoryStore) -> None:
    session = session_on(store)
    model = ScriptedModel([
        [function_call("lookup", {"order": 7}, call_id="s1")],
        [assistant_message("Order 7 is out.")],
    ])  # fmt: skip
    agent = Agent(name="support", model=model, tools=[lookup])
    result = Runner.run_streamed(agent, "Order 7?", session=session)
    async for _event in result.stream_events():
        pass
    assert result.final_output == "Order 7 is out."
    kinds = [entry.get("type", "message") for entry in await session.get_items()]
    assert kinds == ["message", "function_call", "function_call_output", "message"]


def test_run_sync(tmp_path: Path) -> None:
    session = MemstoreSession.from_url("sync-1", tmp_path / "sync.db", estimator=WordEstimator())
    agent = Agent(name="a", model=ScriptedModel([[assistant_message("hello back")]]))
    result = Runner.run_sync(agent, "hello", session=session)
    assert result.final_output == "hello back"
    assert len(asyncio.run(session.get_items())) == 2
    asyncio.run(session.close())


async def test_limits_and_session_settings(store: MemoryStore) -> None:
    session = MemstoreSession(
        store.session("limited", estimator=WordEstimator()),
        session_settings=SessionSettings(limit=2),
    )
    await session.add_items([{"role": "user", "content": f"message {n}"} for n in range(5)])
    assert [i["content"] for i in await session.get_items()] == ["message 3", "message 4"]
    assert len(await session.get_items(limit=3)) == 3
    assert await session.get_items(limit=0) == []
    assert await session.get_items(limit=-1) == []
    model = ScriptedModel([[assistant_message("ok")]])
    await Runner.run(Agent(name="a", model=model), "next", session=session)
    assert [e["content"] for e in model.calls[0].input] == ["message 3", "message 4", "next"]


async def test_a_failing_turn_rewinds_through_pop_item(store: MemoryStore) -> None:
    session = session_on(store)
    model = ScriptedModel([
        ModelStep.raise_error(RuntimeError("model server down")),
        [assistant_message("Order 4 left on Monday.")],
    ])  # fmt: skip
    agent = Agent(name="support", model=model)
    with pytest.raises(RuntimeError):
        await Runner.run(agent, "Where is order 4?", session=session)
    kept = await session.get_items()
    # The application rewinds the failed turn, then runs it again: no duplicate question.
    while kept:
        popped = await session.pop_item()
        assert json.dumps(popped) == json.dumps(kept.pop())  # byte-identical, key order too
    assert await session.get_items() == []
    await Runner.run(agent, "Where is order 4?", session=session)
    assert [e["content"] for e in model.calls[-1].input] == ["Where is order 4?"]
    memory = session._memory
    assert memory is not None
    assert {i.fate for i in await memory.forgotten_items()} <= {Fate.POPPED}


async def test_clear_session_is_on_the_record(store: MemoryStore) -> None:
    session = session_on(store)
    await Runner.run(
        Agent(name="a", model=ScriptedModel([[assistant_message("hi")]])), "hello", session=session
    )
    await session.clear_session()
    assert await session.get_items() == []
    assert await store.check("chat-1") == []
    reports = await store.session("chat-1", estimator=WordEstimator()).reports()
    assert reports[-1].trigger == "clear"
    assert set(reports[-1].removed.values()) == {"cleared"}


async def test_a_long_tool_run_compacts_and_every_request_is_valid(store: MemoryStore) -> None:
    session = session_on(store, limits=MemoryLimits(hard=220, target=120, keep_recent=2))
    steps: list[Any] = []
    turns = 25
    for turn in range(turns):
        steps += [
            [reasoning_item(f"check order {turn}", turn),
             function_call("lookup", {"order": turn}, call_id=f"c{turn}"),
             function_call("lookup", {"order": turn + 100}, call_id=f"d{turn}")],
            [assistant_message(f"Order {turn} and {turn + 100} left on Monday.")],
        ]  # fmt: skip
    model = ScriptedModel(steps)
    agent = Agent(name="support", model=model, tools=[lookup])
    for turn in range(turns):
        await Runner.run(agent, f"Where are orders {turn} and {turn + 100}?", session=session)
    for call in model.calls:
        assert_valid_responses_input(call.input)
    reports = await store.session("chat-1", estimator=WordEstimator()).reports()
    assert len(reports) >= 5
    assert await store.check("chat-1") == []


def test_two_processes_share_one_session(tmp_path: Path) -> None:
    url = str(tmp_path / "shared.db")
    turns = 6
    workers = [
        subprocess.Popen([sys.executable, str(HERE / "agents_worker.py"), url, name, str(turns)])
        for name in ("alpha", "beta")
    ]
    assert [worker.wait(timeout=120) for worker in workers] == [0, 0]

    async def audit() -> None:
        async with MemoryStore.open(url) as store:
            assert await store.check("shared") == []
            history = await store.history("shared")
            items = sorted(history.items, key=lambda i: i.seq)
            assert len(items) == 2 * turns * 4  # question, call, output, answer per turn
            for index, item in enumerate(items):  # one SDK turn is one transaction
                if item.item_type == "function_call":
                    follower = items[index + 1]
                    assert follower.call_id == item.call_id
            session = MemstoreSession(store.session("shared", estimator=WordEstimator()))
            assert_valid_responses_input(await session.get_items())

    asyncio.run(audit())


async def test_a_limit_never_cuts_a_call_from_its_output(store: MemoryStore) -> None:
    session = session_on(store)
    await session.add_items([{"role": "user", "content": "where is order 4"}])
    reasoning = reasoning_item("look it up", 1).model_dump(exclude_none=True)
    await session.add_items([
        reasoning,
        {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "c1", "output": "shipped"},
        {"role": "assistant", "content": "It shipped."},
    ])  # fmt: skip
    for limit in range(1, 6):
        tail = await session.get_items(limit=limit)
        assert len(tail) <= limit
        assert_valid_responses_input(tail)
    assert len(await session.get_items(limit=2)) == 1  # the answer; not a lone output


def test_a_from_url_session_survives_a_new_event_loop(backend_url: str) -> None:
    session = MemstoreSession.from_url("loops", backend_url, estimator=WordEstimator())
    asyncio.run(session.add_items([{"role": "user", "content": "first loop"}]))
    asyncio.run(session.add_items([{"role": "user", "content": "second loop"}]))
    contents = [item["content"] for item in asyncio.run(session.get_items())]
    assert contents == ["first loop", "second loop"]
    asyncio.run(session.close())


@function_tool
def track(order: int) -> str:
    """Where an order is."""
    return json.dumps({"courier": ["DPD", "DHL", "UPS"][order % 3], "due_day": order % 5 + 1})


async def test_a_compacted_tool_session_keeps_its_answers_and_no_answered_question_is_open(
    store: MemoryStore,
) -> None:
    session = session_on(store, limits=MemoryLimits(hard=400, target=300, keep_recent=4))
    steps: list[Any] = []
    for n in range(30):
        courier, due = ["DPD", "DHL", "UPS"][(1000 + n) % 3], (1000 + n) % 5 + 1
        steps += [
            [function_call("track", {"order": 1000 + n}, call_id=f"call_{n}")],
            [assistant_message(f"Order {1000 + n} is with {courier}, due day {due}.")],
        ]
    agent = Agent(name="orders", model=ScriptedModel(steps), tools=[track])
    for n in range(30):
        await Runner.run(agent, f"Where is order {1000 + n}?", session=session)
    memory = store.session("chat-1", estimator=WordEstimator())
    reports = await memory.reports()
    assert len(reports) >= 3 and all(r.summary_error is None for r in reports)
    summary = await memory.summary() or ""
    active = {item.call_id for item in await memory.items() if item.call_id}
    # No answered question is presented as open; the one whose answer is still among the
    # recent items (the newest request when the compaction ran) is the objective.
    assert "Open questions" not in summary
    asked = [line for line in summary.splitlines() if line.endswith("?")]
    for line in asked:
        assert line.startswith("Current objective: Where is order 10")
        assert f"call_{int(line.rstrip('?')[-2:])}" in active
    forgotten = [n for n in range(30) if f"call_{n}" not in active]
    kept = [
        n
        for n in forgotten
        if any(
            f"{1000 + n}" in line
            and ["DPD", "DHL", "UPS"][(1000 + n) % 3] in line
            and f", {(1000 + n) % 5 + 1}" in line  # the due day, a value of the call's line
            for line in summary.splitlines()
        )
    ]
    assert forgotten and len(kept) >= 0.75 * len(forgotten), summary
