"""The performance suite: memstore's hot paths beside raw sqlite3 and peer libraries, one run.

    pip install '.[bench]'            # the peers: openai-agents, langgraph-checkpoint-sqlite
    python benchmarks/suite.py [--quick] [--dir /dev/shm] [--appends N]
    MEMSTORE_SQLITE_SYNCHRONOUS=NORMAL python benchmarks/suite.py   # memstore and raw at NORMAL

Sections (issue 8): (1) durable single appends of ~200-word messages in one process, words and
tiktoken counting (and with every commit on the writer thread, none on the event loop), beside
raw sqlite3 (WAL, one insert per commit, the same synchronous setting as memstore), memstore's
own append statements in a synchronous loop (the floor of its design on this disk; see
single_appends.py), the Agents SDK's SQLiteSession and SQLAlchemySession, and LangGraph's
AsyncSqliteStore; (2) 16 coroutines appending at once; (3) 4 processes x 500 appends on one
session; (4) build_model_input() and items() with 0 / 10k / 100k removed items beside ~50
active; (5) committing a compaction that removes 100 items, beside a raw executemany of the
same row updates (on a minimal table, and on memstore's own table with its indexes and foreign
keys); (6) CLI start-up, `memstore show` beside `python -c "import sqlalchemy"`.
memstore's settings come from the ``MEMSTORE_*`` variables, as memstore's own do; the peers
run at their defaults. Every figure is a median; ratios are to the baseline named on the
line. Peers that are not installed are reported as such. Nothing here is asserted: the
machine is shared and noisy.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from append_throughput import messages
from many_workers import create, create_raw_table, memstore_worker, raw_worker, run_processes
from single_appends import (
    NO_COMPACTION,
    SETTINGS,
    SYNC,
    Row,
    print_sections,
    single_appends,
    timed,
)

from memstore import MemoryStore, WordEstimator
from memstore.db import compaction, reads
from memstore.db.compaction import CommitContext
from memstore.db.sqlite_writer import connect
from memstore.policy import plan_compaction

# -- (2) 16 coroutines -----------------------------------------------------------------------


def concurrent_appends(texts: list[str], rounds: int, base: float) -> list[Row]:
    async def run(path: Path) -> float:
        async with MemoryStore.open(path) as store:
            memory = store.session("b", estimator=WordEstimator(), limits=NO_COMPACTION)
            await memory.add("user", "warm-up")
            chunks = [texts[i::16] for i in range(16)]

            async def writer(chunk: list[str]) -> None:
                for text in chunk:
                    await memory.add("user", text)

            start = time.perf_counter()
            await asyncio.gather(*(writer(chunk) for chunk in chunks))
            return time.perf_counter() - start

    rate = len(texts) / timed(run, rounds)
    return [("memstore add, 16 coroutines (group commit)", rate, f"{rate / base:.3f} x raw single")]


# -- (3) 4 processes -------------------------------------------------------------------------


def processes(per_proc: int, rounds: int) -> list[Row]:
    """Rounds interleaved as in (1), medians reported: one busy second of the shared machine
    moved a single round's ratio by half."""
    total = 4 * per_proc
    raw_rates: list[float] = []
    ms_rates: list[float] = []
    raw: list[dict[str, Any]] = []
    ms: list[dict[str, Any]] = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            raw_path = str(Path(tmp) / "raw.db")
            create_raw_table(raw_path)
            raw += (done := run_processes(raw_worker, (raw_path, per_proc, 30), 4))
            raw_rates.append(total / max(r["seconds"] for r in done))
            url = str(Path(tmp) / "ms.db")
            asyncio.run(create(url))
            ms += (
                done := run_processes(memstore_worker, (url, per_proc, 30, 0.0, NO_COMPACTION), 4)
            )
            ms_rates.append(total / max(r["seconds"] for r in done))
    raw_rate = statistics.median(raw_rates)
    ms_rate = statistics.median(ms_rates)
    raw_errors = sum(r["errors"] for r in raw)
    ms_errors = sum(r["errors"] for r in ms)
    return [
        (f"raw sqlite3 + busy_timeout, 4 procs x {per_proc}", raw_rate, f"errors {raw_errors}"),
        (
            f"memstore add, 4 procs x {per_proc}, one session",
            ms_rate,
            f"{ms_rate / raw_rate:.3f} x raw, errors {ms_errors}",
        ),
    ]


# -- (4) reads against history -------------------------------------------------------------


