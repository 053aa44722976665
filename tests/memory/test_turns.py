"""Several writers on one session: pending calls judged per handle, turns kept whole.

Each ``store.session(...)`` is a handle of its own (one agent worker); the tests with OS
processes run the real Agents SDK in ``agents_worker.py``.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from conftest import assert_valid_responses_input

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.config import Settings
from memstore.core.policy import protected_ids
from memstore.core.turns import turn_order
from memstore.core.values import MemoryItem, MemoryKind, MemoryRole, Priority
from memstore.errors import ConfigurationError
from memstore.memory.session import SessionMemory

HERE = Path(__file__).parent
#: The Agents SDK worker lives beside the adapters' tests, which start it too.
AGENTS_WORKER = HERE.parent / "adapters" / "agents_worker.py"
TIGHT = MemoryLimits(hard=60, target=30, keep_recent=1)


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def assistant(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": text}


def call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "lookup", "arguments": "{}"}


def output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "shipped on Monday"}


def handle(store: MemoryStore, limits: MemoryLimits = TIGHT) -> SessionMemory:
    return store.session("shared", limits=limits, estimator=WordEstimator())


async def flood(memory: SessionMemory, turns: int) -> None:
    """Another writer's turns, enough to compact the session several times over."""
    for n in range(turns):
        await memory.add_items([user(f"other question {n} about the weather today"),
                                assistant(f"other answer {n}: sunny and warm")])  # fmt: skip


async def test_a_waiting_call_survives_another_writers_turns(any_store: MemoryStore) -> None:
    worker, other = handle(any_store), handle(any_store)
    await worker.add_items([user("where is order 4"), call("c1")])
    await flood(other, 8)
    assert len(await worker.reports()) >= 2  # compacted while the tool ran
    kept = {item.call_id for item in await worker.items()}
    assert "c1" in kept  # pending: its own writer has not moved on
    await worker.add_items([output("c1"), assistant("Order 4 shipped on Monday.")])  # no error
    model_input = await worker.build_model_input()
    assert_valid_responses_input(model_input)
    # The call and its output stay one unit: kept together, or summarized together (the
    # worker's turn began first, so in the model's order it is the oldest).
    assert [e.get("call_id") for e in model_input if e.get("type")] in (["c1", "c1"], [])
    assert await any_store.check("shared") == []


async def test_its_own_writer_moving_on_ends_the_wait(any_store: MemoryStore) -> None:
    worker = handle(any_store)
    await worker.add_items([user("where is order 4"), call("c1")])
    await worker.add_items([user("never mind, where is order 5")])  # the turn broke off
    await flood(handle(any_store), 8)
    assert "c1" not in {item.call_id for item in await worker.items()}


@pytest.mark.parametrize("how", ["deadline", "closed"])
async def test_a_closed_or_timed_out_writer_holds_no_budget(tmp_path: Path, how: str) -> None:
    settings = Settings(pending_s=0.05 if how == "deadline" else 900.0)
    async with MemoryStore.open(tmp_path / "m.db", settings=settings) as store:
        worker = handle(store)
        await worker.add_items([user("where is order 4"), call("c1")])
        if how == "closed":
            await worker.end_pending()
        else:
            await asyncio.sleep(0.1)
        await flood(handle(store), 8)
        assert "c1" not in {item.call_id for item in await worker.items()}
        # The output arrives after its call left: stored, left out of the input, no error.
        stored = await worker.add_items([output("c1")])
        assert stored[0].payload == output("c1")
        model_input = await worker.build_model_input()
        assert output("c1") not in model_input
        assert_valid_responses_input(model_input)
        assert await store.check("shared") == []


def test_the_pending_time_is_a_setting() -> None:
    assert Settings.from_env({"MEMSTORE_PENDING_SECONDS": "30"}).pending_s == 30.0
    with pytest.raises(ConfigurationError) as caught:
        Settings.from_env({"MEMSTORE_PENDING_SECONDS": "0"})
    assert caught.value.field == "MEMSTORE_PENDING_SECONDS"


