"""Durable single appends per second: memstore beside raw sqlite3, measured in one run.

Each append is one transaction that is committed (and, with synchronous=FULL, fsynced)
before the next starts: what one agent worker does on every turn. Messages are ~200 words.

    python benchmarks/append_throughput.py [--n 300] [--rounds 3]

Prints the median appends/s of each contender over the rounds and its ratio to raw sqlite3
at the same ``synchronous`` setting. Peers (other libraries) are added by the performance
work; this script is the baseline they extend.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from memstore import MemoryLimits, MemoryStore, Settings, TiktokenEstimator, WordEstimator

WORDS = [
    "checkout",
    "latency",
    "payment",
    "service",
    "degraded",
    "trace",
    "span",
    "database",
    "index",
    "query",
    "plan",
    "rollback",
    "deploy",
    "fraud",
    "score",
    "lookup",
    "cache",
    "miss",
    "timeout",
    "retry",
    "queue",
    "worker",
    "node",
    "pod",
    "cluster",
    "alert",
]


def messages(n: int, seed: int = 7) -> list[str]:
    """``n`` pseudo-random ~200-word messages (fixed seed: every contender gets the same)."""
    rng = random.Random(seed)
    return [" ".join(rng.choice(WORDS) for _ in range(200)) for _ in range(n)]


def raw_sqlite(path: Path, texts: list[str], synchronous: str) -> float:
    """Raw sqlite3: WAL, one INSERT per committed transaction. Returns appends/s."""
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={synchronous}")
    conn.execute(
        "CREATE TABLE items (id TEXT PRIMARY KEY, session_id TEXT, seq INTEGER, "
        "role TEXT, content TEXT, created_at TEXT)"
    )
    start = time.perf_counter()
    for seq, text in enumerate(texts, 1):
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT INTO items VALUES (?, ?, ?, ?, ?, datetime('now'))",
            (str(uuid.uuid4()), "bench", seq, "user", text),
        )
        conn.execute("COMMIT")
    elapsed = time.perf_counter() - start
    conn.close()
    return len(texts) / elapsed


def memstore_appends(path: Path, texts: list[str], synchronous: str, tiktoken: bool) -> float:
    """memstore ``add`` (one transaction each), limits high enough that nothing compacts."""

    async def run() -> float:
        settings = Settings(sqlite_synchronous=synchronous)
        async with MemoryStore.open(path, settings=settings) as store:
            estimator = TiktokenEstimator() if tiktoken else WordEstimator()
            memory = store.session(
                "bench",
                estimator=estimator,
                limits=MemoryLimits(hard=10**9, target=10**8, keep_recent=4),
            )
            await memory.add("user", "warm-up")  # creates the session row
            start = time.perf_counter()
            for text in texts:
                await memory.add("user", text)
            return len(texts) / (time.perf_counter() - start)

    return asyncio.run(run())


def measure(name: str, fn: Callable[[Path], float], rounds: int) -> float:
    rates = []
    for _ in range(rounds):
        with tempfile.TemporaryDirectory() as tmp:
            rates.append(fn(Path(tmp) / "bench.db"))
    median = statistics.median(rates)
    print(f"  measured {name:<38} {median:10.0f} /s", file=sys.stderr)
    return median


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300, help="appends per round")
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    texts = messages(args.n)
    rows = []
    for sync in ("NORMAL", "FULL"):
        base = measure(
            f"raw sqlite3 (WAL, {sync})", lambda p, s=sync: raw_sqlite(p, texts, s), args.rounds
        )
        rows.append((f"raw sqlite3, WAL, synchronous={sync}", base, base))
        for tiktoken in (False, True):
            label = f"memstore add, {'tiktoken' if tiktoken else 'words'}, {sync}"
            rate = measure(
                label, lambda p, t=tiktoken, s=sync: memstore_appends(p, texts, s, t), args.rounds
            )
            rows.append((label, rate, base))
    print(f"\n{args.n} durable single appends of ~200-word messages, median of {args.rounds}")
    print(f"{'contender':<48} {'appends/s':>10} {'ratio':>7}")
    for label, rate, base in rows:
        print(f"{label:<48} {rate:>10.0f} {rate / base:>7.3f}")


if __name__ == "__main__":
    main()
