"""One append path for an item and a turn: a batch bumps the session row once and inserts its
rows together, yet stores exactly what appending its items one call each would have."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from memstore import MemoryStore, WordEstimator
from memstore.errors import IdempotencyConflictError, ValidationError


def call(call_id: str) -> dict[str, Any]:
    return {"type": "function_call", "call_id": call_id, "name": "lookup", "arguments": "{}"}


def output(call_id: str) -> dict[str, Any]:
    return {"type": "function_call_output", "call_id": call_id, "output": "order 4 shipped"}


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


def reply(text: str) -> dict[str, Any]:
    return {"role": "assistant", "content": [{"type": "output_text", "text": text}]}


#: A user's turn, then a model response stored on its own (no user message: its turn is the
#: handle's current one, which the database tells the batch's first item).
TURNS = [
    [user("where is order 4?"), call("c1"), output("c1"), reply("it shipped")],
    [call("c2"), output("c2"), reply("and it arrives on Monday")],
]


def ledger(items: list[Any]) -> list[tuple[Any, ...]]:
    return [(i.seq, i.version, i.turn, i.kind, i.call_id, i.payload) for i in items]


async def state(memory: Any) -> tuple[Any, ...] | None:
    """What a refused append must leave as it was: the version, items and total."""
    snap = await memory.snapshot()
    return None if snap is None else (snap.version, snap.items, snap.total_tokens)


async def test_a_batch_stores_what_one_call_per_item_would(any_store: MemoryStore) -> None:
    batched = any_store.session("batched", estimator=WordEstimator(), handle="worker-1")
    single = any_store.session("single", estimator=WordEstimator(), handle="worker-1")
    for turn in TURNS:
        await batched.add_items(turn)
        for item in turn:
            await single.add_items([item])
    assert ledger(await batched.items()) == ledger(await single.items())
    assert [i.turn for i in await batched.items()] == [1] * 7
    one, other = await batched.snapshot(), await single.snapshot()
    assert one is not None and other is not None
    assert (
        (one.version, one.total_tokens)
        == (other.version, other.total_tokens)
        == (7, one.total_tokens)
    )
    assert await any_store.check() == []


async def test_an_output_answered_twice_in_one_batch_writes_nothing(any_store: MemoryStore) -> None:
    memory = any_store.session("twice", estimator=WordEstimator())
    await memory.add_items(TURNS[0])
    before = await state(memory)
    with pytest.raises(ValidationError) as caught:
        await memory.add_items([user("again?"), call("c9"), output("c9"), output("c9")])
    assert caught.value.field == "items[3].call_id"
    assert await state(memory) == before


async def test_a_batch_whose_later_key_is_taken_is_a_conflict(any_store: MemoryStore) -> None:
    memory = any_store.session("keys", estimator=WordEstimator())
    await memory.add("user", "stored under the second key of a batch", idempotency_key="t1#2")
    before = await state(memory)
    with pytest.raises(IdempotencyConflictError):
        await memory.add_items([user("a"), user("b")], idempotency_key="t1")
    assert await state(memory) == before


async def test_a_retried_batch_reports_the_total_as_it_stands(any_store: MemoryStore) -> None:
    memory = any_store.session("retry", estimator=WordEstimator())
    first = await memory.add_items(TURNS[0], idempotency_key="turn-1")
    total = await memory.estimated_tokens()
    again = await memory.add_items(TURNS[0], idempotency_key="turn-1")
    assert [i.id for i in again] == [i.id for i in first]
    assert await memory.estimated_tokens() == total
    item = await memory.add("user", "one more", idempotency_key="one")
    assert (await memory.add("user", "one more", idempotency_key="one")).id == item.id


async def test_a_turn_shares_one_timestamp_in_the_stored_text_form(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        await store.session("t", estimator=WordEstimator()).add_items(TURNS[0])
    with closing(sqlite3.connect(db_path)) as conn:
        stamps = {row[0] for row in conn.execute("SELECT created_at FROM items")}
        updated = conn.execute("SELECT updated_at FROM sessions").fetchone()[0]
    assert stamps == {updated}  # one transaction, one moment
    assert len(updated) == len("2026-12-01 17:00:00.000000")
