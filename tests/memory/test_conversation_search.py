"""``store.conversations.search``: every stored message is found by its words, in histories and
in the branches they left, each hit naming the conversations holding it; a scope sees only its
own conversations; deleted messages are gone from the index. On SQLite and PostgreSQL."""

from __future__ import annotations

import pytest
from pydantic_ai import Agent
from pydantic_ai.conversation import Conversation
from pydantic_ai.models.test import TestModel

from memstore import MemoryStore, ValidationError
from memstore.pydantic_ai import MemstoreConversationStore


async def say(
    store: MemstoreConversationStore, conversation_id: str, prompt: str, answer: str, scope: str
) -> None:
    agent = Agent(TestModel(custom_output_text=answer))
    conversation = await store.load(conversation_id) or Conversation(
        conversation_id=conversation_id
    )
    await store.save(await agent.run(prompt, conversation=conversation), scope=scope)


async def test_messages_are_found_by_their_words(any_store: MemoryStore) -> None:
    store = MemstoreConversationStore(any_store)
    await say(store, "trip", "Book the ferry to Bergen", "The ferry leaves at nine", "user:alice")
    await say(store, "trip", "And a hotel by the harbour?", "Booked the Harbour Inn", "user:alice")
    await say(store, "work", "Review the payment service", "Payments look fine", "user:bob")
    await store.fork("trip", at=2, new_conversation_id="trip-b", scope="user:carol")

    hits = await any_store.conversations.search("ferry")
    assert sorted(hit.text for hit in hits) == [
        "assistant: The ferry leaves at nine",
        "user: Book the ferry to Bergen",
    ]
    assert all(hit.conversation_ids == ("trip", "trip-b") for hit in hits)
    assert "[ferry]" in hits[0].snippet
    harbour = await any_store.conversations.search("harbour hotel")
    assert harbour[0].conversation_ids == ("trip",)  # the fork stopped before it
    assert await any_store.conversations.search("payment", scope="user:alice") == []
    bob = await any_store.conversations.search("payment", scope="user:bob")
    assert {hit.conversation_ids for hit in bob} == {("work",)}
    carol = await any_store.conversations.search("ferry harbour", scope="user:carol")
    assert {hit.conversation_ids for hit in carol} == {("trip-b",)}
    assert len(await any_store.conversations.search("ferry", limit=1)) == 1


async def test_left_branches_are_searched_and_deleted_messages_are_not(
    any_store: MemoryStore,
) -> None:
    store = MemstoreConversationStore(any_store)
    await say(store, "trip", "Book the ferry to Bergen", "Done", "user:alice")
    await say(store, "trip", "Make it a seaplane instead", "Seaplane booked", "user:alice")
    record = await store.read_record("trip")
    assert record is not None
    await store.branch("trip", at=2, expected_revision=record.revision)
    hits = await any_store.conversations.search("seaplane")
    assert len(hits) == 2 and all(hit.conversation_ids == ("trip",) for hit in hits)
    await store.delete("trip")
    assert await any_store.conversations.search("seaplane ferry") == []


async def test_bad_queries_and_limits_name_their_field(any_store: MemoryStore) -> None:
    for query, limit, field in (("  ", 10, "query"), (7, 10, "query"), ("x", 0, "limit")):
        with pytest.raises(ValidationError) as raised:
            await any_store.conversations.search(query, limit=limit)  # type: ignore[arg-type]
        assert raised.value.field == field
    assert await any_store.conversations.search('"OR NEAR( * ^') == []  # text, not syntax
