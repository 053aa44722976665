"""An import's ids, fork and origin metadata are checked against the database, on both backends.

An edited export is refused, naming the record and the field, with nothing written, when it
says a fork's parent is another session, a missing one or the session itself, that the fork
started past its parent's end, that a copy's origin is another session's item, or when its
item ids are taken already. An untouched export of a fork still imports after its parent.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from clients import memstore_process
from conftest import table_counts

from memstore import MemoryLimits, MemoryStore, ValidationError, WordEstimator

LIMITS = MemoryLimits(hard=40, target=25, keep_recent=2)
Records = list[dict[str, Any]]


async def _talk(store: MemoryStore, session_id: str, about: str, turns: int = 10) -> None:
    memory = store.session(session_id, limits=LIMITS, estimator=WordEstimator())
    await memory.add("user", f"The code word for {session_id} is {about}.")
    for turn in range(turns):
        role = "user" if turn % 2 else "assistant"
        await memory.add(role, f"turn {turn} of {session_id} is about {about} number {turn}")


async def _exported_fork(store: MemoryStore) -> Records:
    """``p`` and ``q`` stay; the export of ``f`` (a fork of ``p``) is returned, ``f`` purged."""
    await _talk(store, "p", "heliotrope")
    await _talk(store, "q", "marigold")
    await store.fork("p", "f", at=8)
    records = await store.export_session("f")
    await store.purge("f")
    return records


def _items(records: Records) -> list[tuple[int, dict[str, Any]]]:
    return [(n, r) for n, r in enumerate(records, 1) if r["type"] == "item"]


def _parent_is_another_session(records: Records) -> str:
    records[0]["parent_id"] = "q"
    return "record 1.parent_id"


def _parent_is_missing(records: Records) -> str:
    records[0]["parent_id"] = "gone"
    return "record 1.parent_id"


def _parent_is_itself(records: Records) -> str:
    records[0]["parent_id"] = "f"
    return "record 1.parent_id"


def _started_past_the_parents_end(records: Records) -> str:
    records[0]["parent_version"] = 999
    return "record 1.parent_version"


def _started_before_any_version(records: Records) -> str:
    records[0]["parent_version"] = 0
    return "record 1.parent_version"


def _origin_is_another_sessions_item(records: Records, q_item: str) -> str:
    number, item = _items(records)[1]
    item["origin_id"] = q_item
    return f"record {number}.origin_id"


def _copy_without_origin(records: Records) -> str:
    number, item = _items(records)[0]
    item["origin_id"] = None
    return f"record {number}.origin_id"


EDITS: dict[str, Callable[[Records], str]] = {
    "another session": _parent_is_another_session,
    "missing": _parent_is_missing,
    "itself": _parent_is_itself,
    "past the end": _started_past_the_parents_end,
    "version 0": _started_before_any_version,
    "copy without origin": _copy_without_origin,
}


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
async def test_fork_metadata_that_does_not_hold_is_refused(
    any_store: MemoryStore, edit: str
) -> None:
    records = await _exported_fork(any_store)
    field = EDITS[edit](records)
    counts = await table_counts(any_store)
    with pytest.raises(ValidationError) as refused:
        await any_store.import_session(records)
    assert refused.value.field == field, refused.value
    assert await table_counts(any_store) == counts
    assert await any_store.check() == []


async def test_an_origin_naming_another_sessions_item_is_refused(any_store: MemoryStore) -> None:
    records = await _exported_fork(any_store)
    q_item = (await any_store.history("q")).items[0]
    field = _origin_is_another_sessions_item(records, q_item.id)
    counts = await table_counts(any_store)
    with pytest.raises(ValidationError) as refused:
        await any_store.import_session(records)
    assert refused.value.field == field, refused.value
    assert await table_counts(any_store) == counts
    # Nothing hides q's item from a search across sessions.
    hits = await any_store.search("marigold code word", limit=20)
    assert q_item.id in {hit.item.id for hit in hits if hit.item is not None}


async def test_an_origin_in_a_session_that_is_no_fork_is_refused(any_store: MemoryStore) -> None:
    await _talk(any_store, "q", "marigold")
    await _talk(any_store, "s", "saffron")
    records = await any_store.export_session("s")
    await any_store.purge("s")
    q_item = (await any_store.history("q")).items[0]
    number, item = _items(records)[0]
    item["origin_id"] = q_item.id
    with pytest.raises(ValidationError) as refused:
        await any_store.import_session(records)
    assert refused.value.field == f"record {number}.origin_id"
    assert [info.id for info in await any_store.sessions()] == ["q"]


async def test_an_export_reusing_item_ids_is_refused_by_name(any_store: MemoryStore) -> None:
    await _talk(any_store, "s", "saffron")
    records = await any_store.export_session("s")
    records[0]["id"] = "s-again"
    for record in records[1:]:
        record["session_id"] = "s-again"
    counts = await table_counts(any_store)
    with pytest.raises(ValidationError) as refused:
        await any_store.import_session(records)
    number, _item = _items(records)[0]
    assert refused.value.field == f"record {number}.id"
    assert "already in this database" in str(refused.value)
    assert await table_counts(any_store) == counts


async def test_an_untouched_fork_imports_after_its_parent(any_store: MemoryStore) -> None:
    records = await _exported_fork(any_store)
    assert await any_store.import_session(records) == "f"
    assert await any_store.check() == []
    info = await any_store.session_info("f")
    assert (info.parent_id, info.parent_version) == ("p", 8)
    # The copies share the parent's origins: one hit per passage across both.
    hits = await any_store.search("heliotrope code word", sessions=["p", "f"], limit=20)
    words = [hit.text for hit in hits if hit.source == "item" and "code word" in hit.text]
    assert len(words) == 1


def test_the_command_refuses_in_one_line(tmp_path: Path) -> None:
    """``memstore import`` in a process of its own: exit 1, one line naming record and field."""
    import asyncio

    db = tmp_path / "m.db"

    async def prepare() -> Records:
        async with MemoryStore.open(db) as store:
            return await _exported_fork(store)

    records = asyncio.run(prepare())
    _parent_is_another_session(records)
    edited = tmp_path / "f.jsonl"
    edited.write_text("".join(json.dumps(record) + "\n" for record in records))
    result = memstore_process(db, "import", str(edited))
    assert result.returncode == 1, result
    assert result.stderr.count("\n") == 1 and "record 1.parent_id" in result.stderr
    assert "Traceback" not in result.stderr