def history_records(removed: int, active: int) -> list[dict[str, Any]]:
    """An export of a session with ``removed`` forgotten and ``active`` live items."""
    now = datetime.now(UTC).isoformat()
    total = removed + active
    records: list[dict[str, Any]] = [{
        "type": "session", "format": 1, "id": "h", "version": total + (1 if removed else 0),
        "estimator": "words", "last_seq": total, "active_items": active,
        "active_tokens": active * 24, "user_turns": 0, "compaction_count": 1 if removed else 0,
        "summary": None, "summary_tokens": None, "hard_limit": 10**9, "target_limit": 10**8,
        "keep_recent": 4, "lease_token": 0, "created_at": now, "updated_at": now,
    }]  # fmt: skip
    if removed:
        records.append({
            "type": "compaction", "session_id": "h", "number": 1, "snapshot_version": removed,
            "committed_version": total + 1, "trigger": "manual", "before_tokens": total * 24,
            "after_tokens": active * 24, "items_dropped": 0, "items_summarized": 0,
            "items_evicted": removed, "summary_action": "kept", "summary_tokens": None,
            "summary_error": None, "summarizer": None, "worker_host": "bench", "worker_pid": 1,
            "started_at": now, "finished_at": now, "summarize_seconds": 0.0, "attempts": 1,
            "hard_limit": 10**9, "target_limit": 10**8, "keep_recent": 4, "usage": None,
        })  # fmt: skip
    for seq in range(1, total + 1):
        gone = seq <= removed
        version = seq if gone or not removed else seq + 1
        records.append({
            "type": "item", "id": str(uuid.uuid4()), "session_id": "h", "seq": seq,
            "role": "user", "kind": "USER_MESSAGE", "priority": 50,
            "content": " ".join(["word"] * 20), "created_at": now, "estimated_tokens": 20,
            "added_version": version, "idempotency_key": None,
            "fate": "evicted" if gone else None, "removed_by": 1 if gone else None,
            "removed_version": total + 1 if gone else None, "version": 2 if gone else 1,
        })  # fmt: skip
    return records


def history_reads(sizes: list[int], calls: int) -> list[Row]:
    rows: list[Row] = []
    baseline: dict[str, float] = {}
    for removed in sizes:

        async def run(path: Path, removed: int = removed) -> dict[str, float]:
            async with MemoryStore.open(path) as store:
                await store.import_session(history_records(removed, 50))
                memory = await store.attach("h")
                out = {}
                for name, call in (
                    ("build_model_input", memory.build_model_input),
                    ("items", memory.items),
                ):
                    await call()
                    times = []
                    for _ in range(calls):
                        start = time.perf_counter()
                        await call()
                        times.append(time.perf_counter() - start)
                    out[name] = statistics.median(times)
                return out

        with tempfile.TemporaryDirectory() as tmp:
            medians = asyncio.run(run(Path(tmp) / "h.db"))
        for name, seconds in medians.items():
            baseline.setdefault(name, seconds)
            rows.append(
                (
                    f"{name}() with {removed:,} removed + 50 active",
                    seconds * 1000,
                    f"ms; {seconds / baseline[name]:.2f} x at 0 removed",
                )
            )
    return rows


# -- (5) compaction commit -------------------------------------------------------------------


