"""The full-text index stays equal to the rows through every write path, and ``memstore
check`` notices when it does not: compaction, prune, purge, import, migration (back-fill
included), on SQLite and PostgreSQL; a tampered index on SQLite."""

from __future__ import annotations

import contextlib
import logging
from pathlib import Path

import pytest
from alembic import command
from clients import memstore_cli
from conftest import raw_sqlite
from sqlalchemy import create_engine

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.db.migrate import alembic_config
from memstore.memory.session import SessionMemory

LIMITS = MemoryLimits(hard=60, target=40, keep_recent=2)


async def chatter(store: MemoryStore, session_id: str, turns: int = 24) -> SessionMemory:
    memory = store.session(session_id, limits=LIMITS, estimator=WordEstimator())
    await memory.add("user", f"The code word of {session_id} is zanzibar{session_id[-1]}.")
    for i in range(turns):
        await memory.add("assistant" if i % 2 else "user", f"turn {i} of {session_id}: ok")
    return memory


async def found(store: MemoryStore, query: str) -> set[tuple[str | None, int | None]]:
    """The items ``query`` finds (the index under test), not the summaries: a summary keeps
    the code word too, a specific the fold does not lose."""
    hits = await store.search(query, limit=1000)
    return {(h.session_id, h.seq) for h in hits if h.source == "item"}


async def test_compaction_prune_purge_and_import_keep_the_index(any_store: MemoryStore) -> None:
    memory = await chatter(any_store, "s1")
    await chatter(any_store, "s2")
    assert len(await memory.reports()) >= 3
    assert await found(any_store, "zanzibar1") == {("s1", 1)}
    assert await any_store.check() == []

    exported = await any_store.export_session("s1")
    last = (await memory.reports())[-1]
    assert (await any_store.prune("s1", before_version=last.committed_version))[1] > 0
    assert await found(any_store, "zanzibar1") == set()  # its row is gone, and its words
    assert await any_store.check() == [] and await any_store.check("s1") == []

    await any_store.purge("s2")
    assert await found(any_store, "zanzibar2") == set()
    assert await any_store.check() == []

    await any_store.purge("s1")
    assert await any_store.import_session(exported) == "s1"
    assert await found(any_store, "zanzibar1") == {("s1", 1)}
    assert await any_store.check() == [] and await any_store.check("s1") == []


async def test_a_migration_down_and_up_again_rebuilds_the_index(any_store: MemoryStore) -> None:
    await chatter(any_store, "s1")
    await any_store.ltm.set("colour", "ultramarine", scope="global")

    def down_and_up(conn: object) -> None:
        command.downgrade(alembic_config(conn), "0006")  # type: ignore[arg-type]
        command.upgrade(alembic_config(conn), "head")  # type: ignore[arg-type]

    await any_store.database.run_write(down_and_up)
    assert await found(any_store, "zanzibar1") == {("s1", 1)}
    assert [h.source for h in await any_store.search("ultramarine")] == ["ltm"]
    assert await any_store.check() == []


def _downgrade_then_upgrade(path: Path, rows_between: int = 0) -> None:
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.begin() as conn:
            command.downgrade(alembic_config(conn), "0006")
        if rows_between:
            with contextlib.closing(raw_sqlite(path)) as raw, raw:
                raw.executemany(
                    "INSERT INTO items (id, session_id, seq, role, kind, priority, content, "
                    "created_at, estimated_tokens, added_version, version) "
                    "VALUES (?, 's1', ?, 'user', 'USER_MESSAGE', 50, ?, "
                    "'2026-01-01 00:00:00', 3, ?, 1)",
                    (
                        (f"bulk-{n}", 1000 + n, f"bulk row {n} kumquat", 1000 + n)
                        for n in range(rows_between)
                    ),
                )
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "head")
    finally:
        engine.dispose()


async def test_the_migration_back_fills_an_existing_history(
    db_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    async with MemoryStore.open(db_path) as store:
        await chatter(store, "s1")
        await store.ltm.set("colour", "ultramarine", scope="global")
    # Rows written before the index existed (more than one batch of the back-fill).
    with caplog.at_level(logging.INFO, logger="memstore"):
        _downgrade_then_upgrade(db_path, rows_between=20_001)
    assert "indexing items for search: 20000 of 20026 rows" in caplog.text
    assert "indexing items for search: 20026 of 20026 rows" in caplog.text
    async with MemoryStore.open(db_path) as store:
        assert await found(store, "zanzibar1") == {("s1", 1)}
        assert len(await found(store, "kumquat")) == 1000  # the most a search returns
        assert ("s1", 1000 + 19_999) in await found(store, "19999")
        assert [h.source for h in await store.search("ultramarine")] == ["ltm"]
        violations = await store.check("s1")
    assert [v for v in violations if v.rule == "search index"] == []


def test_check_reports_an_index_that_disagrees_with_its_rows(db_path: Path) -> None:
    async def write() -> None:
        async with MemoryStore.open(db_path) as store:
            await chatter(store, "s1")

    import asyncio

    asyncio.run(write())
    assert memstore_cli(db_path, "check").returncode == 0
    with contextlib.closing(raw_sqlite(db_path)) as raw, raw:
        # A write that went around the triggers: the row changed, its index entry did not.
        raw.execute("DROP TRIGGER items_fts_update")
        raw.execute("UPDATE items SET content = 'rewritten behind the index' WHERE seq = 3")
    result = memstore_cli(db_path, "check", "s1")
    assert result.returncode == 1
    assert "missing items_fts_update" in result.stdout
    with contextlib.closing(raw_sqlite(db_path)) as raw, raw:
        raw.execute(
            "CREATE TRIGGER items_fts_update AFTER UPDATE OF content ON items BEGIN "
            "INSERT INTO items_fts(items_fts, rowid, content) "
            "VALUES ('delete', old.rowid, old.content); "
            "INSERT INTO items_fts(rowid, content) VALUES (new.rowid, new.content); END"
        )
        rowid = raw.execute("SELECT rowid FROM items WHERE seq = 3").fetchone()[0]
    result = memstore_cli(db_path, "check", "--json")
    assert result.returncode == 1
    assert f"items rowid {rowid} differ" in result.stdout
    # The check wrote nothing, not even its scratch tables.
    with contextlib.closing(raw_sqlite(db_path)) as raw:
        names = {row[0] for row in raw.execute("SELECT name FROM sqlite_master")}
    assert not any(name.startswith("memstore_check") for name in names)
