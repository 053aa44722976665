"""Long-term memory's contract, on SQLite and PostgreSQL.

Every method and failure path of ``store.ltm``: versions and compare-and-set (a stale one
writes nothing), validation that names the field, expiry and prune, history, and several OS
processes incrementing one key by read-then-compare-and-set without losing an update.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import time
from datetime import timedelta
from pathlib import Path
from typing import Any

import pytest
from conftest import table_counts
from ltmsupport import FakeClock, install_clock, ltm_counts

import memstore.memory.long_term
from memstore import (
    ConflictError,
    LongTermChange,
    LongTermEntry,
    MemoryStore,
    VersionConflictError,
)

WORKER = Path(__file__).with_name("ltm_counter_worker.py")
REPO_ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def clock(any_store: MemoryStore) -> FakeClock:
    return install_clock(any_store)


# -- set / get / versions --------------------------------------------------------------------


async def test_set_then_get_returns_the_entry(any_store: MemoryStore) -> None:
    entry = await any_store.ltm.set("test_framework", "pytest", scope="user:alice")
    assert isinstance(entry, LongTermEntry)
    assert (entry.key, entry.scope, entry.value, entry.version) == (
        "test_framework",
        "user:alice",
        "pytest",
        1,
    )
    assert entry.created_at == entry.updated_at and entry.created_at.tzinfo is not None
    assert entry.expires_at is None
    assert await any_store.ltm.get("test_framework", scope="user:alice") == entry
    # Scopes are separate namespaces; the default scope is "global".
    assert await any_store.ltm.get("test_framework") is None
    assert await any_store.ltm.get("test_framework", scope="user:bob") is None


async def test_every_write_increments_the_version(any_store: MemoryStore) -> None:
    first = await any_store.ltm.set("k", "one")
    second = await any_store.ltm.set("k", "one")  # the same value is still a write
    third = await any_store.ltm.set("k", {"now": "three"})
    assert [first.version, second.version, third.version] == [1, 2, 3]
    assert third.created_at == first.created_at and third.updated_at >= second.updated_at
    got = await any_store.ltm.get("k")
    assert got is not None and got.value == {"now": "three"} and got.version == 3


@pytest.mark.parametrize(
    "value",
    [
        "",
        "plain text",
        "日本語 ✓ and an emoji 🧠",
        0,
        -17,
        2**80,
        1.5,
        -2.25e-300,
        True,
        False,
        [],
        {},
        [1, "two", 3.0, None, True, [[]]],
        {"nested": {"list": [1, {"deep": None}], "flag": False}, "": "empty key"},
    ],
    ids=repr,
)
async def test_json_values_round_trip_exactly(any_store: MemoryStore, value: Any) -> None:
    stored = await any_store.ltm.set("v", value)
    got = await any_store.ltm.get("v")
    assert stored.value == value and got is not None and got.value == value
    assert type(got.value) is type(value)


async def test_values_are_copies(any_store: MemoryStore) -> None:
    original: dict[str, Any] = {"tags": ["a"]}
    entry = await any_store.ltm.set("k", original)
    original["tags"].append("changed after set")
    entry.value["tags"].append("changed in the returned entry")
    got = await any_store.ltm.get("k")
    assert got is not None and got.value == {"tags": ["a"]}


async def test_aliases_remember_recall_forget(any_store: MemoryStore) -> None:
    ltm = any_store.ltm
    remembered = await ltm.remember("editor", "vim", scope="user:alice")
    assert await ltm.recall("editor", scope="user:alice") == remembered
    assert await ltm.forget("editor", scope="user:alice") is True
    assert await ltm.recall("editor", scope="user:alice") is None


# -- compare-and-set -------------------------------------------------------------------------


async def test_compare_and_set_with_the_current_version_writes(any_store: MemoryStore) -> None:
    await any_store.ltm.set("k", 1)
    updated = await any_store.ltm.set("k", 2, expected_version=1)
    assert updated.version == 2 and updated.value == 2


async def test_stale_compare_and_set_raises_and_writes_nothing(any_store: MemoryStore) -> None:
    await any_store.ltm.set("k", "first")
    await any_store.ltm.set("k", "second")
    before = await table_counts(any_store)
    with pytest.raises(VersionConflictError) as raised:
        await any_store.ltm.set("k", "stale write", expected_version=1)
    error = raised.value
    assert isinstance(error, ConflictError)
    assert (error.expected, error.actual, error.field) == (1, 2, "expected_version")
    assert (error.scope, error.key) == ("global", "k")
    assert "stale write" not in str(error)  # messages never echo values
    assert await table_counts(any_store) == before
    got = await any_store.ltm.get("k")
    assert got is not None and (got.value, got.version) == ("second", 2)
    assert [c.version for c in await any_store.ltm.history("k")] == [1, 2]


async def test_expected_version_zero_means_must_not_exist(any_store: MemoryStore) -> None:
    created = await any_store.ltm.set("once", "first", expected_version=0)
    assert created.version == 1
    before = await table_counts(any_store)
    with pytest.raises(VersionConflictError) as raised:
        await any_store.ltm.set("once", "second", expected_version=0)
    assert (raised.value.expected, raised.value.actual) == (0, 1)
    assert await table_counts(any_store) == before


async def test_expecting_a_version_of_an_absent_entry_conflicts(any_store: MemoryStore) -> None:
    with pytest.raises(VersionConflictError) as raised:
        await any_store.ltm.set("missing", "x", expected_version=3)
    assert (raised.value.expected, raised.value.actual) == (3, 0)
    assert await ltm_counts(any_store) == (0, 0)


# -- delete and history ----------------------------------------------------------------------


async def test_delete_removes_and_records(any_store: MemoryStore) -> None:
    await any_store.ltm.set("k", "v", scope="agent:reviewer")
    assert await any_store.ltm.delete("k", scope="agent:reviewer") is True
    assert await any_store.ltm.get("k", scope="agent:reviewer") is None
    history = await any_store.ltm.history("k", scope="agent:reviewer")
    assert [(c.version, c.action, c.value) for c in history] == [
        (1, "set", "v"),
        (2, "delete", None),
    ]
    assert all(isinstance(c, LongTermChange) for c in history)
    before = await table_counts(any_store)
    assert await any_store.ltm.delete("k", scope="agent:reviewer") is False  # nothing to delete
    assert await table_counts(any_store) == before


async def test_delete_compare_and_set(any_store: MemoryStore) -> None:
    await any_store.ltm.set("k", "a")
    await any_store.ltm.set("k", "b")
    before = await table_counts(any_store)
    with pytest.raises(VersionConflictError) as raised:
        await any_store.ltm.delete("k", expected_version=1)
    assert (raised.value.expected, raised.value.actual) == (1, 2)
    assert await table_counts(any_store) == before
    assert await any_store.ltm.delete("k", expected_version=2) is True
    with pytest.raises(VersionConflictError):
        await any_store.ltm.delete("k", expected_version=2)  # gone: its version is now 0


async def test_versions_never_repeat_across_delete_and_recreate(any_store: MemoryStore) -> None:
    """A stale compare-and-set from before a delete must not match the re-created entry."""
    await any_store.ltm.set("k", "old")  # version 1
    await any_store.ltm.delete("k")  # version 2
    recreated = await any_store.ltm.set("k", "new", expected_version=0)
    assert recreated.version == 3 and recreated.created_at == recreated.updated_at
    with pytest.raises(VersionConflictError):
        await any_store.ltm.set("k", "from a reader of version 1", expected_version=1)
    history = await any_store.ltm.history("k")
    assert [(c.version, c.action) for c in history] == [(1, "set"), (2, "delete"), (3, "set")]
    assert [c.value for c in history] == ["old", None, "new"]
    assert history[0].changed_at <= history[1].changed_at <= history[2].changed_at


async def test_history_of_a_key_never_written_is_empty(any_store: MemoryStore) -> None:
    assert await any_store.ltm.history("nothing", scope="user:alice") == []


# -- list ------------------------------------------------------------------------------------


async def test_list_orders_by_scope_then_key_and_filters(any_store: MemoryStore) -> None:
    ltm = any_store.ltm
    for scope, key in [
        ("user:alice", "pref.editor"),
        ("global", "zeta"),
        ("user:alice", "pref.lang"),
        ("global", "alpha"),
        ("user:alice", "Pref.upper"),
        ("user:alice", "pref%wild"),
        ("user:bob", "pref.editor"),
    ]:
        await ltm.set(key, f"{scope}/{key}", scope=scope)
    everything = await ltm.list()
    assert [(e.scope, e.key) for e in everything][:2] == [("global", "alpha"), ("global", "zeta")]
    assert len(everything) == 7
    alice = await ltm.list(scope="user:alice")
    assert {e.key for e in alice} == {"pref.editor", "pref.lang", "Pref.upper", "pref%wild"}
    assert [e.key for e in alice] == sorted(e.key for e in alice)
    # Prefixes are literal and case-sensitive ("%" and "_" are not wildcards).
    assert [e.key for e in await ltm.list(scope="user:alice", prefix="pref.")] == [
        "pref.editor",
        "pref.lang",
    ]
    assert [e.key for e in await ltm.list(prefix="pref%")] == ["pref%wild"]
    assert [e.key for e in await ltm.list(prefix="Pref")] == ["Pref.upper"]
    assert [(e.scope, e.key) for e in await ltm.list(prefix="pref.e")] == [
        ("user:alice", "pref.editor"),
        ("user:bob", "pref.editor"),
    ]
    assert await ltm.list(scope="user:carol") == []
    assert len(await ltm.list(prefix="")) == 7


# -- expiry and prune ------------------------------------------------------------------------


async def test_expired_entries_are_invisible(any_store: MemoryStore, clock: FakeClock) -> None:
    entry = await any_store.ltm.set("session-note", "short-lived", scope="user:alice", ttl=10)
    assert entry.expires_at == clock.now + timedelta(seconds=10)
    await any_store.ltm.set("forever", "stays", scope="user:alice")
    clock.advance(9.9)
    assert await any_store.ltm.get("session-note", scope="user:alice") == entry
    clock.advance(0.1)  # expires_at itself is already expired
    assert await any_store.ltm.get("session-note", scope="user:alice") is None
    assert [e.key for e in await any_store.ltm.list()] == ["forever"]
    assert await any_store.ltm.delete("session-note", scope="user:alice") is False
    with pytest.raises(VersionConflictError) as raised:
        await any_store.ltm.set("session-note", "x", scope="user:alice", expected_version=1)
    assert raised.value.actual == 0  # expired counts as absent


async def test_expires_at_and_timedelta_ttl(any_store: MemoryStore, clock: FakeClock) -> None:
    at = clock.now + timedelta(hours=1)
    assert (await any_store.ltm.set("a", 1, expires_at=at)).expires_at == at
    by_delta = await any_store.ltm.set("b", 1, ttl=timedelta(minutes=5))
    assert by_delta.expires_at == clock.now + timedelta(minutes=5)
    # Every set decides its own expiry: without ttl/expires_at the entry no longer expires.
    assert (await any_store.ltm.set("a", 2)).expires_at is None
    clock.advance(7200)
    assert [e.key for e in await any_store.ltm.list()] == ["a"]


async def test_prune_deletes_expired_entries_and_records_it(
    any_store: MemoryStore, clock: FakeClock
) -> None:
    await any_store.ltm.set("gone", "soon", ttl=5)
    await any_store.ltm.set("kept", "long", ttl=500)
    await any_store.ltm.set("forever", "always")
    assert await any_store.ltm.prune() == 0
    clock.advance(60)
    assert await any_store.ltm.prune() == 1
    assert await ltm_counts(any_store) == (2, 4)  # three sets and one expire recorded
    history = await any_store.ltm.history("gone")
    assert [(c.version, c.action, c.value) for c in history] == [
        (1, "set", "soon"),
        (2, "expire", None),
    ]
    assert history[1].changed_at == history[0].changed_at + timedelta(seconds=5)
    assert await any_store.ltm.prune() == 0
    recreated = await any_store.ltm.set("gone", "back", expected_version=0)
    assert recreated.version == 3


async def test_overwriting_an_expired_entry_records_its_expiry(
    any_store: MemoryStore, clock: FakeClock
) -> None:
    first = await any_store.ltm.set("k", "old", ttl=1)
    clock.advance(2)
    renewed = await any_store.ltm.set("k", "new", expected_version=0)
    assert renewed.version == 3 and renewed.created_at > first.created_at
    history = await any_store.ltm.history("k")
    assert [(c.version, c.action) for c in history] == [(1, "set"), (2, "expire"), (3, "set")]
    assert await any_store.ltm.prune() == 0


async def test_prune_works_in_batches(
    any_store: MemoryStore, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(memstore.memory.long_term, "PRUNE_BATCH", 4)
    for i in range(11):
        await any_store.ltm.set(f"k{i:02}", i, scope="user:alice", ttl=1 + i)
    await any_store.ltm.set("stays", 1, scope="user:alice")
    clock.advance(100)
    assert await any_store.ltm.prune() == 11
    assert [e.key for e in await any_store.ltm.list()] == ["stays"]
    assert await ltm_counts(any_store) == (1, 23)


# -- many processes, one key ------------------------------------------------------------------


def test_compare_and_set_counter_across_processes_loses_no_update(
    backend_url: str, tmp_path: Path
) -> None:
    """4 OS processes x 25 read-then-compare-and-set increments of one key: exactly 100."""
    procs, per_process = 4, 25
    go = tmp_path / "go"
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    workers = [
        subprocess.Popen(
            [
                sys.executable,
                str(WORKER),
                backend_url,
                "counter",
                str(per_process),
                str(go),
                str(tmp_path / f"ready-{i}"),
            ],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for i in range(procs)
    ]
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("ready-*"))) < procs and time.monotonic() < deadline:
        time.sleep(0.01)
    go.touch()
    results = []
    for worker in workers:
        out, err = worker.communicate(timeout=180)
        assert worker.returncode == 0, err
        results.append(json.loads(out.strip().splitlines()[-1]))
    assert sum(r["increments"] for r in results) == procs * per_process

    async def final() -> tuple[LongTermEntry | None, list[LongTermChange]]:
        async with MemoryStore.open(backend_url) as store:
            return (
                await store.ltm.get("counter", scope="test:counter"),
                await store.ltm.history("counter", scope="test:counter"),
            )

    entry, history = asyncio.run(final())
    total = procs * per_process
    assert entry is not None and entry.value == total and entry.version == total
    # Every increment committed exactly once: values 1..100 at versions 1..100, no gap, no twin.
    assert [(c.version, c.value) for c in history] == [(v, v) for v in range(1, total + 1)]