def compaction_commit(rounds: int) -> list[Row]:
    async def commit_one(store: MemoryStore, session_id: str) -> float:
        memory = store.session(session_id, estimator=WordEstimator(), limits=NO_COMPACTION)
        for i in range(104):
            await memory.add("user", f"item {i} " + "word " * 20)
        db = store.database
        token = await compaction.acquire_lease(db, session_id, "bench", 60, time.time())
        assert token is not None
        snap = await reads.snapshot(db, session_id)
        assert snap is not None
        plan = plan_compaction(
            snap, memory.limits, WordEstimator().count, lambda p, i: "summary", force=True
        )
        assert len(plan.removed) == 100
        ctx = CommitContext(
            "bench", token, "manual", "bench", memory.limits, "bench", 1, datetime.now(UTC),
            0.0, 1,
        )  # fmt: skip
        start = time.perf_counter()
        await compaction.commit_compaction(db, plan, ctx)
        return time.perf_counter() - start

    async def memstore_commit(path: Path) -> float:
        async with MemoryStore.open(path) as store:
            await commit_one(store, "warm-up")  # steady state: statements already compiled
            return await commit_one(store, "c")

    async def raw_executemany(path: Path) -> float:
        import sqlite3

        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={SYNC}")
        conn.execute("CREATE TABLE items (id TEXT PRIMARY KEY, content TEXT, fate TEXT)")
        ids = [str(uuid.uuid4()) for _ in range(104)]
        conn.executemany("INSERT INTO items VALUES (?, ?, NULL)", [(i, "x " * 20) for i in ids])
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "UPDATE items SET fate = 'summarized' WHERE id = ? AND fate IS NULL",
            [(i,) for i in ids[:100]],
        )
        conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        conn.close()
        return elapsed

    async def raw_same_rows(path: Path) -> float:
        """The same 100 updates on memstore's own items table (its indexes), by raw sqlite3 on
        a connection set up as memstore's writer's (foreign keys on: ``removed_by`` checked)."""
        async with MemoryStore.open(path) as store:
            memory = store.session("c", estimator=WordEstimator(), limits=NO_COMPACTION)
            for i in range(104):
                await memory.add("user", f"item {i} " + "word " * 20)
        conn = connect(path, SETTINGS)
        ids = [row[0] for row in conn.execute("SELECT id FROM items ORDER BY seq LIMIT 100")]
        # The compaction row that removed_by points at, committed before the clock starts (the
        # foreign key wants it; only the updates are compared). Its values do not matter here.
        columns = [row[1] for row in conn.execute("PRAGMA table_info(compactions)")]
        report = dict.fromkeys(columns, 0) | {"session_id": "c", "number": 1}
        marks = ", ".join("?" * len(columns))
        conn.execute(
            f"INSERT INTO compactions ({', '.join(columns)}) VALUES ({marks})",
            [report[name] for name in columns],
        )
        start = time.perf_counter()
        conn.execute("BEGIN IMMEDIATE")
        conn.executemany(
            "UPDATE items SET fate = 'summarized', removed_by = 1, removed_version = 106, "
            "version = version + 1 WHERE session_id = 'c' AND id = ? AND fate IS NULL",
            [(i,) for i in ids],
        )
        conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        conn.close()
        return elapsed

    raw = timed(raw_executemany, rounds)
    same = timed(raw_same_rows, rounds)
    ms = timed(memstore_commit, rounds)
    return [
        ("raw executemany of 100 row updates, one tx", raw * 1000, "ms, baseline"),
        (
            "raw executemany, same rows in memstore's table",  # its indexes and foreign keys
            same * 1000,
            f"ms; {same / raw:.2f} x raw (the schema's share)",
        ),
        (
            "memstore commit_compaction removing 100 items",
            ms * 1000,
            f"ms; {ms / raw:.2f} x raw, {ms / same:.2f} x same rows",
        ),
    ]


# -- (6) CLI start-up ------------------------------------------------------------------------


def cli_startup(rounds: int) -> list[Row]:
    def run(argv: list[str]) -> float:
        times = []
        for _ in range(rounds):
            start = time.perf_counter()
            subprocess.run(argv, check=True, capture_output=True)
            times.append(time.perf_counter() - start)
        return statistics.median(times)

    with tempfile.TemporaryDirectory() as tmp:
        db = str(Path(tmp) / "cli.db")
        subprocess.run(
            [
                sys.executable,
                "-m",
                "memstore",
                "--db",
                db,
                "add",
                "s",
                "hello",
                "--estimator",
                "words",
            ],
            check=True,
            capture_output=True,
        )
        show = run([sys.executable, "-m", "memstore", "--db", db, "show", "s"])
    base = run([sys.executable, "-c", "import sqlalchemy"])
    return [
        ("python -c 'import sqlalchemy'", base * 1000, "ms, baseline"),
        ("memstore show SESSION", show * 1000, f"ms; {show / base:.2f} x baseline"),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    parser.add_argument(
        "--dir",
        help="where the databases go (default: the system's temporary directory); a RAM "
        "disk such as /dev/shm takes the fsync out and leaves the CPU cost per write",
    )
    parser.add_argument(
        "--appends",
        type=int,
        help="appends per round in (1) and (2) (default 300, --quick 100); a few thousand "
        "measure a WAL at its working size instead of a new one that grows with each commit",
    )
    args = parser.parse_args()
    if args.dir:
        tempfile.tempdir = args.dir  # every database of the run, memstore's and the peers'
    n, rounds = (100, 1) if args.quick else (300, 3)
    n = args.appends or n
    sizes = [0, 1_000, 10_000] if args.quick else [0, 10_000, 100_000]
    texts = messages(n)
    sections: list[tuple[str, list[Row]]] = []
    singles = single_appends(texts, max(rounds, 5))  # the noisiest section, and goal (1)
    sections.append((f"(1) {n} durable single appends, ~200 words (appends/s)", singles))
    sections.append(
        (
            "(2) concurrency in one process (appends/s)",
            concurrent_appends(messages(4 * n), rounds, singles[0][1]),
        )
    )
    sections.append(
        ("(3) 4 processes, one session (appends/s)", processes(100 if args.quick else 500, rounds))
    )
    sections.append(
        (
            "(4) reads against history (median latency)",
            history_reads(sizes, 20 if args.quick else 200),
        )
    )
    sections.append(("(5) committing a compaction", compaction_commit(max(rounds, 7))))
    sections.append(("(6) CLI start-up (median wall time)", cli_startup(3 if args.quick else 7)))
    print_sections(sections)


if __name__ == "__main__":
    main()
