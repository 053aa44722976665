"""Hermetic test setup: real SQLite files under tmp_path, no network, no real model.

* Every ``MEMORY_*`` and ``MEMSTORE_*`` variable is cleared (the PostgreSQL test URL aside),
  and ``MEMSTORE_DB`` points at the test's tmp_path, so nothing touches ./memstore.db.
* Sockets may connect to loopback only: a test that tries to reach the internet fails loudly.
* ``OPENAI_API_KEY`` is removed and ``OPENAI_BASE_URL`` points at a closed local port, so an
  accidental real model call fails instead of spending money.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import json
import os
import shutil
import signal
import socket
import sqlite3
import tempfile
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from memstore import MemoryKind, MemoryLimits, MemoryStore, Priority, WordEstimator
from memstore.core.values import DEFAULT_KIND, LIMIT_VARIABLES, MemoryItem

#: Fixtures that live beside their helpers: the bad-input modules' (``template``, ``memory``)
#: and the loop-commit modules' (``commits``, ``warm``).
pytest_plugins = ["badinput"]

_real_connect = socket.socket.connect

# A shell that starts the suite as a background job sets SIGINT to "ignore", and every process
# a test starts would inherit that: its Ctrl-C tests would send a signal nobody hears. A
# handler of Python's own becomes the default again across exec, so the commands the tests
# start get Ctrl-C as a terminal's foreground process does.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


def _loopback_only(self: socket.socket, address: object) -> None:
    host = address[0] if isinstance(address, tuple) else address
    if self.family == socket.AF_UNIX or str(host) in {"127.0.0.1", "::1", "localhost"}:
        return _real_connect(self, address)  # type: ignore[arg-type]
    if isinstance(host, str) and host.startswith("127."):
        return _real_connect(self, address)  # type: ignore[arg-type]
    raise OSError(f"tests may not reach the network (tried {address!r})")


@pytest.fixture(autouse=True)
def hermetic(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[None]:
    # A developer's or CI's own settings (MEMORY_HARD_LIMIT=60, MEMSTORE_BUSY_TIMEOUT=0.05)
    # must not change what the tests see.
    for name in list(os.environ):
        if name.startswith(("MEMORY_", "MEMSTORE_")) and name != "MEMSTORE_TEST_POSTGRES_URL":
            monkeypatch.delenv(name)
    monkeypatch.setenv("MEMSTORE_DB", str(tmp_path / "env.db"))
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setattr(socket.socket, "connect", _loopback_only)
    yield


#: Set by .ci/run (a throwaway cluster); without it the PostgreSQL variants are skipped.
POSTGRES_URL = os.environ.get("MEMSTORE_TEST_POSTGRES_URL")
BACKENDS = ["sqlite", "postgres"]
#: Why a PostgreSQL variant did not run.
POSTGRES_SKIPPED = "PostgreSQL variant: set MEMSTORE_TEST_POSTGRES_URL (.ci/run starts a cluster)"


async def reset_postgres(url: str) -> None:
    """An empty database for the next test: drop and recreate the public schema."""
    import asyncpg  # type: ignore[import-untyped]

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    finally:
        await conn.close()


def backend_url_for(backend: str, tmp_path: Path) -> str:
    """A fresh, empty database of ``backend``: a SQLite file, or the reset test database."""
    if backend == "sqlite":
        return str(tmp_path / "memory.db")
    if not POSTGRES_URL:
        pytest.skip(POSTGRES_SKIPPED)
    asyncio.run(reset_postgres(POSTGRES_URL))
    return POSTGRES_URL


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Every PostgreSQL variant skipped for want of a server, wherever it was skipped, is
    reported at one place, so the summary folds them into one line with their count."""
    report = yield
    if report.skipped and isinstance(report.longrepr, tuple):
        reason = str(report.longrepr[2])
        if "PostgreSQL variant" in reason:
            here = backend_url_for.__code__
            report.longrepr = (here.co_filename, here.co_firstlineno, POSTGRES_SKIPPED)
    return report


@pytest.fixture(params=BACKENDS)
def backend_url(request: pytest.FixtureRequest, tmp_path: Path) -> str:
    """Each test using it runs on SQLite and on PostgreSQL."""
    return backend_url_for(request.param, tmp_path)


