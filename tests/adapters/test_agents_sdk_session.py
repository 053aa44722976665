"""MemstoreSession's contract with the SDK: threads and loops, settings, closing, every item."""

from __future__ import annotations

import asyncio
import gc
import json
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from agents.memory import SessionSettings
from conftest import assert_valid_responses_input

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.errors import SessionSettingsError, StorageError, ValidationError
from memstore.openai_agents import MemstoreSession


def open_session(url: str | Path, **options: Any) -> MemstoreSession:
    options.setdefault("estimator", WordEstimator())
    return MemstoreSession.from_url("sdk", url, **options)


def test_one_session_serves_threads_each_with_its_own_loop(backend_url: str) -> None:
    session = open_session(backend_url)
    messages = [{"role": "user", "content": f"Message {n}"} for n in range(10)]

    def add(item: dict[str, Any]) -> None:
        loop = asyncio.new_event_loop()
        try:
            loop.run_until_complete(session.add_items([item]))
        finally:
            loop.close()

    threads = [threading.Thread(target=add, args=(m,)) for m in messages]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert not any(thread.is_alive() for thread in threads)  # no hang

    async def read_and_close() -> list[dict[str, Any]]:
        try:
            return await session.get_items()
        finally:
            await session.close()

    stored = asyncio.run(read_and_close())
    assert sorted(item["content"] for item in stored) == sorted(m["content"] for m in messages)


async def test_session_settings_are_normalised_as_the_sdk_does(store: MemoryStore) -> None:
    memory = store.session("settings", estimator=WordEstimator())
    assert MemstoreSession(memory).session_settings == SessionSettings()
    session = MemstoreSession(memory, session_settings={"limit": 2})
    assert isinstance(session.session_settings, SessionSettings)
    await session.add_items([{"role": "user", "content": f"m{n}"} for n in range(4)])
    assert [item["content"] for item in await session.get_items()] == ["m2", "m3"]
    with pytest.raises(SessionSettingsError, match="Unknown session settings: limitt") as caught:
        MemstoreSession(memory, session_settings={"limitt": 1})
    assert caught.value.field == "session_settings"
    assert isinstance(caught.value, TypeError)  # what the SDK's own sessions raise


@pytest.mark.parametrize("limit", ["x", float("nan"), 2.5, True])
async def test_a_bad_limit_is_a_validation_error(store: MemoryStore, limit: Any) -> None:
    session = MemstoreSession(store.session("limits", estimator=WordEstimator()))
    with pytest.raises(ValidationError) as caught:
        await session.get_items(limit=limit)
    assert caught.value.field == "limit"


def test_a_closed_session_refuses_calls(tmp_path: Path) -> None:
    session = open_session(tmp_path / "closed.db")

    async def use() -> None:
        await session.add_items([{"role": "user", "content": "hello"}])
        await session.close()
        with pytest.raises(StorageError, match="closed"):
            await session.add_items([])
        with pytest.raises(StorageError, match="closed"):
            await session.get_items()

    asyncio.run(use())


def _memstore_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name.startswith("memstore-")]


def test_a_session_dropped_unclosed_leaves_no_thread(tmp_path: Path) -> None:
    before = set(_memstore_threads())
    session = open_session(tmp_path / "dropped.db")
    asyncio.run(session.add_items([{"role": "user", "content": "hello"}]))
    assert [item["content"] for item in asyncio.run(session.get_items())] == ["hello"]
    assert set(_memstore_threads()) - before  # it did start its writer and readers
    del session
    gc.collect()
    deadline = time.monotonic() + 10
    while set(_memstore_threads()) - before and time.monotonic() < deadline:
        time.sleep(0.02)
    assert not set(_memstore_threads()) - before

    async def stored() -> list[str]:  # the write was committed before the threads stopped
        async with MemoryStore.open(tmp_path / "dropped.db") as store:
            return [item.content for item in await store.session("sdk").items()]

    assert asyncio.run(stored()) == ["hello"]


SDK_ITEMS: list[dict[str, Any]] = [
    {"role": "user", "content": "run the tools"},
    {"type": "local_shell_call", "id": "ls_1", "call_id": "shell_1", "status": "completed",
     "action": {"type": "exec", "command": ["ls"], "env": {}}},
    {"type": "local_shell_call_output", "call_id": "shell_1", "output": "README.md"},
    {"type": "tool_search_call", "id": "ts_1", "call_id": None, "execution": "server",
     "arguments": {"query": "weather"}, "status": "completed"},
    {"type": "tool_search_output", "id": "tso_1", "call_id": None, "execution": "server",
     "tools": [], "status": "completed"},
    {"type": "program", "id": "program_item", "call_id": "program", "code": "lookup()",
     "fingerprint": "synthetic"},
    {"type": "function_call", "id": "child", "call_id": "lookup", "name": "lookup",
     "arguments": "{}", "caller": {"type": "program", "caller_id": "program"}},
    {"type": "function_call_output", "call_id": "lookup", "output": "found",
     "caller": {"type": "program", "caller_id": "program"}},
    {"type": "program_output", "id": "program_output", "call_id": "program", "result": "found",
     "status": "completed"},
    {"type": "some_future_item", "id": "x_1", "payload": {"deep": [1, 2, {"three": 3}]}},
]  # fmt: skip


async def test_every_item_the_sdk_writes_is_stored_verbatim(any_store: MemoryStore) -> None:
    session = MemstoreSession(any_store.session("kinds", estimator=WordEstimator()))
    await session.add_items(SDK_ITEMS)
    assert await session.get_items() == SDK_ITEMS  # each one back, unchanged and in order
    memory = await session.memory()
    stored = await memory.items()
    opaque = stored[-1]
    assert opaque.content.startswith("[some_future_item]")
    # Counted by its whole JSON, never by its few words.
    assert opaque.estimated_tokens >= len('{"type":"some_future_item"}') // 3
    assert await any_store.check("kinds") == []


async def test_compaction_keeps_carried_units_valid_with_opaque_items(store: MemoryStore) -> None:
    limits = MemoryLimits(hard=400, target=200, keep_recent=2)
    session = MemstoreSession(store.session("many", limits=limits, estimator=WordEstimator()))
    for n in range(6):  # the same turn again, with call ids of its own
        turn = json.loads(json.dumps(SDK_ITEMS).replace('_id": "', f'_id": "{n}-'))
        await session.add_items(turn)
        assert_valid_responses_input(await session.get_items())
    assert (await session.memory()).session_id == "many"
    assert len(await (await session.memory()).reports()) >= 1
    assert await store.check("many") == []
