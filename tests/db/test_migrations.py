"""The schema belongs to Alembic, and the migrations produce exactly what the code declares.

Every test works on a real SQLite file; the command-line tests run ``alembic`` the way an
operator would, from the repository root, in a separate process.
"""

from __future__ import annotations

import asyncio
import os
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager
from pathlib import Path
from typing import Any

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from sqlalchemy import Connection, UniqueConstraint, create_engine, inspect

from memstore import MemoryStore, WordEstimator
from memstore.db.migrate import (
    alembic_config,
    database_revision,
    ensure_schema,
    head_revision,
    migrations_dir,
)
from memstore.db.search import INDEX_TABLES, modelled
from memstore.db.tables import metadata

REPO_ROOT = Path(__file__).resolve().parents[2]
TABLES = {
    "sessions",
    "items",
    "compactions",
    "summaries",
    "ltm_entries",
    "ltm_history",
    "input_counts",
    "consolidations",
    "consolidated_items",
    "consolidated_facts",
    "conversations",
    "conversation_entries",
    "conversation_branches",
    "embedders",
    "item_vectors",
    "entry_vectors",
}


# -- helpers -------------------------------------------------------------------------------


async def open_once(path: Path) -> None:
    async with MemoryStore.open(path):
        pass


@contextmanager
def sync_connection(path: Path) -> Iterator[Connection]:
    engine = create_engine(f"sqlite:///{path}")
    try:
        with engine.connect() as conn:
            yield conn
    finally:
        engine.dispose()


def schema_diff(path: Path) -> list[Any]:
    with sync_connection(path) as conn:
        context = MigrationContext.configure(conn, opts={"include_name": modelled})
        return compare_metadata(context, metadata)


def stored_revisions(path: Path) -> list[str]:
    with closing(sqlite3.connect(path)) as conn:
        return [row[0] for row in conn.execute("SELECT version_num FROM alembic_version")]


def schema_sql(path: Path) -> list[tuple[str, str, str]]:
    with closing(sqlite3.connect(path)) as conn:
        return conn.execute(
            "SELECT type, name, sql FROM sqlite_master WHERE name NOT LIKE 'sqlite_%' "
            "ORDER BY type, name"
        ).fetchall()


