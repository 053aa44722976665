"""Section (1) of the suite: durable single appends, memstore beside raw sqlite3 and peers.

Also the helpers every section shares (``Row``, ``timed``, the settings under test). Besides
the contenders the issue names, one line measures the floor of memstore's own design on this
disk: the very statements of an append (:class:`memstore.db.append.Append`, run by the SQLite
writer's :func:`~memstore.db.sqlite_statements.run_job`, its shortcut included) on a plain
``sqlite3`` connection with memstore's settings and checkpoint interval, in a synchronous
loop. What memstore costs above it is its async write path (input validation, the writer's
gathering of concurrent writes, futures, the first commits a new writer leaves to its thread);
what the floor costs above raw sqlite3 is the schema (cached totals, indexes), its
checkpoints, and its own Python (the count, the item, the parameters). A last line takes that
Python out too: the same two statements with every parameter prepared before the clock
starts, which is what the schema and the fsync alone cost.
"""

from __future__ import annotations

import asyncio
import dataclasses
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path

from append_throughput import raw_sqlite

from memstore import MemoryLimits, MemoryStore, TiktokenEstimator, WordEstimator
from memstore.config import Settings
from memstore.db.append import (
    _ITEM_INSERT_COLUMNS,
    Append,
    NewItem,
    _appended,
    _bump_values,
    _insert_values,
    _sqlite_statements,
)
from memstore.db.sqlite_statements import run_job
from memstore.db.sqlite_writer import connect
from memstore.model import MemoryKind, MemoryRole, Priority

#: memstore's settings in every section, from the ``MEMSTORE_*`` variables as memstore itself
#: takes them: ``MEMSTORE_SQLITE_SYNCHRONOUS=NORMAL python benchmarks/suite.py`` measures that
#: trade. Raw sqlite3 runs at the same ``synchronous`` setting; the peers at their own.
SETTINGS = Settings.from_env()
SYNC = SETTINGS.sqlite_synchronous
NO_COMPACTION = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)
Row = tuple[str, float, str]


def print_sections(sections: list[tuple[str, list[Row]]]) -> None:
    """Print each section's title, then its rows: label, value (``n/a`` for NaN), note."""
    for title, rows in sections:
        print(f"\n{title}")
        for label, value, note in rows:
            shown = "n/a" if value != value else f"{value:,.1f}"
            print(f"  {label:<52} {shown:>10}  {note}")


def timed(coro_factory: Callable[[Path], Awaitable[float]], rounds: int) -> float:
    """Median seconds of ``coro_factory(fresh path)`` over ``rounds`` fresh databases."""
    results = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            results.append(asyncio.run(coro_factory(Path(tmp) / "bench.db")))
    return statistics.median(results)


# -- (1) single appends ------------------------------------------------------------------


async def memstore_floor(path: Path, texts: list[str]) -> float:
    """Seconds for memstore's own append transactions run without asyncio or its writer.

    The same statements (an ``Append`` through ``run_job``, as the writer runs it), connection
    settings and checkpoint interval as the writer's commits on the event loop, in a plain
    synchronous loop on one connection (inside a coroutine only to open the store first;
    nothing else runs meanwhile).
    """

    await _schema_and_session(path)
    conn = connect(path, SETTINGS)  # as the writer's own
    estimator = WordEstimator()

    def append(text: str) -> None:
        new = NewItem(
            role=MemoryRole.USER,
            kind=MemoryKind.USER_MESSAGE,
            priority=Priority.NORMAL,
            content=text,
            estimated_tokens=estimator.count(text),
        )
        conn.execute("BEGIN IMMEDIATE")
        run_job(conn, Append("b", estimator.name, NO_COMPACTION, new))
        conn.execute("COMMIT")

    append("warm-up")  # this connection's own, as the memstore contenders warm theirs
    start = time.perf_counter()
    for text in texts:
        append(text)
    elapsed = time.perf_counter() - start
    conn.close()
    return elapsed


async def _schema_and_session(path: Path) -> None:
    """Create the schema and session "b" (with one item), then close the store."""
    async with MemoryStore.open(path) as store:
        memory = store.session("b", estimator=WordEstimator(), limits=NO_COMPACTION)
        await memory.add("user", "warm-up")


async def memstore_sql_only(
    path: Path, texts: list[str], on_append: Callable[[float], object] | None = None
) -> float:
    """Seconds for the SQL of memstore's appends alone: the shortcut's two statements with
    every parameter prepared before the clock starts (ids, timestamps, counts), on a plain
    connection as in :func:`memstore_floor`.

    No Python of memstore's runs between two commits, so this is what the schema (the cached
    totals, the indexes) and the fsync cost: the limit of every line above it.

    ``on_append``, if given, is called after each COMMIT with that append's own time, from
    the end of the one before (and of its call) to the end of its COMMIT, a checkpoint that
    the COMMIT ran included; but for those calls, the times add up to the run
    (``benchmarks/wal_costs.py``).
    """
    await _schema_and_session(path)
    bump_sql, insert_sql, timestamp = _sqlite_statements()
    now = datetime.now(UTC)
    stamp = timestamp(now)
    estimator = WordEstimator()
    bumps, inserts = [], []
    for text in texts:  # what Append.run_sqlite binds, seq and version to come from BUMP
        tokens = estimator.count(text)
        new = NewItem(MemoryRole.USER, MemoryKind.USER_MESSAGE, Priority.NORMAL, text, tokens)
        bumps.append(_bump_values("b", estimator.name, NO_COMPACTION, new, stamp))
        inserts.append(_insert_values(_appended("b", new, now, 0, 0), None, stamp))
    seq_at, version_at = (
        _ITEM_INSERT_COLUMNS.index("seq"),
        _ITEM_INSERT_COLUMNS.index("added_version"),
    )
    conn = connect(path, SETTINGS)  # as the writer's own
    clock = time.perf_counter
    start = began = clock()
    for bump, ins in zip(bumps, inserts, strict=True):
        conn.execute("BEGIN IMMEDIATE")
        version, seq, *_ = conn.execute(bump_sql, bump).fetchall()[0]
        row = list(ins)
        row[seq_at], row[version_at] = seq, version
        conn.execute(insert_sql, row)
        conn.execute("COMMIT")
        if on_append is not None:
            ended = clock()
            on_append(ended - began)
            began = clock()
    elapsed = clock() - start
    conn.close()
    return elapsed


