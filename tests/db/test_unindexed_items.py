"""Appends do not index their item, yet every search sees every committed item.

The writer indexes items in bulk between writes (:mod:`memstore.db.search_index`); these
tests stop it from doing so on its own (a maintenance interval of an hour) so that items
stay unindexed, then search them on both backends, from a read-only store and from the CLI,
delete them every way memstore can (prune, purge, pop, import then purge) and check that the
FTS5 index is still exactly right, as FTS5's own integrity check against its content table
judges it. Migration 0011_item_index is run down and up over a database with unindexed rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest
from alembic import command
from clients import memstore_cli
from conftest import raw_sqlite
from sqlalchemy import Connection, create_engine, text

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.db import writer
from memstore.db.audit import index_lag
from memstore.db.migrate import alembic_config
from memstore.db.search_index import BULK, index_pending
from memstore.memory.session import SessionMemory

LIMITS = MemoryLimits(hard=60, target=40, keep_recent=2)
#: The revision before the one that took indexing off the append path.
BELOW = "0010"


@pytest.fixture(autouse=True)
def writer_never_catches_up(monkeypatch: pytest.MonkeyPatch) -> None:
    """Items stay unindexed until a test indexes them (or the store closes)."""
    monkeypatch.setattr(writer, "MAINTENANCE_INTERVAL_S", 3600.0)


async def chatter(
    store: MemoryStore, session_id: str, turns: int = 24, limits: MemoryLimits = LIMITS
) -> SessionMemory:
    """A session whose first item (``zanzibar<n>``) left working memory."""
    memory = store.session(session_id, limits=limits, estimator=WordEstimator())
    await memory.add("user", f"The code word of {session_id} is zanzibar{session_id[-1]}.")
    for i in range(turns):
        await memory.add("assistant" if i % 2 else "user", f"turn {i} of {session_id}: ok")
    return memory


async def found(store: MemoryStore, query: str) -> set[tuple[str | None, int | None]]:
    """The items ``query`` finds (the index under test), not the summaries: a summary keeps
    the code word too, a specific the fold does not lose."""
    hits = await store.search(query, limit=1000)
    return {(h.session_id, h.seq) for h in hits if h.source == "item"}


async def catch_up(store: MemoryStore) -> None:
    """What the writer does between writes, until nothing is left."""
    while await store.database.run_write(index_pending):
        pass


def fts_integrity(path: Path) -> None:
    """FTS5's integrity check, against the content table too (raises on a corrupt index)."""
    with contextlib.closing(raw_sqlite(path)) as raw, raw:
        raw.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)")


@contextlib.contextmanager
def raw_database(path: Path) -> Iterator[sqlite3.Connection]:
    with contextlib.closing(raw_sqlite(path)) as raw, raw:
        yield raw


async def test_searches_see_items_that_are_not_indexed(any_store: MemoryStore) -> None:
    memory = await chatter(any_store, "s1")
    other = await chatter(any_store, "s2", turns=2)  # no compaction: every item active
    sqlite = any_store.database.dialect == "sqlite"
    assert await index_lag(any_store.database) == (28 if sqlite else 0)

    assert await found(any_store, "zanzibar1") == {("s1", 1)}  # forgotten, not indexed
    assert await found(any_store, "zanzibar2") == {("s2", 1)}  # active, not indexed
    assert [h.seq for h in await memory.search("zanzibar1") if h.source == "item"] == [1]
    assert await other.search("zanzibar2") == []  # active: only with include_active
    assert [h.seq for h in await other.search("zanzibar2", include_active=True)] == [1]
    roomy = MemoryLimits(hard=300, target=150, keep_recent=2)  # room for the recall message
    recalling = await chatter(any_store, "s3", turns=40, limits=roomy)
    assert len(await recalling.reports()) >= 1
    recalled = await recalling.build_model_input(recall="What is the code word?")
    assert "zanzibar3" in json.dumps(recalled)

    if sqlite:  # the same answers once the index holds them
        await catch_up(any_store)
        assert await index_lag(any_store.database) == 0
    assert await found(any_store, "zanzibar1") == {("s1", 1)}
    assert await found(any_store, "zanzibar2") == {("s2", 1)}
    assert await any_store.check() == []


