"""SQLite reads on the sync engine's worker threads: off the loop, safe under cancellation."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import text

from memstore import MemoryLimits, MemoryStore, StorageError, WordEstimator
from memstore.db.threaded import ThreadedEngine

LIMITS = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)
#: A statement that keeps SQLite busy for a while (counting to a few million).
SLOW = text(
    "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x + 1 FROM c WHERE x < :n) "
    "SELECT count(*) FROM c"
)


def checked_out(store: MemoryStore) -> int:
    engine = store.database.engine
    assert isinstance(engine, ThreadedEngine)
    count: int = engine.sync_engine.pool.checkedout()  # type: ignore[attr-defined]
    return count


async def test_reads_run_in_worker_threads_and_the_loop_keeps_running(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        ticks = 0
        done = asyncio.Event()

        async def ticker() -> None:
            nonlocal ticks
            while not done.is_set():
                ticks += 1
                await asyncio.sleep(0.001)

        async def slow_read() -> tuple[int, str]:
            async with store.database.read() as conn:
                count = (await conn.execute(SLOW, {"n": 1_000_000})).scalar_one()
                name = await conn.run_sync(lambda _conn: threading.current_thread().name)
            done.set()
            return count, name

        task = asyncio.create_task(ticker())
        count, name = await slow_read()
        await task
        assert count == 1_000_000
        assert name.startswith("memstore-sqlite")
        assert ticks >= 5  # a loop blocked by the query would not have ticked at all


async def test_a_cancelled_read_returns_its_connection_and_later_reads_work(
    db_path: Path,
) -> None:
    async with MemoryStore.open(db_path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await memory.add("user", "before the cancellation")

        async def slow_read() -> Any:
            async with store.database.read() as conn:
                return (await conn.execute(SLOW, {"n": 50_000_000})).scalar_one()

        task = asyncio.create_task(slow_read())
        await asyncio.sleep(0.05)  # the statement is running in its thread now
        task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await task
        # The clean-up waited for the statement, rolled back and returned the connection.
        assert checked_out(store) == 0
        await memory.add("user", "after the cancellation")
        assert [item.content for item in await memory.items()] == [
            "before the cancellation",
            "after the cancellation",
        ]
        assert await store.check() == []


async def test_a_failed_statement_rolls_back_its_write_transaction(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        with pytest.raises(StorageError):
            async with store.database.write() as conn:
                await conn.execute(text("CREATE TABLE scratch (x INTEGER)"))
                await conn.execute(text("SELECT * FROM no_such_table"))
        async with store.database.read() as conn:
            found = (
                await conn.execute(text("SELECT name FROM sqlite_master WHERE name = 'scratch'"))
            ).all()
        assert found == []
        assert checked_out(store) == 0


def test_the_cli_show_path_loads_neither_the_orm_nor_other_backends(tmp_path: Path) -> None:
    """Start-up cost is measured in benchmarks/suite.py; what it depends on is checked here."""
    db = tmp_path / "cli.db"
    add = ["add", "s", "hi", "--estimator", "words"]
    subprocess.run(
        [sys.executable, "-m", "memstore", "--db", str(db), *add],
        check=True,
        capture_output=True,
    )
    probe = (
        "import sys\n"
        "from memstore.cli import main\n"
        "try:\n"
        f"    main(['--db', {str(db)!r}, 'show', 's'], prog_name='memstore')\n"
        "except SystemExit:\n"
        "    pass\n"
        "print(' '.join(sorted(sys.modules)), file=sys.stderr)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", probe], check=True, capture_output=True, text=True
    )
    assert "hi" in result.stdout
    loaded = set(result.stderr.split())
    for heavy in (
        "sqlalchemy.orm",
        "sqlalchemy.ext.asyncio",
        "sqlalchemy.dialects.postgresql",
        "aiosqlite",
        "alembic",
        "openai",
        "tiktoken",
        "rich.progress",
        "memstore.cli.chat",
        "memstore.replay",
        "memstore.ltm",
    ):
        assert heavy not in loaded, heavy
