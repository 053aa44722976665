"""What ``memstore replay`` costs as a session grows, and what the CLI's write check costs.

    python benchmarks/replay_scale.py [--sizes 6000,12000,20000,200000] [--dir DIR]

For each size N, one SQLite file holds a session of N active items (real chat turns from the
Chit-Chat corpus, as :mod:`search` reads them; the worst case for replay, which once recounted
every active item at every event), imported through ``store.import_session``. Measured:

1. ``memstore replay h`` as a user runs it (the installed executable, a process of its own,
   its table piped to /dev/null), and ``--json``;
2. ``replay()`` + ``verify()`` in process (the pure core alone);
3. SQLite's ``quick_check`` on the file: what every CLI write command now pays before it
   writes (``MemoryStore.open(verify=True)``), beside the file's size.

Wall-clock seconds of one run each; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from search import chat_texts
from suite import history_records

from memstore import MemoryStore
from memstore.core.replay import replay, verify
from memstore.db import audit


def memstore_command() -> list[str]:
    installed = Path(sys.executable).with_name("memstore")
    return [str(installed)] if installed.exists() else [sys.executable, "-m", "memstore"]


def timed_cli(db: Path, *args: str) -> float:
    start = time.perf_counter()
    done = subprocess.run(
        [*memstore_command(), "--db", str(db), *args],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
    )
    seconds = time.perf_counter() - start
    if done.returncode != 0:
        raise SystemExit(f"memstore {' '.join(args)} failed: {done.stderr}")
    return seconds


async def build(db: Path, size: int, texts: list[str]) -> None:
    async with MemoryStore.open(db) as store:
        await store.import_session(history_records(0, size, texts))


async def in_process(db: Path) -> tuple[float, float]:
    async with MemoryStore.open(db, read_only=True) as store:
        history = await store.history("h")
        start = time.perf_counter()
        events = list(replay(history))
        problems = verify(history, events)
        replayed = time.perf_counter() - start
        assert problems == [], problems
        start = time.perf_counter()
        assert await audit.quick_check(store.database) == []
        return replayed, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="6000,12000,20000,200000")
    parser.add_argument("--dir", default=None, help="Where the database files go (a temp dir).")
    args = parser.parse_args()
    texts, _questions = chat_texts(50_000)
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        print(f"{'items':>8} {'replay (cli)':>13} {'--json':>8} {'in process':>11} "
              f"{'quick_check':>12} {'file':>9}")  # fmt: skip
        for size in (int(n) for n in args.sizes.split(",")):
            db = Path(tmp) / f"replay-{size}.db"
            asyncio.run(build(db, size, texts))
            table = timed_cli(db, "replay", "h")
            as_json = timed_cli(db, "replay", "h", "--json")
            core, check = asyncio.run(in_process(db))
            megabytes = db.stat().st_size / 1e6
            print(f"{size:>8,} {table:>12.1f}s {as_json:>7.1f}s {core:>10.2f}s "
                  f"{check:>11.2f}s {megabytes:>7.0f}MB")  # fmt: skip


if __name__ == "__main__":
    main()