@pytest.fixture
def postgres_url(tmp_path: Path) -> str:
    """A fresh PostgreSQL test database (for tests of PostgreSQL-only behaviour)."""
    return backend_url_for("postgres", tmp_path)


#: The SQLite file migrated to head once per test run (see ``migrated_sqlite``).
_SQLITE_TEMPLATE: list[Path] = []


def migrated_sqlite(path: Path) -> Path:
    """``path``: a copy of a SQLite file migrated to head once per test run (its mode, 0600,
    too). A copy opens in a fraction of the time a new file takes to migrate."""
    if not _SQLITE_TEMPLATE:
        template = Path(tempfile.mkdtemp(prefix="memstore-template-")) / "migrated.db"

        async def migrate() -> None:
            async with MemoryStore.open(template):
                pass

        with concurrent.futures.ThreadPoolExecutor(1) as pool:  # a caller may be in a loop
            pool.submit(asyncio.run, migrate()).result()
        assert not Path(f"{template}-wal").exists()  # closing folded the log in
        _SQLITE_TEMPLATE.append(template)
    shutil.copy2(_SQLITE_TEMPLATE[0], path)
    return path


#: The catalog of the test database right after a fresh migration (see ``fresh_rows``).
_MIGRATED_SCHEMA: list[str] = []
#: Everything of the public schema a test could change, as text: tables, columns, indexes,
#: constraints, triggers, functions, sequences and the Alembic revision.
_SCHEMA_CATALOG = """
SELECT x FROM (
  SELECT c.relname || ':' || c.relkind::text FROM pg_class c
    WHERE c.relnamespace = 'public'::regnamespace
  UNION ALL SELECT a.attrelid::regclass::text || '.' || a.attname || ' '
      || format_type(a.atttypid, a.atttypmod) || ' ' || a.attnotnull::text
    FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid
    WHERE c.relnamespace = 'public'::regnamespace AND a.attnum > 0 AND NOT a.attisdropped
  UNION ALL SELECT indexdef FROM pg_indexes WHERE schemaname = 'public'
  UNION ALL SELECT conname || ' ' || pg_get_constraintdef(oid) FROM pg_constraint
    WHERE connamespace = 'public'::regnamespace
  UNION ALL SELECT pg_get_triggerdef(oid) FROM pg_trigger WHERE NOT tgisinternal
  UNION ALL SELECT proname || ' ' || prosrc FROM pg_proc
    WHERE pronamespace = 'public'::regnamespace
  UNION ALL SELECT 'revision ' || version_num FROM alembic_version
) AS catalog(x) ORDER BY x
"""


async def fresh_rows(url: str) -> bool:
    """Empty every memstore table of the test database, if its schema is exactly what a fresh
    migration made (a test may have changed it: then nothing is touched). Whether it was."""
    import asyncpg

    from memstore.db.tables import metadata

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        try:
            catalog = [row[0] for row in await conn.fetch(_SCHEMA_CATALOG)]
        except asyncpg.PostgresError:  # no schema at all (no alembic_version)
            return False
        if not _MIGRATED_SCHEMA or catalog != _MIGRATED_SCHEMA:
            return False
        async with conn.transaction():
            for table in reversed(metadata.sorted_tables):
                await conn.execute(f"DELETE FROM {table.name}")
            sequences = await conn.fetch(
                "SELECT relname FROM pg_class WHERE relkind = 'S' "
                "AND relnamespace = 'public'::regnamespace"
            )
            for (sequence,) in sequences:
                await conn.execute(f"ALTER SEQUENCE {sequence} RESTART")
        return True
    finally:
        await conn.close()


async def migrated_postgres(url: str) -> str:
    """``url``: the test database with memstore's schema at head and no rows (emptied when
    its catalog is as migrated, else dropped and migrated again)."""
    import asyncpg

    if await fresh_rows(url):
        return url
    await reset_postgres(url)
    async with MemoryStore.open(url):
        pass  # migrated from nothing
    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        _MIGRATED_SCHEMA[:] = [row[0] for row in await conn.fetch(_SCHEMA_CATALOG)]
    finally:
        await conn.close()
    return url


