"""``MemoryStore.open(engine=...)``: a store on the user's own SQLAlchemy ``AsyncEngine``.

The store never disposes an engine it did not create. On PostgreSQL everything runs on the
user's engine; on SQLite the user's engine (aiosqlite) serves the reads and memstore's writer
thread writes the engine's file over its own connection, with memstore's recipe.
"""

from __future__ import annotations

import sqlite3
from collections.abc import AsyncIterator
from contextlib import closing
from pathlib import Path

import pytest
from sqlalchemy import event, text
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

from memstore import MemoryStore, ReadOnlyDatabaseError, ValidationError, WordEstimator


def engine_url(backend_url: str) -> str:
    """The URL a user would build their engine from (a SQLite file: the aiosqlite driver)."""
    return backend_url if "://" in backend_url else f"sqlite+aiosqlite:///{backend_url}"


@pytest.fixture
async def user_engine(backend_url: str) -> AsyncIterator[AsyncEngine]:
    """The user's engine, which the user disposes (after the test's own checks)."""
    engine = create_async_engine(engine_url(backend_url))
    yield engine
    await engine.dispose()


def count_checkouts(engine: AsyncEngine) -> list[int]:
    """A counter of the connections the engine's pool hands out (one element: the count)."""
    counter = [0]

    @event.listens_for(engine.sync_engine, "checkout")
    def _checked_out(*_: object) -> None:
        counter[0] += 1

    return counter


async def test_the_store_runs_on_the_users_engine_and_leaves_it_open(
    user_engine: AsyncEngine,
) -> None:
    served = count_checkouts(user_engine)
    async with MemoryStore.open(engine=user_engine) as store:
        memory = store.session("mine", estimator=WordEstimator())
        await memory.add("user", "the pool is mine")
        await memory.add("assistant", "noted")
        model_input = await memory.build_model_input()
        assert [entry["content"] for entry in model_input] == ["the pool is mine", "noted"]
        assert [info.id for info in await store.sessions()] == ["mine"]
    assert served[0] > 0  # reads (and on PostgreSQL, writes) went through it
    # Closing the store left the engine as it was: its pool still holds its connections,
    # and it still works.
    assert user_engine.sync_engine.pool.checkedin() >= 1
    async with user_engine.connect() as conn:
        rows = await conn.execute(text("SELECT content FROM items ORDER BY seq"))
        assert rows.scalars().all() == ["the pool is mine", "noted"]


async def test_a_store_by_url_and_a_store_by_engine_share_the_database(
    backend_url: str, user_engine: AsyncEngine
) -> None:
    async with (
        MemoryStore.open(backend_url) as by_url,
        MemoryStore.open(engine=user_engine) as by_engine,
    ):
        await by_url.session("a", estimator=WordEstimator()).add("user", "written by url")
        await by_engine.session("b", estimator=WordEstimator()).add("user", "written by engine")
        for store in (by_url, by_engine):
            assert sorted(info.id for info in await store.sessions()) == ["a", "b"]


async def test_read_only_on_the_users_engine_refuses_writes(
    backend_url: str, user_engine: AsyncEngine
) -> None:
    async with MemoryStore.open(backend_url) as store:
        await store.session("s", estimator=WordEstimator()).add("user", "already here")
    async with MemoryStore.open(engine=user_engine, read_only=True) as store:
        memory = await store.attach("s")
        assert [item.content for item in await memory.items()] == ["already here"]
        with pytest.raises(ReadOnlyDatabaseError):
            await memory.add("user", "refused")


async def test_on_sqlite_memstores_writer_keeps_its_recipe(tmp_path: Path) -> None:
    """The user's engine gives the file; the writes are memstore's: WAL, synchronous=FULL,
    foreign keys (an item of a session that does not exist is refused)."""
    path = tmp_path / "theirs.db"
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with MemoryStore.open(engine=engine) as store:
            await store.session("s", estimator=WordEstimator()).add("user", "hello")

            def writer_pragmas(conn: object) -> tuple[object, ...]:
                return tuple(
                    conn.exec_driver_sql(f"PRAGMA {name}").scalar()  # type: ignore[attr-defined]
                    for name in ("synchronous", "foreign_keys", "busy_timeout")
                )

            assert await store.database.run_write(writer_pragmas) == (2, 1, 5000)
        with closing(sqlite3.connect(path)) as raw:
            assert raw.execute("PRAGMA journal_mode").fetchone() == ("wal",)
            assert oct(path.stat().st_mode & 0o777) == oct(0o600)  # memstore made the file
    finally:
        await engine.dispose()


@pytest.mark.parametrize(
    "url", ["sqlite+aiosqlite://", "sqlite+aiosqlite:///:memory:", "sqlite+aiosqlite:///"]
)
async def test_an_in_memory_sqlite_engine_is_refused(url: str) -> None:
    engine = create_async_engine(url)
    try:
        with pytest.raises(ValidationError) as refused:
            await MemoryStore.open(engine=engine)
        assert refused.value.field == "engine" and "file" in str(refused.value)
    finally:
        await engine.dispose()


async def test_an_engine_and_a_url_together_are_refused(tmp_path: Path) -> None:
    engine = create_async_engine(f"sqlite+aiosqlite:///{tmp_path / 'a.db'}")
    try:
        with pytest.raises(ValidationError) as refused:
            await MemoryStore.open(tmp_path / "b.db", engine=engine)
        assert refused.value.field == "engine"
        assert not (tmp_path / "a.db").exists() and not (tmp_path / "b.db").exists()
    finally:
        await engine.dispose()


async def test_a_sync_engine_is_refused(tmp_path: Path) -> None:
    from sqlalchemy import create_engine

    engine = create_engine(f"sqlite:///{tmp_path / 'a.db'}")
    with pytest.raises(ValidationError) as refused:
        await MemoryStore.open(engine=engine)  # type: ignore[arg-type]
    assert refused.value.field == "engine" and "AsyncEngine" in str(refused.value)
    engine.dispose()


async def test_a_read_on_the_users_sqlite_engine_is_one_snapshot(tmp_path: Path) -> None:
    """A commit landing between two statements of one read is not seen by the second."""
    path = tmp_path / "snap.db"
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with MemoryStore.open(engine=engine) as store:
            with closing(sqlite3.connect(path, isolation_level=None)) as other:
                other.execute("CREATE TABLE scratch (n INTEGER)")

                def count_twice(conn: object) -> tuple[int, int]:
                    query = text("SELECT count(*) FROM scratch")
                    first = conn.execute(query).scalar_one()  # type: ignore[attr-defined]
                    other.execute("INSERT INTO scratch VALUES (1)")  # committed meanwhile
                    second = conn.execute(query).scalar_one()  # type: ignore[attr-defined]
                    return first, second

                assert await store.database.run_read(count_twice) == (0, 0)
                assert other.execute("SELECT count(*) FROM scratch").fetchone() == (1,)
    finally:
        await engine.dispose()
