"""Many processes, one session: memstore beside raw sqlite3 with a busy timeout, same run.

    python benchmarks/many_workers.py [--procs 4] [--n 500] [--words 30]

Each of ``--procs`` processes appends ``--n`` messages of ``--words`` words to ONE session,
starting together (a barrier). Raw sqlite3 does the same inserts into one table (WAL,
``BEGIN IMMEDIATE``, ``busy_timeout`` 30 s, the same ``synchronous`` as memstore). memstore
runs with limits low enough that the session compacts all the time (every ~17 appends), with
a summarizer that fails one call in ten and takes ``--delay`` seconds (default 0: the
figure is memstore's own cost), so compactions race appends and each other.
``--no-compaction`` measures appends alone.

Prints appends/s, errors, compaction retries and summarizer calls per committed summarizing
compaction. ``--db-url`` runs the memstore side on another backend (e.g. PostgreSQL).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import logging
import multiprocessing as mp
import random
import sqlite3
import tempfile
import time
import uuid
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from memstore import MemoryItem, MemoryLimits, MemoryStore, Settings, WordEstimator

LIMITS = MemoryLimits(hard=1500, target=900, keep_recent=4)
#: memstore's settings from the ``MEMSTORE_*`` variables, as memstore takes them; the raw
#: baseline runs at the same ``synchronous`` setting.
SETTINGS = Settings.from_env()
WORDS = [
    "trace",
    "span",
    "latency",
    "payment",
    "fraud",
    "query",
    "index",
    "rollback",
    "deploy",
    "cache",
    "retry",
]


def text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(words))


def create_raw_table(path: str) -> None:
    """The raw baseline's table, in WAL mode."""
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("CREATE TABLE items (id TEXT PRIMARY KEY, session_id TEXT, seq INT, content TEXT)")
    conn.close()


def raw_worker(path: str, n: int, words: int, barrier: Any, out: Any) -> None:
    rng = random.Random()
    conn = sqlite3.connect(path, isolation_level=None, timeout=30)
    conn.execute(f"PRAGMA synchronous={SETTINGS.sqlite_synchronous}")
    errors = 0
    barrier.wait()
    start = time.perf_counter()
    for seq in range(n):
        try:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute(
                "INSERT INTO items VALUES (?, ?, ?, ?)",
                (str(uuid.uuid4()), "shared", seq, text(rng, words)),
            )
            conn.execute("COMMIT")
        except sqlite3.Error:
            errors += 1
            if conn.in_transaction:
                conn.execute("ROLLBACK")
    out.put({"seconds": time.perf_counter() - start, "errors": errors})