@pytest.fixture(params=BACKENDS)
async def any_store(request: pytest.FixtureRequest, tmp_path: Path) -> AsyncIterator[MemoryStore]:
    """A ready, migrated store on each backend, with no rows. (A copy of a migrated SQLite
    file; on PostgreSQL the test database emptied of rows when its schema is as migrated,
    else rebuilt: migrating for every test would cost more than most tests.)"""
    if request.param == "sqlite":
        url = str(migrated_sqlite(tmp_path / "memory.db"))
    elif not POSTGRES_URL:
        pytest.skip(POSTGRES_SKIPPED)
    else:
        url = await migrated_postgres(POSTGRES_URL)
    async with MemoryStore.open(url) as opened:
        yield opened


async def table_counts(store: MemoryStore) -> dict[str, int]:
    """Rows per memstore table, on any backend."""
    from sqlalchemy import func, select

    from memstore.db.tables import metadata

    def counts(conn: Any) -> dict[str, int]:
        return {
            name: conn.execute(select(func.count()).select_from(table)).scalar_one()
            for name, table in metadata.tables.items()
        }

    return await store.database.run_read(counts)


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    """A fresh SQLite file path (not created yet)."""
    return tmp_path / "memory.db"


@pytest.fixture
async def store(db_path: Path) -> AsyncIterator[MemoryStore]:
    """A ready, migrated store on a real SQLite file (``db_path``, a copy of the template)."""
    async with MemoryStore.open(migrated_sqlite(db_path)) as opened:
        yield opened


#: The worked example's limits.
WORKED_LIMITS = MemoryLimits(hard=55, target=52, keep_recent=2)
WORKED_SUMMARY = (
    "Current objective: diagnose checkout latency. "
    "Important observation: payment-service is degraded."
)
WORKED_ITEMS = [
    (
        "user",
        "USER_MESSAGE",
        "NORMAL",
        "Investigate checkout latency and remember that payment-service is involved.",
    ),
    ("tool", "TOOL_OBSERVATION", "LOW", "Health-check endpoint returned 200 on checkout-service."),
    ("tool", "TOOL_OBSERVATION", "HIGH", "payment-service p95 latency is 1720ms and is degraded."),
    (
        "assistant",
        "ASSISTANT_MESSAGE",
        "NORMAL",
        "I will trace the downstream dependency path before naming a root cause.",
    ),
]
WORKED_FIFTH = (
    "user",
    "USER_MESSAGE",
    "NORMAL",
    "Also verify whether fraud-service is contributing to the payment delay.",
)


def make_item(
    content: str,
    kind: MemoryKind = MemoryKind.USER_MESSAGE,
    priority: Priority = Priority.NORMAL,
    seq: int = 1,
) -> MemoryItem:
    """A MemoryItem for pure-policy tests (the role follows the kind; tokens = words)."""
    role = next(r for r, k in DEFAULT_KIND.items() if k is kind)
    return MemoryItem(
        id=str(uuid.uuid4()),
        session_id="s",
        seq=seq,
        role=role,
        kind=kind,
        priority=priority,
        content=content,
        timestamp=datetime.now(UTC),
        estimated_tokens=len(content.split()),
    )


async def fixed_summary(previous: str | None, items: object) -> str:
    """The worked example's summarizer: always the same text."""
    return WORKED_SUMMARY


async def add_worked_example(store: MemoryStore) -> None:
    """The worked example's five items in ``incident-42`` (one compaction: 65 -> 52 tokens)."""
    memory = store.session(
        "incident-42", limits=WORKED_LIMITS, estimator=WordEstimator(), summarizer=fixed_summary
    )
    for role, kind, priority, content in [*WORKED_ITEMS, WORKED_FIFTH]:
        await memory.add(role, content, kind=kind, priority=priority)


def write_worked_example(path: Path | str) -> None:
    """:func:`add_worked_example` into the database at ``path``, outside any event loop."""

    async def write() -> None:
        async with MemoryStore.open(path) as store:
            await add_worked_example(store)

    asyncio.run(write())


class DatabaseClock:
    """The database's clock as leases read it, set by the test (seconds since 1970)."""

    now = 1_000.0


@pytest.fixture
def db_clock(monkeypatch: pytest.MonkeyPatch) -> DatabaseClock:
    """Lease times from a clock the test moves, instead of the database's real one."""
    from sqlalchemy import Float, literal

    from memstore.db import lease

    clock = DatabaseClock()
    monkeypatch.setattr(lease, "database_now", lambda _conn: literal(clock.now, Float))
    return clock