async def test_turns_stay_whole_in_the_model_input(any_store: MemoryStore) -> None:
    roomy = MemoryLimits(hard=10_000, target=9_000, keep_recent=4)
    first, second = handle(any_store, roomy), handle(any_store, roomy)
    await first.add_items([user("P0 question 1")])
    await second.add_items([user("P1 question 1")])
    await first.add_items([call("p0"), output("p0"), assistant("P0 answer 1")])
    await second.add_items([assistant("P1 answer 1")])
    await first.add_items([user("P0 question 2")])
    texts = [e.get("content", e.get("call_id")) for e in await first.build_model_input()]
    assert texts == ["P0 question 1", "p0", "p0", "P0 answer 1",
                     "P1 question 1", "P1 answer 1", "P0 question 2"]  # fmt: skip
    # The audit keeps the commit order.
    audit = [item.content for item in await first.items()]
    assert audit[:2] == ["P0 question 1", "P1 question 1"]
    # get_items(limit=N) cuts in the model's order.
    from memstore.openai_agents import MemstoreSession

    tail = await MemstoreSession(second).get_items(limit=3)
    assert [e["content"] for e in tail] == ["P1 question 1", "P1 answer 1", "P0 question 2"]


async def test_an_output_joins_its_calls_turn_whoever_adds_it(any_store: MemoryStore) -> None:
    roomy = MemoryLimits(hard=10_000, target=9_000, keep_recent=4)
    first, second = handle(any_store, roomy), handle(any_store, roomy)
    await first.add_items([user("P0 question"), call("p0")])
    await second.add_items([user("P1 question")])
    await second.add_items([output("p0")])  # a tool runner of its own reported back
    model_input = await first.build_model_input()
    assert [e.get("content", e.get("type")) for e in model_input] == [
        "P0 question", "function_call", "function_call_output", "P1 question",
    ]  # fmt: skip


async def test_pop_item_takes_back_only_its_own_items(any_store: MemoryStore) -> None:
    first, second, idle = handle(any_store), handle(any_store), handle(any_store)
    await first.add_items([user("P0 question")])
    await second.add_items([user("P1 question")])
    await first.add_items([assistant("P0 answer")])
    popped = await second.pop_item()
    assert popped is not None and popped.content == "P1 question"
    assert await idle.pop_item() is None  # it added nothing: nothing of it to take back
    assert [item.content for item in await first.items()] == ["P0 question", "P0 answer"]


def _item(seq: int, handle_id: str, turn: int | None, kind: MemoryKind) -> MemoryItem:
    role = MemoryRole.USER if kind is MemoryKind.USER_MESSAGE else MemoryRole.ASSISTANT
    from datetime import UTC, datetime

    return MemoryItem(
        id=f"i{seq}", session_id="s", seq=seq, role=role, kind=kind, priority=Priority.NORMAL,
        content=f"{handle_id} {seq}", timestamp=datetime.now(UTC), estimated_tokens=2,
        handle=handle_id, turn=turn,
    )  # fmt: skip


def test_keep_recent_counts_in_the_models_order() -> None:
    q, a = MemoryKind.USER_MESSAGE, MemoryKind.ASSISTANT_MESSAGE
    items = [_item(1, "p0", 1, q), _item(2, "p1", 2, q), _item(3, "p0", 1, a)]
    assert [i.seq for i in turn_order(items)] == [1, 3, 2]
    assert protected_ids(items, 1) == {"i2"}  # the newest in the model's order: P1's question
    legacy = [_item(n, "", None, q) for n in (1, 2, 3)]  # stored before turns were recorded
    assert turn_order(legacy) == legacy


def test_two_sdk_processes_keep_their_turns_whole(backend_url: str) -> None:
    turns = 5
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(AGENTS_WORKER),
                backend_url,
                name,
                str(turns),
            ]
        )
        for name in ("alpha", "beta")
    ]
    assert [worker.wait(timeout=180) for worker in workers] == [0, 0]

    async def audit() -> None:
        async with MemoryStore.open(backend_url) as store:
            assert await store.check("shared") == []
            memory = store.session("shared", estimator=WordEstimator())
            model_input = await memory.build_model_input()
            assert_valid_responses_input(model_input)
            owner = None
            for entry in model_input:
                text = str(entry.get("content") or entry.get("call_id") or "")
                if entry.get("role") == "user":
                    owner = text.split(":")[0]
                elif entry.get("role") == "developer":
                    continue  # the summary
                elif owner is not None:
                    assert text.startswith(owner) or owner in str(entry), (owner, entry)

    asyncio.run(audit())