async def test_indexed_and_unindexed_items_are_ranked_and_limited_together(
    any_store: MemoryStore,
) -> None:
    memory = any_store.session("s1", limits=MemoryLimits(10**6, 10**5), estimator=WordEstimator())
    for n in range(6):
        await memory.add("user", f"kumquat number {n}")
    if any_store.database.dialect == "sqlite":
        await catch_up(any_store)
    for n in range(6, 12):
        await memory.add("user", f"kumquat kumquat number {n}")
    hits = await any_store.search("kumquat", limit=8)
    assert len(hits) == 8
    assert {h.seq for h in hits} >= set(range(7, 13))  # two words each: the best matches


async def test_a_read_only_store_and_the_cli_see_unindexed_items(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as writing:
        await chatter(writing, "s1")
        lag = await index_lag(writing.database)
        assert lag == 25
        async with MemoryStore.open(db_path, read_only=True) as reading:
            assert await found(reading, "zanzibar1") == {("s1", 1)}
            assert await index_lag(reading.database) == lag  # the reader indexed nothing
        result = memstore_cli(db_path, "search", "zanzibar1", "--json")
        assert result.returncode == 0, result.stderr
        hits = [h for h in json.loads(result.stdout) if h["source"] == "item"]
        assert [(h["session_id"], h["seq"]) for h in hits] == [("s1", 1)]
        assert await index_lag(writing.database) == lag
    # Closing the writing store caught the index up.
    async with MemoryStore.open(db_path, read_only=True) as reading:
        assert await index_lag(reading.database) == 0
        assert await found(reading, "zanzibar1") == {("s1", 1)}


async def test_check_reports_the_lag_as_information(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as writing:
        await chatter(writing, "s1", turns=4)
        result = memstore_cli(db_path, "check", "--json")
        assert result.returncode == 0, result.stdout
        report = json.loads(result.stdout)
        assert report == {"ok": True, "violations": [], "index_lag": 5}
        result = memstore_cli(db_path, "check", "s1")
        assert result.returncode == 0
        assert "info: 5 newest item(s) not in the search index yet" in result.stdout
        assert "ok: all invariants hold" in result.stdout
        assert await writing.check() == []
    result = memstore_cli(db_path, "check")
    assert result.returncode == 0 and "info:" not in result.stdout


async def test_deleting_rows_the_index_never_held_keeps_it_sound(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        s1 = await chatter(store, "s1")
        await chatter(store, "s2")
        exported = await store.export_session("s2")
        await store.purge("s2")  # its rows were never indexed
        assert await store.import_session(exported) == "s2"  # nor are the imported ones
        popped = await s1.pop_item()
        assert popped is not None
        last = (await s1.reports())[-2]
        assert (await store.prune("s1", before_version=last.committed_version))[1] > 0
        await store.purge("s2")
        assert await store.check() == []
        await catch_up(store)
        assert await store.check() == []
        assert await found(store, popped.content.split()[1]) >= {("s1", popped.seq)}
    fts_integrity(db_path)
    # The check above would have caught it: telling FTS5 to delete a row it never held.
    with raw_database(db_path) as raw:
        raw.execute("INSERT INTO items (id, session_id, seq, role, kind, priority, content, "
                    "created_at, estimated_tokens, added_version, version) SELECT 'x', id, "
                    "last_seq + 1, 'user', 'USER_MESSAGE', 50, 'never indexed', "
                    "'2026-01-01 00:00:00', 2, version, 1 FROM sessions")  # fmt: skip
        raw.execute(
            "INSERT INTO items_fts(items_fts, rowid, content) "
            "SELECT 'delete', rowid, content FROM items WHERE id = 'x'"
        )
        raw.execute("DELETE FROM items WHERE id = 'x'")
    with pytest.raises(sqlite3.DatabaseError, match="malformed"):
        fts_integrity(db_path)


async def test_deleting_the_newest_rows_lowers_the_watermark(db_path: Path) -> None:
    """SQLite gives a new row ``max(rowid) + 1``: once the newest rows are deleted, their
    rowids come back, and must not pass for indexed."""
    async with MemoryStore.open(db_path) as store:
        await chatter(store, "s1", turns=2)
        await chatter(store, "s2", turns=2)
        await catch_up(store)
        await store.purge("s2")  # the newest rows, indexed
        assert await found(store, "zanzibar2") == set()
        again = store.session("s3", limits=LIMITS, estimator=WordEstimator())
        await again.add("user", "zanzibar3 reuses a rowid")
        assert await index_lag(store.database) == 1
        assert await found(store, "zanzibar3") == {("s3", 1)}
        await store.purge("s3")  # not indexed: FTS5 is not told
        await catch_up(store)
        assert await store.check() == []
    fts_integrity(db_path)


def _at_revision(path: Path, revision: str, how: str = "downgrade") -> None:
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            getattr(command, how)(alembic_config(conn), revision)
    finally:
        engine.dispose()


async def test_migration_0011_down_and_up_over_unindexed_rows(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        await chatter(store, "s1")
        await catch_up(store)
        await chatter(store, "s2")  # never indexed
        assert await index_lag(store.database) == 25
        # Down while s2 is unindexed: before it every row was indexed, so the migration
        # indexes them.
        await store.database.run_write(lambda conn: command.downgrade(alembic_config(conn), BELOW))
    with raw_database(db_path) as raw:
        assert raw.execute("SELECT count(*) FROM items_fts WHERE items_fts MATCH 'zanzibar2'")
        names = {row[0] for row in raw.execute("SELECT name FROM sqlite_master")}
        assert "items_fts_insert" in names and "items_fts_watermark" not in names
        raw.execute("INSERT INTO items_fts(items_fts, rank) VALUES ('integrity-check', 1)")
    _at_revision(db_path, "head", "upgrade")
    with raw_database(db_path) as raw:
        names = {row[0] for row in raw.execute("SELECT name FROM sqlite_master")}
        assert "items_fts_insert" not in names
        (upto,) = raw.execute("SELECT upto FROM items_fts_watermark").fetchone()
        assert upto == raw.execute("SELECT max(rowid) FROM items").fetchone()[0]
    async with MemoryStore.open(db_path) as store:
        assert await index_lag(store.database) == 0
        assert await found(store, "zanzibar2") == {("s2", 1)}
        assert await store.check() == []


async def test_migration_0011_leaves_postgresql_indexing_every_row(postgres_url: str) -> None:
    def definition(conn: Connection) -> str:
        query = text("SELECT indexdef FROM pg_indexes WHERE indexname = 'ix_items_search'")
        return str(conn.execute(query).scalar_one())

    async with MemoryStore.open(postgres_url) as store:
        await chatter(store, "s1")
        before = await store.database.run_read(definition)
        assert "to_tsvector" in before and "WHERE" not in before
        await store.database.run_write(lambda conn: command.downgrade(alembic_config(conn), BELOW))
        await store.database.run_write(lambda conn: command.upgrade(alembic_config(conn), "head"))
        assert await store.database.run_read(definition) == before
        assert await found(store, "zanzibar1") == {("s1", 1)}
        assert await store.check() == []


async def test_the_writer_indexes_in_bulk_transactions(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("s1", limits=MemoryLimits(10**6, 10**5), estimator=WordEstimator())
        await memory.add_items([{"role": "user", "content": f"row {n}"} for n in range(BULK + 5)])
        assert await store.database.run_write(index_pending) is True  # one bulk, more left
        assert await index_lag(store.database) == 5
        assert await store.database.run_write(index_pending) is False
        assert await index_lag(store.database) == 0


async def test_the_writer_catches_up_on_its_own_between_writes(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(writer, "MAINTENANCE_INTERVAL_S", 0.05)
    async with MemoryStore.open(db_path) as store:
        await chatter(store, "s1", turns=4)
        for _ in range(200):  # no write comes: the idle writer indexes what it wrote
            if await index_lag(store.database) == 0:
                break
            await asyncio.sleep(0.05)
        assert await index_lag(store.database) == 0
        assert await store.check() == []