@pytest.fixture
def words() -> WordEstimator:
    return WordEstimator()


def raw_sqlite(path: Path | str, **options: Any) -> sqlite3.Connection:
    """A plain ``sqlite3`` connection (not memstore's) that may still write: with memstore's
    SQL functions registered, which the search index's triggers call."""
    from memstore.db.connection import register_functions

    conn = sqlite3.connect(path, **options)
    register_functions(conn)
    return conn


def damage_items(conn: sqlite3.Connection, sql: str, *params: Any) -> None:
    """Run an ``UPDATE items ...`` past the index's update trigger, as damage would write:
    its function cannot read a text that is not UTF-8."""
    (trigger,) = conn.execute(
        "SELECT sql FROM sqlite_master WHERE name = 'items_fts_update'"
    ).fetchone()
    conn.execute("DROP TRIGGER items_fts_update")
    conn.execute(sql, params)
    conn.execute(trigger)
    conn.commit()


def row_counts(path: Path) -> dict[str, int]:
    """Rows per memstore table, read with the raw sqlite3 module (not through memstore)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        return {
            table: conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0]
            for table in ("sessions", "items", "compactions", "summaries")
        }


@asynccontextmanager
async def write_lock_held(url: str) -> AsyncIterator[None]:
    """Another client holds the session's row lock (PostgreSQL) or the write lock (SQLite)."""
    if url.startswith("postgresql"):
        import asyncpg  # type: ignore[import-untyped]

        conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
        tx = conn.transaction()
        await tx.start()
        await conn.execute("SELECT 1 FROM sessions WHERE id = 'incident-42' FOR UPDATE")
        try:
            yield
        finally:
            await tx.rollback()
            await conn.close()
    else:
        import sqlite3

        conn = sqlite3.connect(url, isolation_level=None)
        conn.execute("BEGIN IMMEDIATE")
        try:
            yield
        finally:
            conn.execute("ROLLBACK")
            conn.close()


def assert_valid_responses_input(model_input: Any) -> None:
    """What the Responses API demands of an input: every output follows its call, every call
    has its output, and every reasoning item is followed by the assistant's own item."""
    assert isinstance(model_input, list)
    calls: set[str] = set()
    answered: set[str] = set()
    for index, entry in enumerate(model_input):
        kind = entry.get("type")
        if kind == "function_call":
            calls.add(entry["call_id"])
        elif kind == "function_call_output":
            assert entry["call_id"] in calls, f"output without its call at {index}"
            answered.add(entry["call_id"])
        elif kind == "reasoning":
            follower = model_input[index + 1] if index + 1 < len(model_input) else {}
            assert follower.get("type") in ("reasoning", "function_call") or (
                follower.get("role") == "assistant"
            ), f"reasoning at {index} without the assistant's item after it"
    assert calls <= answered, f"calls without their output: {sorted(calls - answered)}"


def new_session_limits(monkeypatch: pytest.MonkeyPatch, limits: MemoryLimits) -> None:
    """Sessions created without limits (by the CLI, by an MCP server) get ``limits``: the
    ``MEMORY_*`` variables they read, set for this test and the processes it starts."""
    for field, variable in LIMIT_VARIABLES.items():
        monkeypatch.setenv(variable, str(getattr(limits, field)))


def recalled_lines(messages: list[dict[str, object]]) -> list[dict[str, object]]:
    """The recalled lines of a model input, each naming its session and time (a line that
    leaves them out is of the line before's)."""
    from memstore.render.recall import RECALL_CLOSE, RECALL_OPEN

    for message in messages:
        lines = str(message["content"]).split("\n")
        if RECALL_OPEN in lines:
            block = lines[lines.index(RECALL_OPEN) + 1 : lines.index(RECALL_CLOSE)]
            out: list[dict[str, object]] = []
            for line in block:  # a left-out session or time is the line before's
                row = json.loads(line)
                assert out or {"session", "when"} <= set(row)
                before = out[-1] if out else {}
                out.append({**{k: before[k] for k in ("session", "when") if k in before}, **row})
            return out
    return []
