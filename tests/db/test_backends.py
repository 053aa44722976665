"""Behaviour that must be identical on SQLite and PostgreSQL: errors, schema, audit, CLI."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from conftest import (
    WORKED_LIMITS,
    add_worked_example,
    table_counts,
    write_lock_held,
)

from memstore import (
    IdempotencyConflictError,
    LockTimeoutError,
    MemoryLimits,
    MemoryStore,
    SchemaTooNewError,
    Settings,
    StorageError,
    ValidationError,
    WordEstimator,
)
from memstore.cli import main


@pytest.mark.parametrize("content", ["nul \x00 inside", "lone \ud800 surrogate", "   "])
async def test_bad_content_is_the_same_error_and_writes_nothing(
    any_store: MemoryStore, content: str
) -> None:
    await add_worked_example(any_store)
    before = await table_counts(any_store)
    with pytest.raises(ValidationError) as raised:
        await any_store.session("incident-42", limits=WORKED_LIMITS, estimator=WordEstimator()).add(
            "user", content
        )
    assert raised.value.field == "content"
    assert await table_counts(any_store) == before


async def test_lock_timeout_is_typed_on_both_backends(backend_url: str) -> None:
    async with MemoryStore.open(backend_url, settings=Settings(busy_timeout_s=0.3)) as store:
        await add_worked_example(store)
        before = await table_counts(store)
        memory = store.session("incident-42", limits=WORKED_LIMITS, estimator=WordEstimator())
        async with write_lock_held(backend_url):
            with pytest.raises(LockTimeoutError):
                await memory.add("user", "blocked by another writer")
        assert await table_counts(store) == before


async def test_schema_newer_than_the_code_is_refused(backend_url: str) -> None:
    from sqlalchemy import text

    async with MemoryStore.open(backend_url) as store:
        await store.database.run_write(
            lambda conn: conn.execute(text("UPDATE alembic_version SET version_num = '9999'"))
        )
    with pytest.raises(SchemaTooNewError):
        await MemoryStore.open(backend_url)


async def test_migrated_schema_matches_the_models(any_store: MemoryStore) -> None:
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    from memstore.db.search import modelled
    from memstore.db.tables import metadata

    def diff(sync_conn):  # type: ignore[no-untyped-def]
        context = MigrationContext.configure(sync_conn, opts={"include_name": modelled})
        return compare_metadata(context, metadata)

    assert await any_store.database.run_read(diff) == []


async def test_check_passes_after_compactions(any_store: MemoryStore) -> None:
    await add_worked_example(any_store)
    assert await any_store.check() == []


def test_cli_replay_and_export_round_trip_across_backends(backend_url: str, tmp_path: Path) -> None:
    async def setup() -> None:
        async with MemoryStore.open(backend_url) as store:
            await add_worked_example(store)

    asyncio.run(setup())
    runner = CliRunner()
    replayed = runner.invoke(main, ["--db", backend_url, "replay", "incident-42"])
    assert replayed.exit_code == 0 and "replay verified" in replayed.output
    exported = runner.invoke(main, ["--db", backend_url, "export", "incident-42"])
    assert exported.exit_code == 0
    # Into a SQLite file: an export moves between backends.
    target = tmp_path / "copy.db"
    assert (
        runner.invoke(main, ["--db", str(target), "import", "-"], input=exported.stdout).exit_code
        == 0
    )
    original = json.loads(
        runner.invoke(main, ["--db", backend_url, "show", "incident-42", "--all", "--json"]).stdout
    )
    copy = json.loads(
        runner.invoke(main, ["--db", str(target), "show", "incident-42", "--all", "--json"]).stdout
    )
    assert copy == original


async def test_psycopg_driver_runs_the_same_store(postgres_url: str) -> None:
    backend_url = postgres_url
    url = backend_url.replace("postgresql+asyncpg://", "postgresql+psycopg://", 1)
    async with MemoryStore.open(url, settings=Settings(busy_timeout_s=0.3)) as store:
        await add_worked_example(store)
        memory = await store.attach("incident-42")
        assert await memory.estimated_tokens() == 52
        assert await store.check() == []
        async with write_lock_held(backend_url):
            with pytest.raises(LockTimeoutError):
                await memory.add("user", "blocked by another writer")


async def test_long_session_replays_prunes_and_purges(any_store: MemoryStore) -> None:
    from memstore.core.replay import verify

    memory = any_store.session(
        "long", estimator=WordEstimator(), limits=MemoryLimits(hard=120, target=80, keep_recent=2)
    )
    for i in range(120):
        kind = ("user", "assistant", "tool")[i % 3]
        await memory.add(kind, f"{i}: " + "word " * (i % 9 + 2), priority=("LOW", "NORMAL")[i % 2])
    reports = await memory.reports()
    assert len(reports) >= 10
    assert verify(await any_store.history("long")) == []
    cut = reports[len(reports) // 2].committed_version
    before = [i.id for i in await memory.items()]
    pruned, items = await any_store.prune("long", before_version=cut)
    assert pruned == len(reports) // 2 and items > 0
    assert [i.id for i in await memory.items()] == before
    assert verify(await any_store.history("long")) == []
    assert await any_store.check() == []
    assert await any_store.purge("long") > 0
    assert await any_store.sessions() == []


async def test_partial_indexes_on_both_backends(any_store: MemoryStore) -> None:
    """Migrations 0001 and 0004 make both item indexes partial, on PostgreSQL too."""
    from sqlalchemy import text

    if any_store.database.dialect == "postgresql":
        query = text("SELECT indexname, indexdef FROM pg_indexes WHERE tablename = 'items'")
    else:
        query = text("SELECT name, sql FROM sqlite_master WHERE tbl_name = 'items'")
    found = dict(await any_store.database.run_read(lambda conn: conn.execute(query).all()))
    assert "fate IS NULL" in found["ix_items_active"]
    assert "removed_by IS NOT NULL" in found["ix_items_removed"]
    assert "idempotency_key IS NOT NULL" in found["uq_items_session_id_idempotency_key"]
    assert "UNIQUE" in found["uq_items_session_id_idempotency_key"].upper()


async def test_migration_0005_keeps_every_item_down_and_up(backend_url: str) -> None:
    """The idempotency constraint becomes a partial unique index (a table rebuild on SQLite):
    every row survives both directions, and keys stay unique per session."""
    from alembic import command
    from sqlalchemy import inspect, select

    from memstore.db.migrate import alembic_config
    from memstore.db.tables import items

    def migrate(target: str, downgrade: bool) -> Any:
        def run(conn: Any) -> None:
            (command.downgrade if downgrade else command.upgrade)(alembic_config(conn), target)

        return run

    def key_uniqueness(conn: Any) -> tuple[list[str | None], list[str]]:
        found = inspect(conn)
        constraints = [c["name"] for c in found.get_unique_constraints("items")]
        indexes = [i["name"] for i in found.get_indexes("items") if i["unique"]]
        return constraints, indexes

    async with MemoryStore.open(backend_url) as store:
        await add_worked_example(store)  # removed items included: compaction references
        memory = store.session("keyed", estimator=WordEstimator())
        first = await memory.add("user", "charge the card", idempotency_key="turn-1")
        await memory.add("user", "no key here")
        database = store.database

        async def rows() -> list[Any]:
            # The columns 0004 already had (later revisions add payload, call_id, origin_id,
            # handle, turn and pending_until).
            later = ("payload", "call_id", "origin_id", "handle", "turn", "pending_until")
            older = [c for c in items.columns if c.name not in later]
            query = select(*older).order_by(items.c.id)
            return list(await database.run_read(lambda conn: conn.execute(query).all()))

        before = await rows()
        await database.run_write(migrate("0004", downgrade=True))
        assert await rows() == before
        constraints, _ = await database.run_read(key_uniqueness)
        assert "uq_items_session_id_idempotency_key" in constraints
        await database.run_write(migrate("head", downgrade=False))
        assert await rows() == before
        constraints, indexes = await database.run_read(key_uniqueness)
        assert "uq_items_session_id_idempotency_key" not in constraints
        assert "uq_items_session_id_idempotency_key" in indexes
        assert await store.check() == []

    async with MemoryStore.open(backend_url) as store:
        memory = store.session("keyed", estimator=WordEstimator())
        again = await memory.add("user", "charge the card", idempotency_key="turn-1")
        assert again.id == first.id
        with pytest.raises(IdempotencyConflictError):
            await memory.add("user", "charge it twice", idempotency_key="turn-1")
        await memory.add("user", "no key here")  # keyless items never conflict
        assert [i.content for i in await memory.items()] == [
            "charge the card", "no key here", "no key here",
        ]  # fmt: skip

        def duplicate_key(conn: Any) -> None:  # the index itself refuses, not only the code
            conn.execute(
                items.insert().values(
                    {**before[-1]._asdict(), "id": "x", "seq": 99, "idempotency_key": "k"}
                )
            )
            conn.execute(
                items.insert().values(
                    {**before[-1]._asdict(), "id": "y", "seq": 100, "idempotency_key": "k"}
                )
            )

        with pytest.raises(StorageError):
            await store.database.run_write(duplicate_key)
