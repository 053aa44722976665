"""Shared by the bad-input tests: a one-item session template, state snapshots, checks.

Each rejection is checked three ways: the exact ``MemstoreError`` subclass, the field it
names (attribute and message), and the database before/after (row counts *and* a full dump,
so a bumped version counter would be caught too) on a session that already holds one item.
"""

from __future__ import annotations

import asyncio
import gc
import hashlib
import shutil
import sqlite3
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager, closing
from pathlib import Path
from typing import Any

import pytest
from conftest import row_counts

from memstore import (
    MemoryLimits,
    MemoryStore,
    MemstoreError,
    SessionMemory,
    Settings,
    WordEstimator,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
MAX_BYTES = 100
SESSION = "s1"
FIRST = "Investigate checkout latency."
LIMITS = MemoryLimits(hard=1000, target=500, keep_recent=2)
SIDECARS = ("-wal", "-shm", "-journal")


# -- helpers -------------------------------------------------------------------------------


def dump(path: Path) -> list[str]:
    """Every table's schema and rows, read with the raw sqlite3 module."""
    with closing(sqlite3.connect(path)) as conn:
        return list(conn.iterdump())


def counts(path: Path) -> dict[str, int]:
    return row_counts(path)


def close_leaked_connections() -> None:
    """``row_counts`` leaves its sqlite3 connection to the garbage collector; while it lives,
    closing a store does not checkpoint the WAL (it is not the last connection)."""
    gc.collect()


def state(path: Path) -> tuple[dict[str, int], list[str]]:
    return counts(path), dump(path)


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def sidecars(path: Path) -> list[str]:
    return [s for s in SIDECARS if Path(f"{path}{s}").exists()]


def check_error(error: BaseException, expected: type[MemstoreError], field: str) -> None:
    """The exact subclass, ``field`` set, and the field named in the message."""
    assert type(error) is expected, f"{type(error).__name__} is not {expected.__name__}"
    assert isinstance(error, MemstoreError)
    assert getattr(error, "field", None) == field
    assert field in str(error)


async def assert_rejected(
    db_path: Path,
    expected: type[MemstoreError],
    field: str,
    call: Callable[[], Awaitable[Any]],
) -> MemstoreError:
    before = state(db_path)
    with pytest.raises(expected) as info:
        await call()
    check_error(info.value, expected, field)
    assert state(db_path) == before, "a rejected input wrote to the database"
    return info.value


def build_template(factory: pytest.TempPathFactory) -> Path:
    """A migrated database whose session ``s1`` holds one item (each test copies it)."""

    async def build(path: Path) -> None:
        async with MemoryStore.open(path) as store:
            handle = store.session(SESSION, limits=LIMITS, estimator=WordEstimator())
            await handle.add("user", FIRST)

    path = factory.mktemp("template") / "memory.db"
    asyncio.run(build(path))
    assert sidecars(path) == []
    return path


@asynccontextmanager
async def open_memory(
    template: Path, db_path: Path
) -> AsyncIterator[tuple[MemoryStore, SessionMemory]]:
    """A session with one item, in a store whose items may be at most 100 bytes."""
    shutil.copy2(template, db_path)
    async with MemoryStore.open(db_path, settings=Settings(max_item_bytes=MAX_BYTES)) as store:
        handle = store.session(SESSION, limits=LIMITS, estimator=WordEstimator())
        assert [i.content for i in await handle.items()] == [FIRST]
        assert counts(db_path)["items"] == 1
        yield store, handle


# Fixtures of the bad-input modules (conftest loads this module as a plugin).


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The migrated one-item database, built once per test module."""
    return build_template(tmp_path_factory)


@pytest.fixture
async def opened(template: Path, db_path: Path) -> AsyncIterator[tuple[MemoryStore, SessionMemory]]:
    """A fresh copy of the template, opened with a 100-byte item limit: (store, session)."""
    async with open_memory(template, db_path) as pair:
        yield pair


@pytest.fixture
def memory(opened: tuple[MemoryStore, SessionMemory]) -> SessionMemory:
    """The one-item session of :func:`opened`."""
    return opened[1]


@pytest.fixture
def bad_store(opened: tuple[MemoryStore, SessionMemory]) -> MemoryStore:
    """The store of :func:`opened`."""
    return opened[0]