def child_env(**extra: str) -> dict[str, str]:
    paths = [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
    return {**os.environ, "PYTHONPATH": os.pathsep.join(paths), **extra}


# -- the migrated schema is the declared schema ----------------------------------------------


async def test_empty_database_upgraded_to_head_matches_the_models(db_path: Path) -> None:
    await open_once(db_path)
    assert schema_diff(db_path) == []


def _named_constraints(pairs: Any) -> set[tuple[str | None, tuple[str, ...]]]:
    return {(name, tuple(columns)) for name, columns in pairs}


async def test_constraint_and_index_names_match_the_models(db_path: Path) -> None:
    """Names matter beyond SQLite: PostgreSQL refuses two constraints with one name, and
    later migrations drop constraints by name."""
    await open_once(db_path)
    with sync_connection(db_path) as conn:
        reflected = inspect(conn)
        assert set(reflected.get_table_names()) - INDEX_TABLES == TABLES | {"alembic_version"}
        for table in metadata.sorted_tables:
            declared_unique = _named_constraints(
                (c.name, [col.name for col in c.columns])
                for c in table.constraints
                if isinstance(c, UniqueConstraint)
            )
            found_unique = _named_constraints(
                (u["name"], u["column_names"]) for u in reflected.get_unique_constraints(table.name)
            )
            assert found_unique == declared_unique, table.name
            assert len({name for name, _ in declared_unique}) == len(declared_unique)
            declared_indexes = _named_constraints(
                (i.name, [col.name for col in i.columns]) for i in table.indexes
            )
            found_indexes = _named_constraints(
                (i["name"], i["column_names"]) for i in reflected.get_indexes(table.name)
            )
            assert found_indexes == declared_indexes, table.name
            assert reflected.get_pk_constraint(table.name)["name"] == f"pk_{table.name}"


async def test_the_partial_indexes_are_partial(db_path: Path) -> None:
    """Autogenerate does not compare index predicates: check them here, and that the queries
    they exist for use them (snapshots; what a compaction removed, and the foreign key; an
    idempotency key's lookup)."""
    await open_once(db_path)
    with closing(sqlite3.connect(db_path)) as conn:
        indexes = dict(conn.execute("SELECT name, sql FROM sqlite_master WHERE type = 'index'"))
        active = "SELECT id FROM items WHERE session_id = 's' AND fate IS NULL ORDER BY seq"
        removed = "SELECT count(*) FROM items WHERE session_id = 's' AND removed_by = 1"
        keyed = "SELECT id FROM items WHERE session_id = 's' AND idempotency_key = 'k'"
        plans = {
            q: str(conn.execute(f"EXPLAIN QUERY PLAN {q}").fetchall())
            for q in (active, removed, keyed)
        }
    assert indexes["ix_items_active"].endswith("WHERE fate IS NULL")
    assert indexes["ix_items_removed"].endswith("WHERE removed_by IS NOT NULL")
    key_index = indexes["uq_items_session_id_idempotency_key"]
    assert key_index.startswith("CREATE UNIQUE INDEX")
    assert key_index.endswith("WHERE idempotency_key IS NOT NULL")
    assert "ix_items_active" in plans[active]
    assert "ix_items_removed" in plans[removed]
    assert "uq_items_session_id_idempotency_key" in plans[keyed]


async def test_downgrade_to_base_and_upgrade_again(db_path: Path) -> None:
    await open_once(db_path)
    at_head = schema_sql(db_path)
    engine = create_engine(f"sqlite:///{db_path}")
    try:
        with engine.begin() as conn:
            command.downgrade(alembic_config(conn), "base")
        with engine.connect() as conn:
            assert inspect(conn).get_table_names() == ["alembic_version"]
        assert stored_revisions(db_path) == []
        with engine.begin() as conn:
            command.upgrade(alembic_config(conn), "head")
    finally:
        engine.dispose()
    assert stored_revisions(db_path) == [head_revision()]
    assert schema_sql(db_path) == at_head


# -- revisions ----------------------------------------------------------------------------------


async def test_head_revision_is_what_a_new_database_records(db_path: Path) -> None:
    head = head_revision()
    assert head and (migrations_dir() / "env.py").is_file()
    async with MemoryStore.open(db_path) as store:
        assert await database_revision(store.database) == head
    assert stored_revisions(db_path) == [head]


async def test_opening_twice_is_idempotent(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        item = await store.session("s1", estimator=WordEstimator()).add("user", "remember me")
    schema, revisions = schema_sql(db_path), stored_revisions(db_path)
    for upgrade in (True, False):
        async with MemoryStore.open(db_path, upgrade=upgrade) as store:
            assert await ensure_schema(store.database) is None  # nothing left to upgrade
            items = await store.session("s1", estimator=WordEstimator()).items()
            assert [(i.id, i.content) for i in items] == [(item.id, "remember me")]
    assert schema_sql(db_path) == schema
    assert stored_revisions(db_path) == revisions == [head_revision()]


# -- the alembic command line ----------------------------------------------------------------


@pytest.mark.parametrize("how", ["MEMSTORE_DB", "-x url"])
def test_alembic_command_line_creates_a_database_at_head(tmp_path: Path, how: str) -> None:
    target = tmp_path / "cli.db"
    decoy = tmp_path / "decoy.db"
    if how == "MEMSTORE_DB":
        args, env = [], child_env(MEMSTORE_DB=str(target))
    else:  # -x url wins over MEMSTORE_DB
        args, env = ["-x", f"url=sqlite+aiosqlite:///{target}"], child_env(MEMSTORE_DB=str(decoy))
    run = subprocess.run(
        [sys.executable, "-m", "alembic", *args, "upgrade", "head"],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 0, run.stderr
    assert target.is_file() and not decoy.exists()
    assert oct(target.stat().st_mode & 0o777) == "0o600"
    assert stored_revisions(target) == [head_revision()]
    reference = tmp_path / "reference.db"
    asyncio.run(open_once(reference))
    assert schema_sql(target) == schema_sql(reference)  # the same DDL as MemoryStore.open's

    async def use() -> list[str]:
        async with MemoryStore.open(target, upgrade=False, create=False) as store:
            memory = store.session("cli", estimator=WordEstimator())
            await memory.add("user", "created by alembic")
            return [i.content for i in await memory.items()]

    assert asyncio.run(use()) == ["created by alembic"]


# -- concurrent first opens ------------------------------------------------------------------

_OPENER = r"""
import asyncio, sys, time
from pathlib import Path
from memstore import MemoryStore, WordEstimator

path, name, go, token = sys.argv[1], sys.argv[2], Path(sys.argv[3]), sys.argv[4]
Path(f"{go}.{token}.ready").touch()
deadline = time.monotonic() + 30
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.0005)

async def main():
    async with MemoryStore.open(path) as store:
        await store.session(name, estimator=WordEstimator()).add("user", f"hello from {name}")

asyncio.run(main())
print("ok")
"""


def _open_concurrently(tmp_path: Path, databases: int, per_database: int) -> list[str]:
    """Start every opener, release them at once; return the failures (stderr tails)."""
    go = tmp_path / "go"
    procs = []
    for d in range(databases):
        path = tmp_path / f"fresh-{d}.db"
        for w in range(per_database):
            procs.append(
                subprocess.Popen(
                    [sys.executable, "-c", _OPENER, str(path), f"w{w}", str(go), f"{d}-{w}"],
                    env=child_env(),
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    text=True,
                )
            )
    deadline = time.monotonic() + 60
    while len(list(tmp_path.glob("go.*.ready"))) < len(procs) and time.monotonic() < deadline:
        time.sleep(0.005)
    go.touch()
    failures = []
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        if proc.returncode != 0 or out.strip() != "ok":
            failures.append(
                err.strip().splitlines()[-1] if err.strip() else f"rc={proc.returncode}"
            )
    for d in range(databases):
        path = tmp_path / f"fresh-{d}.db"
        assert stored_revisions(path) == [head_revision()]
    return failures


def test_two_processes_open_the_same_fresh_database(tmp_path: Path) -> None:
    """Both create, migrate (once) and write; neither sees an error."""
    assert _open_concurrently(tmp_path, databases=1, per_database=2) == []
    with closing(sqlite3.connect(tmp_path / "fresh-0.db")) as conn:
        rows = conn.execute("SELECT session_id, content FROM items ORDER BY session_id")
        assert rows.fetchall() == [("w0", "hello from w0"), ("w1", "hello from w1")]


_HOLDER = r"""
import sqlite3, sys, time
conn = sqlite3.connect(sys.argv[1], isolation_level=None)
conn.execute("PRAGMA user_version = 1")  # a real (rollback-journal) database file, no tables
conn.execute("BEGIN IMMEDIATE")
print("locked", flush=True)
time.sleep(float(sys.argv[2]))
conn.execute("COMMIT")
conn.close()
"""


async def test_fresh_database_opens_while_another_process_writes_it(db_path: Path) -> None:
    """The deterministic form of the race above: switching a database to WAL while another
    process holds its write lock gets SQLITE_BUSY without the busy handler; the open must
    wait for the lock (0.5s here, well inside the 5s busy timeout) instead of failing. (A file
    memstore creates itself is born in WAL mode; this is an SQLite file made elsewhere.)"""
    with subprocess.Popen(
        [sys.executable, "-c", _HOLDER, str(db_path), "0.5"],
        stdout=subprocess.PIPE,
        text=True,
    ) as holder:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "locked"
        started = time.monotonic()
        async with MemoryStore.open(db_path) as store:
            await store.session("s1", estimator=WordEstimator()).add("user", "hello")
        assert time.monotonic() - started < 3
    assert holder.returncode == 0
    assert stored_revisions(db_path) == [head_revision()]
    with closing(sqlite3.connect(db_path)) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone() == ("wal",)


def test_schema_head_constant_matches_the_migration_scripts() -> None:
    """Opening a store compares with SCHEMA_HEAD without loading Alembic: keep them equal."""
    from memstore.db.migrate import SCHEMA_HEAD

    assert head_revision() == SCHEMA_HEAD
