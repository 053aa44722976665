"""What the command line and the adapters ask of the store through its public face: a search
confined to one scope, a preview of a session's input, an export
checked before a database is opened, and a schema read without opening a store."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from memstore import (
    MemoryStore,
    SchemaStatus,
    SessionNotFoundError,
    ValidationError,
    WordEstimator,
)

ALICE, BOB = "user:alice", "user:bob"


async def _three_sessions(store: MemoryStore) -> None:
    for session_id, scope in (("a1", ALICE), ("b1", BOB), ("loose", None)):
        memory = store.session(session_id, scope=scope, estimator=WordEstimator())
        await memory.add("user", f"the zanzibar code of {session_id}")


async def test_a_confined_search_sees_its_scope_and_unscoped_sessions_only(
    any_store: MemoryStore,
) -> None:
    await _three_sessions(any_store)
    await any_store.ltm.set("code", "zanzibar alice", scope=ALICE)
    await any_store.ltm.set("code", "zanzibar bob", scope=BOB)

    hits = await any_store.search("zanzibar", confined_to=ALICE)

    sessions = {hit.session_id for hit in hits if hit.source == "item"}
    entries = {hit.entry.scope for hit in hits if hit.entry is not None}
    assert sessions == {"a1", "loose"}
    assert entries == {ALICE}
    unconfined = await any_store.search("zanzibar")
    assert {hit.session_id for hit in unconfined if hit.source == "item"} == {"a1", "b1", "loose"}


async def test_a_confined_search_refuses_another_scope_by_name(any_store: MemoryStore) -> None:
    with pytest.raises(ValidationError) as raised:
        await any_store.search("zanzibar", scopes=[BOB], confined_to=ALICE)
    assert raised.value.field == "scopes"
    with pytest.raises(ValidationError) as raised:
        await any_store.search("zanzibar", confined_to="not a scope")
    assert raised.value.field == "confined_to"


async def test_a_preview_of_a_new_session_needs_a_scope_and_writes_nothing(
    store: MemoryStore,
) -> None:
    await store.ltm.set("seat", "aisle", scope=ALICE)
    with pytest.raises(SessionNotFoundError):
        await store.preview("new-one")

    memory = await store.preview("new-one", [ALICE])

    assert memory.scope == ALICE
    assert "aisle" in json.dumps(await memory.build_model_input())
    assert await store.sessions() == []


async def test_an_export_is_checked_before_any_database(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        MemoryStore.check_export([{"type": "nonsense"}])
    assert list(tmp_path.iterdir()) == []


async def test_the_schema_is_read_without_opening_a_store(tmp_path: Path) -> None:
    path = tmp_path / "fresh.db"
    async with MemoryStore.open(path):
        pass
    before, after = await MemoryStore.schema_status(path)
    assert isinstance(before, SchemaStatus)
    assert before == after and before.up_to_date