def single_appends(texts: list[str], rounds: int) -> list[Row]:
    """Rounds are interleaved (every contender once per round): a noisy minute on the shared
    machine then hits all of them alike instead of one contender's every round."""
    n = len(texts)

    async def raw(path: Path) -> float:
        return n / raw_sqlite(path, texts, SYNC)  # its rate back to seconds, like the others

    async def floor(path: Path) -> float:
        return await memstore_floor(path, texts)

    async def sql_only(path: Path) -> float:
        return await memstore_sql_only(path, texts)

    def memstore_run(
        tiktoken: bool, loop_ms: float | None = None
    ) -> Callable[[Path], Awaitable[float]]:
        async def run(path: Path) -> float:
            settings = SETTINGS
            if loop_ms is not None:
                settings = dataclasses.replace(settings, sqlite_loop_commit_ms=loop_ms)
            async with MemoryStore.open(path, settings=settings) as store:
                estimator = TiktokenEstimator() if tiktoken else WordEstimator()
                memory = store.session("b", estimator=estimator, limits=NO_COMPACTION)
                await memory.add("user", "warm-up")
                start = time.perf_counter()
                for text in texts:
                    await memory.add("user", text)
                return time.perf_counter() - start

        return run

    contenders = {
        f"raw sqlite3, WAL, synchronous={SYNC}": raw,
        SQL_ONLY: sql_only,
        FLOOR: floor,
        "memstore add (words)": memstore_run(False),
        "memstore add (tiktoken)": memstore_run(True),
        "memstore add (words), writer thread only": memstore_run(False, loop_ms=0),
        **peer_factories(texts),
    }
    seconds: dict[str, list[float]] = {label: [] for label in contenders}
    missing: dict[str, str] = {}
    for _ in range(rounds):
        for label, factory in contenders.items():
            if label in missing:
                continue
            try:
                seconds[label].append(timed(factory, 1))
            except ImportError as error:
                missing[label] = f"not installed ({error.name})"
    rates = {label: n / statistics.median(s) for label, s in seconds.items() if s}
    base_label = next(iter(contenders))
    base = rates[base_label]
    rows: list[Row] = []
    for label in contenders:
        if label in missing:
            rows.append((label, float("nan"), missing[label]))
        elif label == base_label:
            rows.append((label, base, "baseline"))
        else:
            note = f"{rates[label] / base:.3f} x raw"
            if label.startswith("memstore") and SDK_SESSION in rates:  # goal (1)'s ratio
                note += f", {rates[label] / rates[SDK_SESSION]:.2f} x SQLiteSession"
            if label.startswith("memstore add"):
                note += f", {rates[label] / rates[FLOOR]:.2f} x floor"
            rows.append((label, rates[label], note))
    return rows


SDK_SESSION = "Agents SDK SQLiteSession.add_items"
SQL_ONLY = "memstore's append SQL alone, parameters prepared"
FLOOR = "memstore's append SQL, sync loop, no asyncio (floor)"


def peer_factories(texts: list[str]) -> dict[str, Callable[[Path], Awaitable[float]]]:
    async def sqlite_session(path: Path) -> float:
        from agents import SQLiteSession

        session = SQLiteSession("b", str(path))
        await session.add_items([{"role": "user", "content": "warm-up"}])
        start = time.perf_counter()
        for text in texts:
            await session.add_items([{"role": "user", "content": text}])
        elapsed = time.perf_counter() - start
        session.close()
        return elapsed

    async def sqlalchemy_session(path: Path) -> float:
        from agents.extensions.memory.sqlalchemy_session import SQLAlchemySession

        session = SQLAlchemySession.from_url(
            "b", url=f"sqlite+aiosqlite:///{path}", create_tables=True
        )
        await session.add_items([{"role": "user", "content": "warm-up"}])
        start = time.perf_counter()
        for text in texts:
            await session.add_items([{"role": "user", "content": text}])
        elapsed = time.perf_counter() - start
        await session.engine.dispose()
        return elapsed

    async def langgraph_store(path: Path) -> float:
        from langgraph.store.sqlite.aio import AsyncSqliteStore

        async with AsyncSqliteStore.from_conn_string(str(path)) as store:
            await store.setup()
            start = time.perf_counter()
            for i, text in enumerate(texts):
                await store.aput(("sessions", "b"), f"item-{i}", {"role": "user", "text": text})
            return time.perf_counter() - start

    return {
        SDK_SESSION: sqlite_session,
        "Agents SDK SQLAlchemySession.add_items": sqlalchemy_session,
        "LangGraph AsyncSqliteStore.aput": langgraph_store,
    }
