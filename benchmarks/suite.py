"""The performance guard: memstore's hot paths beside their baselines, measured in one run.

    pip install '.[bench]'             # the peer: openai-agents (SQLiteSession)
    python benchmarks/suite.py [--quick] [--dir DIR]

Seven goals, each a ratio to a baseline measured in the same run on the same disk, at
memstore's settings (``MEMSTORE_*``; ``synchronous=FULL`` by default, and raw sqlite3 at the
same setting), with the OpenTelemetry API imported and no provider (as the Agents SDK's MCP
dependency imports it) and no embedder:

1. durable single appends (one ``add`` per commit, ~200-word messages) >= 0.8x the Agents
   SDK's ``SQLiteSession.add_items`` (at most 1.25 times its time);
2. 16 coroutines appending in one process >= 1.5x raw sqlite3 single inserts (group commit);
3. 4 processes x 500 appends on one session >= 0.5x raw sqlite3 with a busy timeout, 0 errors;
4. ``build_model_input()`` with 100k forgotten items <= 1.3x with none;
5. a compaction commit that removes 100 items <= 3x a raw ``executemany`` of 100 updates;
6. one agent turn (``get_items()`` then ``add_items()``: :mod:`agent_turn`) at 200 items of
   history <= 1.0x ``SQLiteSession``'s;
7. the same at 20,000 items <= 0.1x ``SQLiteSession``'s.

Rounds are interleaved (every contender once per round) and medians reported, so a noisy
moment of a shared machine hits every contender alike. Nothing here is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import tempfile
import time
import uuid
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import agent_turn
from many_workers import create, create_raw_table, memstore_worker, raw_worker, run_processes

from memstore import MemoryLimits, MemoryStore, Settings, TiktokenEstimator, WordEstimator
from memstore.core.policy import plan_compaction
from memstore.core.values import MemoryKind, MemoryRole, Priority
from memstore.db import compaction, lease, reads
from memstore.db.append import NewItem, append_items
from memstore.db.compaction import CommitContext
from memstore.db.connection import WRITE_OPTION, sqlite_engine
from memstore.db.search_index import index_pending

SETTINGS = Settings.from_env()
SYNC = SETTINGS.sqlite_synchronous
NO_COMPACTION = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)
SDK_SESSION = "Agents SDK SQLiteSession.add_items"
#: Where the databases go (``--dir``); ``None``: the system's temporary directory.
WORK_DIR: str | None = None
Row = tuple[str, float, str]
Timer = Callable[[Path], Awaitable[float]]


def messages(n: int, seed: int = 7) -> list[str]:
    """``n`` ~200-word messages of ordinary prose-like vocabulary (the same for everyone)."""
    rng = random.Random(seed)
    words = [
        "the",
        "checkout",
        "service",
        "timed",
        "out",
        "again",
        "after",
        "the",
        "deploy",
        "and",
        "we",
        "rolled",
        "back",
        "the",
        "payment",
        "change",
        "while",
        "the",
        "fraud",
        "team",
        "looked",
        "at",
        "the",
        "queue",
        "of",
        "retries",
    ]
    return [" ".join(rng.choice(words) for _ in range(200)) for _ in range(n)]


def fresh_path() -> tuple[tempfile.TemporaryDirectory[str], Path]:
    tmp = tempfile.TemporaryDirectory(dir=WORK_DIR)
    return tmp, Path(tmp.name) / "bench.db"


def interleaved(contenders: dict[str, Timer], rounds: int) -> dict[str, float]:
    """Median seconds of each contender on a fresh database, rounds interleaved."""
    seconds: dict[str, list[float]] = {label: [] for label in contenders}
    for _ in range(rounds):
        for label, run in contenders.items():
            tmp, path = fresh_path()
            with tmp:
                try:
                    seconds[label].append(asyncio.run(run(path)))
                except ImportError:
                    seconds[label] = []
                    break
    return {label: statistics.median(s) for label, s in seconds.items() if s}


# -- (1) and (2): appends in one process ---------------------------------------------------


def memstore_appends(texts: list[str], *, tiktoken: bool = False, writers: int = 1) -> Timer:
    async def run(path: Path) -> float:
        async with MemoryStore.open(path, settings=SETTINGS) as store:
            estimator = TiktokenEstimator() if tiktoken else WordEstimator()
            memory = store.session("b", estimator=estimator, limits=NO_COMPACTION)
            await memory.add("user", "warm-up")
            chunks = [texts[i::writers] for i in range(writers)]

            async def writer(chunk: list[str]) -> None:
                for text in chunk:
                    await memory.add("user", text)

            start = time.perf_counter()
            await asyncio.gather(*(writer(chunk) for chunk in chunks))
            return time.perf_counter() - start

    return run


def raw_single_inserts(texts: list[str]) -> Timer:
    """Raw sqlite3: WAL, one INSERT per ``BEGIN IMMEDIATE ... COMMIT``, memstore's setting."""

    async def run(path: Path) -> float:
        conn = sqlite3.connect(path, isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute(f"PRAGMA synchronous={SYNC}")
        conn.execute("CREATE TABLE items (id TEXT PRIMARY KEY, seq INTEGER, content TEXT)")
        start = time.perf_counter()
        for seq, text in enumerate(texts, 1):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO items VALUES (?, ?, ?)", (str(uuid.uuid4()), seq, text))
            conn.execute("COMMIT")
        elapsed = time.perf_counter() - start
        conn.close()
        return elapsed

    return run


def memstore_floor(texts: list[str]) -> Timer:
    """memstore's append statements on a connection of its own recipe, in a plain loop: no
    thread hand-off, no asyncio, no validation. What an append costs above this is the
    price of keeping SQLite off the event loop."""

    async def run(path: Path) -> float:
        async with MemoryStore.open(path, settings=SETTINGS) as store:
            await store.session("b", estimator=WordEstimator(), limits=NO_COMPACTION).add(
                "user", "warm-up"
            )
        engine = sqlite_engine(path, SETTINGS)
        with engine.connect().execution_options(**{WRITE_OPTION: True}) as conn:
            new = [
                NewItem(MemoryRole.USER, MemoryKind.USER_MESSAGE, Priority.NORMAL, t, 200)
                for t in texts
            ]
            start = time.perf_counter()
            for item in new:
                with conn.begin():
                    append_items(conn, "b", "words", NO_COMPACTION, [item])
            elapsed = time.perf_counter() - start
        engine.dispose()
        return elapsed

    return run


def sqlite_session(texts: list[str]) -> Timer:
    async def run(path: Path) -> float:
        from agents import SQLiteSession

        session = SQLiteSession("b", str(path))
        await session.add_items([{"role": "user", "content": "warm-up"}])
        start = time.perf_counter()
        for text in texts:
            await session.add_items([{"role": "user", "content": text}])
        elapsed = time.perf_counter() - start
        session.close()
        return elapsed

    return run


def appends(n: int, rounds: int) -> tuple[list[Row], dict[int, tuple[float, float]]]:
    texts = messages(n)
    contenders = {
        f"raw sqlite3 single inserts, synchronous={SYNC}": raw_single_inserts(texts),
        SDK_SESSION: sqlite_session(texts),
        "memstore append SQL, sync loop (floor)": memstore_floor(texts),
        "memstore add (words)": memstore_appends(texts),
        "memstore add (tiktoken)": memstore_appends(texts, tiktoken=True),
        "memstore add, 16 coroutines": memstore_appends(texts, writers=16),
    }
    rates = {label: n / s for label, s in interleaved(contenders, rounds).items()}
    raw = rates[next(iter(contenders))]
    rows = [(label, rate, f"appends/s, {rate / raw:.2f}x raw") for label, rate in rates.items()]
    goals = {2: (rates["memstore add, 16 coroutines"], raw)}
    if SDK_SESSION in rates:
        goals[1] = (rates["memstore add (words)"], rates[SDK_SESSION])
    else:
        rows.append((SDK_SESSION, float("nan"), "not installed: pip install '.[bench]'"))
    return rows, goals


# -- (3) 4 processes, one session ----------------------------------------------------------


def processes(per_proc: int, rounds: int) -> tuple[list[Row], tuple[float, float], int]:
    total = 4 * per_proc
    raw_rates: list[float] = []
    ms_rates: list[float] = []
    errors = {"raw": 0, "memstore": 0}
    for _ in range(rounds):
        with tempfile.TemporaryDirectory(dir=WORK_DIR) as tmp:
            raw_path = str(Path(tmp) / "raw.db")
            create_raw_table(raw_path)
            done = run_processes(raw_worker, (raw_path, per_proc, 30), 4)
            raw_rates.append(total / max(r["seconds"] for r in done))
            errors["raw"] += sum(r["errors"] for r in done)
            url = str(Path(tmp) / "ms.db")
            asyncio.run(create(url))
            done = run_processes(memstore_worker, (url, per_proc, 30, 0.0, NO_COMPACTION), 4)
            ms_rates.append(total / max(r["seconds"] for r in done))
            errors["memstore"] += sum(r["errors"] for r in done)
    raw, ms = statistics.median(raw_rates), statistics.median(ms_rates)
    rows = [
        (f"raw sqlite3 + busy_timeout, 4 x {per_proc}", raw, f"appends/s, {errors['raw']} errors"),
        (
            f"memstore add, 4 x {per_proc}, one session",
            ms,
            f"appends/s, {errors['memstore']} errors",
        ),
    ]
    return rows, (ms, raw), errors["memstore"]


# -- (4) the model input against a long history -------------------------------------------


def history_records(
    removed: int, active: int, texts: list[str] | None = None
) -> list[dict[str, Any]]:
    """An export of a session with ``removed`` forgotten and ``active`` live items (their
    ``texts`` in turn, if given; 20 times "word" otherwise), counted in words as an import
    recounts them: the forgotten ones appended first, then evicted by one compaction, then
    the live ones appended (a ledger ``memstore check`` and replay verify)."""
    now = datetime.now(UTC).isoformat()
    total = removed + active
    contents = [
        texts[(seq - 1) % len(texts)] if texts else " ".join(["word"] * 20)
        for seq in range(1, total + 1)
    ]
    costs = [len(content.split()) + 4 for content in contents]
    kept_tokens = sum(costs[removed:])
    records: list[dict[str, Any]] = [{
        "type": "session", "format": 1, "id": "h", "version": total + (1 if removed else 0),
        "estimator": "words", "last_seq": total, "active_items": active,
        "active_tokens": kept_tokens, "user_turns": 0, "compaction_count": 1 if removed else 0,
        "summary": None, "summary_tokens": None, "hard_limit": 10**9, "target_limit": 10**8,
        "keep_recent": 4, "lease_token": 0, "created_at": now, "updated_at": now,
    }]  # fmt: skip
    if removed:
        records.append({
            "type": "compaction", "session_id": "h", "number": 1, "snapshot_version": removed,
            "committed_version": removed + 1, "trigger": "manual",
            "before_tokens": sum(costs[:removed]), "after_tokens": 0,
            "items_dropped": 0, "items_summarized": 0,
            "items_evicted": removed, "summary_action": "kept", "summary_tokens": None,
            "summary_error": None, "summarizer": None, "worker_host": "bench", "worker_pid": 1,
            "started_at": now, "finished_at": now, "summarize_seconds": 0.0, "attempts": 1,
            "hard_limit": 10**9, "target_limit": 10**8, "keep_recent": 4, "usage": None,
        })  # fmt: skip
    for seq in range(1, total + 1):
        gone = seq <= removed
        records.append({
            "type": "item", "id": str(uuid.uuid4()), "session_id": "h", "seq": seq,
            "role": "user", "kind": "USER_MESSAGE", "priority": 50,
            "content": contents[seq - 1], "created_at": now,
            "estimated_tokens": costs[seq - 1] - 4,
            "added_version": seq if gone or not removed else seq + 1, "idempotency_key": None,
            "fate": "evicted" if gone else None, "removed_by": 1 if gone else None,
            "removed_version": removed + 1 if gone else None, "version": 2 if gone else 1,
        })  # fmt: skip
    return records


def model_input_reads(removed: int, calls: int) -> tuple[list[Row], tuple[float, float]]:
    async def median_call(path: Path, forgotten: int) -> float:
        async with MemoryStore.open(path) as store:
            await store.import_session(history_records(forgotten, 50))
            while await store.database.run_write(index_pending):  # what the writer does next
                pass
            memory = await store.attach("h")
            await memory.build_model_input()
            times = []
            for _ in range(calls):
                start = time.perf_counter()
                await memory.build_model_input()
                times.append(time.perf_counter() - start)
            return statistics.median(times)

    seconds = {}
    for forgotten in (0, removed):
        tmp, path = fresh_path()
        with tmp:
            seconds[forgotten] = asyncio.run(median_call(path, forgotten))
    rows = [
        (f"build_model_input(), {n:,} forgotten + 50 active", s * 1000, "ms")
        for n, s in seconds.items()
    ]
    return rows, (seconds[removed], seconds[0])


# -- (5) a compaction commit ----------------------------------------------------------------


async def compaction_commit_seconds(path: Path) -> float:
    async with MemoryStore.open(path, settings=SETTINGS) as store:
        for session_id in ("warm-up", "c"):  # the first warms the connection and statements
            memory = store.session(session_id, estimator=WordEstimator(), limits=NO_COMPACTION)
            for i in range(104):
                await memory.add("user", f"item {i} " + "word " * 20)
            db = store.database
            taken = await lease.acquire_lease(db, session_id, "bench", 60)
            snap = await reads.snapshot(db, session_id)
            assert isinstance(taken, lease.Lease) and snap is not None
            token = taken.token
            plan = plan_compaction(
                snap,
                memory.limits,
                WordEstimator().count,
                lambda p, i, **room: "summary",
                force=True,
            )
            assert len(plan.removed) == 100
            ctx = CommitContext(
                "bench", token, "manual", "bench", memory.limits, "bench", 1, datetime.now(UTC),
                0.0, 1,
            )  # fmt: skip
            start = time.perf_counter()
            await compaction.commit_compaction(db, plan, ctx)
            elapsed = time.perf_counter() - start
        return elapsed


async def raw_executemany_seconds(path: Path) -> float:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={SYNC}")
    conn.execute("CREATE TABLE items (id TEXT PRIMARY KEY, content TEXT, fate TEXT)")
    ids = [str(uuid.uuid4()) for _ in range(104)]
    conn.executemany("INSERT INTO items VALUES (?, ?, NULL)", [(i, "word " * 20) for i in ids])
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


def compaction_commit(rounds: int) -> tuple[list[Row], tuple[float, float]]:
    seconds = interleaved(
        {
            "raw executemany, 100 updates, one transaction": raw_executemany_seconds,
            "memstore commit_compaction removing 100 items": compaction_commit_seconds,
        },
        rounds,
    )
    rows = [(label, s * 1000, "ms") for label, s in seconds.items()]
    raw, ms = seconds.values()
    return rows, (ms, raw)


# -- the report -----------------------------------------------------------------------------

GOALS = {
    1: ("durable single appends vs SQLiteSession", ">=", 0.8),
    2: ("16 coroutines vs raw single inserts", ">=", 1.5),
    3: ("4 processes vs raw + busy_timeout, 0 errors", ">=", 0.5),
    4: ("build_model_input at 100k forgotten vs at 0", "<=", 1.3),
    5: ("100-item compaction commit vs raw executemany", "<=", 3.0),
    6: ("one agent turn at 200 items vs SQLiteSession", "<=", 1.0),
    7: ("one agent turn at 20,000 items vs SQLiteSession", "<=", 0.1),
}
#: The history sizes of goals (6) and (7), and of the per-turn table between them.
TURN_SIZES = (200, 2000, 20000)


def agent_turns(quick: bool) -> tuple[list[str], dict[int, tuple[float, float]]]:
    """The per-turn table (:mod:`agent_turn`) and goals (6) and (7): memstore's median turn
    against the SDK's, at the smallest and the largest history."""
    sizes = TURN_SIZES[:2] if quick else TURN_SIZES
    try:
        results = agent_turn.run(sizes, 60 if quick else 200, WORK_DIR)
    except ImportError:
        return [f"{SDK_SESSION}: not installed: pip install '.[bench]'"], {}
    goals = {}
    for number, size in ((6, TURN_SIZES[0]), (7, TURN_SIZES[-1])):
        if size in results:  # --quick leaves the largest history out
            found = results[size]
            goals[number] = (found[agent_turn.MEMSTORE].median, found[agent_turn.SDK].median)
    return agent_turn.table(results) + agent_turn.split(results), goals


def main() -> None:
    global WORK_DIR
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smaller sizes, fewer rounds")
    parser.add_argument("--dir", help="where the databases go (default: the temp directory)")
    args = parser.parse_args()
    WORK_DIR = args.dir
    quick = args.quick
    where = WORK_DIR or "tmp"
    tracing = agent_turn.tracing_mode()
    print(f"memstore performance guard, synchronous={SYNC}, {tracing}, databases in {where}")
    sections: list[tuple[str, list[Row]]] = []
    ratios: dict[int, tuple[float, float]] = {}

    rows, found = appends(100 if quick else 300, 2 if quick else 5)
    sections.append(("(1), (2) appends in one process", rows))
    ratios.update(found)
    rows, ratios[3], errors = processes(100 if quick else 500, 1 if quick else 3)
    sections.append(("(3) 4 processes, one session", rows))
    rows, ratios[4] = model_input_reads(10_000 if quick else 100_000, 20 if quick else 50)
    sections.append(("(4) reads against a long history", rows))
    rows, ratios[5] = compaction_commit(3 if quick else 7)
    sections.append(("(5) a compaction commit", rows))
    turn_lines, found_turns = agent_turns(quick)
    ratios.update(found_turns)

    for title, section in sections:
        print(f"\n{title}")
        for label, value, note in section:
            shown = "n/a" if value != value else f"{value:,.2f}"
            print(f"  {label:<52} {shown:>12}  {note}")
    print("\n(6), (7) one agent turn: get_items() then add_items(), medians")
    print("\n".join(turn_lines))
    print("\n| goal | measured | target | met? |\n|---|---|---|---|")
    for number, (what, sense, target) in GOALS.items():
        if number not in ratios:
            print(f"| ({number}) {what} | not measured | {sense} {target}x | - |")
            continue
        mine, base = ratios[number]
        ratio = mine / base
        met = ratio >= target if sense == ">=" else ratio <= target
        if number == 3:
            met = met and errors == 0
        print(
            f"| ({number}) {what} | {ratio:.2f}x | {sense} {target}x | {'yes' if met else 'no'} |"
        )


if __name__ == "__main__":
    main()
