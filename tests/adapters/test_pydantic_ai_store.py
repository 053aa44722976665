"""What only memstore's conversation store promises: conversations survive a reopened database
byte for byte, a history is one query, a lost race or a bad input writes nothing, a delete
collects exactly the unreachable entries, and of two processes saving with the same revision
exactly one wins. On SQLite and PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic_ai import Agent, BinaryContent, DeferredToolRequests
from pydantic_ai.conversation import Conversation
from pydantic_ai.conversation_store import ConversationConflict, ConversationStore
from pydantic_ai.messages import ModelMessagesTypeAdapter, ModelRequest, UserPromptPart
from pydantic_ai.models.test import TestModel
from sqlalchemy import event

from memstore import MemoryStore, ValidationError
from memstore.core.conversation_keys import StoredConversation, StoredEntry
from memstore.db.tables import conversation_entries
from memstore.pydantic_ai import MemstoreConversationStore

WORKER = Path(__file__).with_name("pydantic_ai_worker.py")
REPO_ROOT = Path(__file__).resolve().parents[2]

#: A first turn calls the tool (TestModel's way); later ones answer in text.
AGENT = Agent(TestModel())


@AGENT.tool_plain
def order_status(order: int) -> str:
    """Where an order is."""
    return f"order {order} left the warehouse"


#: Its first turn pauses on a call waiting for a person's approval.
APPROVALS = Agent(TestModel(), output_type=[str, DeferredToolRequests])


@APPROVALS.tool_plain(requires_approval=True)
def refund(order: int) -> str:
    """Refund an order."""
    return f"refunded order {order}"


async def run_and_save(
    store: ConversationStore, conversation_id: str, prompt: Any, agent: Agent[Any, Any] = AGENT
) -> Any:
    conversation = await store.load(conversation_id) or Conversation(
        conversation_id=conversation_id
    )
    result = await agent.run(prompt, conversation=conversation)
    await store.save(result, scope="user:alice")
    return result


async def entry_count(store: MemoryStore) -> int:
    from sqlalchemy import func, select

    return await store.database.run_read(
        lambda conn: conn.execute(
            select(func.count()).select_from(conversation_entries)
        ).scalar_one()
    )


async def test_a_reopened_database_holds_every_message_byte_for_byte(backend_url: str) -> None:
    image = BinaryContent(data=bytes(range(256)), media_type="image/png")
    async with MemstoreConversationStore.from_url(backend_url) as store:
        paused = await run_and_save(store, "chat", ["Refund this?", image], APPROVALS)
        await store.fork("chat", at=1, new_conversation_id="fork")
        if hasattr(store, "update"):
            await store.update("chat", title="Refunds", metadata={"model": "test"})
        written = await store.read_record("chat")
        dumped = ModelMessagesTypeAdapter.dump_json(paused.all_messages())

    async with MemoryStore.open(backend_url) as reopened:
        again = MemstoreConversationStore(reopened)
        record = await again.read_record("chat")
        assert record == written  # revision, usage, deferred requests, scope, time, title
        assert record is not None and record.deferred_tool_requests is not None
        loaded = await again.load("chat")
        assert loaded is not None
        # Exactly the bytes pydantic-ai's own adapter writes for the history...
        assert ModelMessagesTypeAdapter.dump_json(loaded.messages) == dumped
        stored = await reopened.conversations.read_history(record.head_id)
        assert stored is not None
        assert ("[" + ",".join(entry.message for entry in stored) + "]").encode() == dumped
        # ...and the messages equal, but for the image pydantic-ai reads back as BinaryImage.
        assert loaded.messages[1:] == paused.all_messages()[1:]
        assert stored[0].text.startswith("user: Refund this? [binary image/png, 256 bytes]")
        assert stored[1].text == 'call refund({"order": 0})'
        fork = await again.read_record("fork")
        assert fork is not None and fork.forked_from == "chat"
        assert fork.head_id == stored[0].id


async def test_read_history_is_one_query(backend_url: str) -> None:
    assert MemstoreConversationStore.read_history is not ConversationStore.read_history
    async with MemoryStore.open(backend_url) as memory:
        store = MemstoreConversationStore(memory)
        for prompt in ("one", "two", "three", "four"):
            await run_and_save(store, "chat", prompt)
        record = await store.read_record("chat")
        assert record is not None
        statements: list[str] = []

        def seen(conn: Any, cursor: Any, statement: str, *args: Any) -> None:
            statements.append(statement)

        engine = memory.database.sync_engine
        event.listen(engine, "before_cursor_execute", seen)
        try:
            history = await store.read_history(record.head_id)
            window = await store.read_history(record.head_id, limit=3)
        finally:
            event.remove(engine, "before_cursor_execute", seen)
        queries = [s for s in statements if "conversation_entries" in s]
        assert len(queries) == 2 and all("WITH RECURSIVE" in s for s in queries)
        assert len(history) == 10 and [e.id for e in window] == [e.id for e in history[-3:]]


async def test_a_long_history_reads_back_whole(any_store: MemoryStore) -> None:
    message = ModelMessagesTypeAdapter.dump_json([ModelRequest(parts=[UserPromptPart("hi")])])
    entries = [
        StoredEntry(f"e{i}", f"e{i - 1}" if i else None, "message", message[1:-1].decode())
        for i in range(3000)
    ]
    record = StoredConversation("long", "e2999", "r1", updated_at=_now())
    await any_store.conversations.write_record(record, new_entries=entries, expected_revision=None)
    whole = await any_store.conversations.read_history("e2999")
    assert whole is not None and [e.id for e in whole] == [f"e{i}" for i in range(3000)]
    newest = await any_store.conversations.read_history("e2999", limit=5)
    assert newest is not None and newest[0].parent_id == "e2994" and len(newest) == 5
    assert await any_store.conversations.delete_record("long", expected_revision="r1") == 3000


def _now() -> Any:
    from datetime import UTC, datetime

    return datetime.now(UTC)


async def test_a_lost_race_leaves_no_entry_behind(any_store: MemoryStore) -> None:
    store = MemstoreConversationStore(any_store)
    await run_and_save(store, "chat", "hello")
    first, second = await store.load("chat"), await store.load("chat")
    assert first is not None and second is not None
    await store.save(await AGENT.run("one", conversation=first))
    before = await entry_count(any_store)
    with pytest.raises(ConversationConflict):
        await store.save(await AGENT.run("two", conversation=second))
    assert await entry_count(any_store) == before


async def test_delete_collects_exactly_what_no_record_reaches(any_store: MemoryStore) -> None:
    store = MemstoreConversationStore(any_store)
    await run_and_save(store, "chat", "hello")
    await run_and_save(store, "chat", "more")
    await store.fork("chat", at=4, new_conversation_id="fork")  # after the first turn
    await run_and_save(store, "fork", "elsewhere")
    record = await store.read_record("chat")
    assert record is not None
    await store.branch("chat", at=4, expected_revision=record.revision)  # leaves a branch
    total = await entry_count(any_store)
    fork_entries = await store.load_entries("fork")
    assert fork_entries is not None
    await store.delete("chat")
    assert await entry_count(any_store) == len(fork_entries)  # the branch went with it
    await store.delete("fork")
    assert total > len(fork_entries) and await entry_count(any_store) == 0


async def test_bad_input_names_its_field_and_writes_nothing(any_store: MemoryStore) -> None:
    conversations = any_store.conversations
    good = StoredConversation("chat", None, "r1", updated_at=_now())
    message = '{"parts": [], "kind": "request"}'
    bad_calls: list[tuple[str, Any]] = [
        ("conversation_id", lambda: conversations.read_record(42)),  # type: ignore[arg-type]
        ("limit", lambda: conversations.read_records(limit=-1)),
        ("limit", lambda: conversations.read_history("x", limit=True)),
        (
            "updated_at",
            lambda: conversations.write_record(
                StoredConversation("chat", None, "r1", updated_at=_now().replace(tzinfo=None)),
                expected_revision=None,
            ),
        ),
        (
            "message",
            lambda: conversations.write_record(
                good,
                new_entries=[StoredEntry("e", None, "message", "not json")],
                expected_revision=None,
            ),
        ),
        (
            "usage",
            lambda: conversations.write_record(
                StoredConversation("chat", None, "r1", updated_at=_now(), usage="nul\x00"),
                expected_revision=None,
            ),
        ),
        (
            "new_entries",
            lambda: conversations.write_record(
                good,
                new_entries=[StoredEntry(7, None, "message", message)],  # type: ignore[arg-type]
                expected_revision=None,
            ),
        ),
        (
            "details",
            lambda: conversations.write_details("chat", {"colour": "x"}, expected_revision="r1"),
        ),
    ]
    for field, call in bad_calls:
        with pytest.raises(ValidationError) as raised:
            await call()
        assert raised.value.field == field
    store = MemstoreConversationStore(any_store)
    lone = Conversation(conversation_id="c", messages=[ModelRequest([UserPromptPart("\ud800")])])
    with pytest.raises(ValidationError) as raised:
        await store.save(lone)
    assert raised.value.field == "new_entries"
    assert await conversations.read_records() == [] and await entry_count(any_store) == 0


def test_two_processes_saving_the_same_revision_one_wins(backend_url: str, tmp_path: Path) -> None:
    """Each round both processes load the conversation, start together, and save a turn:
    exactly one save commits and the other gets ConversationConflict."""
    import asyncio

    async def start() -> None:
        async with MemstoreConversationStore.from_url(backend_url) as store:
            await store.save(Conversation(conversation_id="race"))

    asyncio.run(start())
    rounds = 6
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    workers = [
        subprocess.Popen(
            [sys.executable, str(WORKER), backend_url, "race", str(rounds), name, str(tmp_path)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in ("a", "b")
    ]
    try:
        for round_ in range(rounds):
            deadline = time.monotonic() + 120
            ready = [tmp_path / f"ready-{name}-{round_}" for name in ("a", "b")]
            while not all(path.exists() for path in ready):
                assert time.monotonic() < deadline, "a worker never got ready"
                assert all(w.poll() is None for w in workers), workers[0].stderr
                time.sleep(0.005)
            (tmp_path / f"go-{round_}").touch()
        outputs = [worker.communicate(timeout=180) for worker in workers]
    finally:
        for worker in workers:
            worker.kill()
    for worker, (_, err) in zip(workers, outputs, strict=True):
        assert worker.returncode == 0, err
    lines = [[json.loads(line) for line in out.splitlines()] for out, _ in outputs]
    for round_ in range(rounds):
        a, b = lines[0][round_], lines[1][round_]
        assert a["revision"] == b["revision"]  # both saved over the same revision
        assert sorted([a["outcome"], b["outcome"]]) == ["conflict", "saved"]

    async def final() -> Conversation | None:
        async with MemstoreConversationStore.from_url(backend_url) as store:
            return await store.load("race")

    conversation = asyncio.run(final())
    assert conversation is not None and len(conversation.messages) == 2 * rounds