class _Conflicts(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "re-planning" in record.getMessage():
            self.count += 1


def memstore_worker(
    url: str, n: int, words: int, delay: float, limits: MemoryLimits, barrier: Any, out: Any
) -> None:
    rng = random.Random()
    conflicts = _Conflicts()
    logging.getLogger("memstore").addHandler(conflicts)
    logging.getLogger("memstore").setLevel(logging.INFO)
    calls = 0

    async def summarizer(previous: str | None, items: Sequence[MemoryItem]) -> str:
        nonlocal calls
        calls += 1
        if delay:
            await asyncio.sleep(rng.uniform(delay / 2, delay * 1.5))
        if rng.random() < 0.1:
            raise RuntimeError("scripted failure")
        return f"summary of {len(items)} items"

    async def run() -> dict[str, Any]:
        errors = 0
        settings = dataclasses.replace(SETTINGS, busy_timeout_s=30)
        async with MemoryStore.open(url, settings=settings) as store:
            memory = store.session(
                "shared", limits=limits, estimator=WordEstimator(), summarizer=summarizer
            )
            await asyncio.get_running_loop().run_in_executor(None, barrier.wait)
            start = time.perf_counter()
            for _ in range(n):
                try:
                    await memory.add("user", text(rng, words))
                except Exception:
                    errors += 1
            return {"seconds": time.perf_counter() - start, "errors": errors}

    result = asyncio.run(run())
    result.update(calls=calls, conflicts=conflicts.count)
    out.put(result)


def run_processes(target: Any, args: tuple[Any, ...], procs: int) -> list[dict[str, Any]]:
    ctx = mp.get_context("fork")
    barrier, out = ctx.Barrier(procs), ctx.Queue()
    workers = [ctx.Process(target=target, args=(*args, barrier, out)) for _ in range(procs)]
    for w in workers:
        w.start()
    results = [out.get(timeout=600) for _ in workers]
    for w in workers:
        w.join()
    return results


async def create(url: str) -> None:
    async with MemoryStore.open(url):
        pass


async def summarize_reports(url: str) -> dict[str, Any]:
    async with MemoryStore.open(url) as store:
        reports = await (await store.attach("shared")).reports()
        violations = await store.check("shared")
        info = await store.session_info("shared")
    summarizing = [r for r in reports if r.summarizer is not None]
    return {
        "compactions": len(reports),
        "summarizing": len(summarizing),
        "retried": sum(r.attempts - 1 for r in reports),
        "violations": len(violations),
        "items": info.items_total,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--n", type=int, default=500)
    parser.add_argument("--words", type=int, default=30)
    parser.add_argument("--db-url", help="memstore database (default: a temporary SQLite file)")
    parser.add_argument(
        "--delay",
        type=float,
        default=0.0,
        help="mean seconds a summarizer call takes (a model would: 1-10 s)",
    )
    parser.add_argument(
        "--no-compaction",
        action="store_true",
        help="limits so high that nothing compacts: appends alone",
    )
    args = parser.parse_args()
    total = args.procs * args.n
    with tempfile.TemporaryDirectory() as tmp:
        raw_path = str(Path(tmp) / "raw.db")
        create_raw_table(raw_path)
        start = time.perf_counter()
        raw = run_processes(raw_worker, (raw_path, args.n, args.words), args.procs)
        raw_wall = time.perf_counter() - start

        url = args.db_url or str(Path(tmp) / "memstore.db")
        asyncio.run(create(url))  # migrate once, outside the timed part
        start = time.perf_counter()
        limits = LIMITS if not args.no_compaction else MemoryLimits(10**9, 10**8, 4)
        ms = run_processes(
            memstore_worker, (url, args.n, args.words, args.delay, limits), args.procs
        )
        ms_wall = time.perf_counter() - start
        facts = asyncio.run(summarize_reports(url))

    raw_rate = total / max(r["seconds"] for r in raw)
    ms_rate = total / max(r["seconds"] for r in ms)
    calls = sum(r["calls"] for r in ms)
    print(
        f"{args.procs} processes x {args.n} appends of {args.words} words on one session "
        f"(synchronous={SETTINGS.sqlite_synchronous})"
    )
    print(f"{'contender':<34} {'appends/s':>10} {'ratio':>7} {'errors':>7}")
    print(
        f"{'raw sqlite3 + busy_timeout':<34} {raw_rate:>10.0f} {1:>7.3f} "
        f"{sum(r['errors'] for r in raw):>7}"
    )
    print(
        f"{'memstore add (compacting)':<34} {ms_rate:>10.0f} {ms_rate / raw_rate:>7.3f} "
        f"{sum(r['errors'] for r in ms):>7}"
    )
    print(
        f"memstore: {facts['items']} items stored, {facts['compactions']} compactions "
        f"({facts['summarizing']} summarizing), {facts['retried']} committed after a retry, "
        f"{sum(r['conflicts'] for r in ms)} lost races re-planned, "
        f"{facts['violations']} invariant violations"
    )
    ratio = calls / facts["summarizing"] if facts["summarizing"] else float("nan")
    print(
        f"summarizer calls per committed summarizing compaction: {calls}/"
        f"{facts['summarizing']} = {ratio:.3f}"
    )
    print(f"(wall incl. start-up: raw {raw_wall:.1f}s, memstore {ms_wall:.1f}s)")


if __name__ == "__main__":
    main()
