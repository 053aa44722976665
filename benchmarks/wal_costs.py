"""Where a durable append's time goes on this disk: the WAL's fsyncs and its checkpoints.

    python benchmarks/wal_costs.py [--appends 2000] [--rounds 3] [--pages 300,1000] [--dir DIR]

The figures behind goal (1)'s limit and memstore's checkpoint interval (``CHECKPOINT_FRAMES``
in ``memstore/db/sqlite_writer.py``), measured, not asserted:

1. ``fdatasync`` after writing one append's WAL frames (six pages) with plain file I/O, at the
   end of a file that grows (a new WAL), and over blocks the file already has (a WAL that has
   started over after a checkpoint). The file system journals a new size, not an overwrite.
2. memstore's own append statements, one transaction each, timed append by append
   (:func:`single_appends.memstore_sql_only`: memstore's connection settings and checkpoint
   interval, every parameter prepared beforehand): the median, the mean, the 99th percentile;
   the appends whose COMMIT also checkpointed (taken as those of three times the median or
   more: the checkpoint syncs the WAL, copies its pages into the database file and syncs
   that) and the appends right after them (which start the WAL over and sync its header
   first), with the share of the time both take. ``--pages`` repeats it at other checkpoint
   intervals (this process's ``CHECKPOINT_FRAMES``, and the WAL size limit that follows it).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import tempfile
import time
from pathlib import Path

from append_throughput import messages
from single_appends import Row, memstore_sql_only

from memstore.db import sqlite_writer

#: One append's WAL frames: about six pages of 4 KiB, each with its 24-byte frame header.
APPEND_BYTES = 6 * (4096 + 24)
#: A checkpoint's append takes at least this many times the median one.
SPIKE = 3


def fdatasync_costs(writes: int, rounds: int) -> list[Row]:
    """Median microseconds of one append-sized write plus ``fdatasync``: growing, overwriting."""
    grow: list[float] = []
    overwrite: list[float] = []
    payload = os.urandom(APPEND_BYTES)
    for _ in range(rounds):
        for into, prefill in ((grow, False), (overwrite, True)):
            with tempfile.TemporaryDirectory() as tmp:
                fd = os.open(Path(tmp) / "wal", os.O_RDWR | os.O_CREAT)
                try:
                    if prefill:  # blocks the file already has, as after a WAL starts over
                        os.pwrite(fd, bytes(writes * APPEND_BYTES), 0)
                        os.fsync(fd)
                    start = time.perf_counter()
                    for i in range(writes):
                        os.pwrite(fd, payload, i * APPEND_BYTES)
                        os.fdatasync(fd)
                    into.append((time.perf_counter() - start) / writes * 1e6)
                finally:
                    os.close(fd)
    growing, over = statistics.median(grow), statistics.median(overwrite)
    return [
        ("write + fdatasync, growing the file", growing, f"us; {growing / over:.2f} x overwrite"),
        ("write + fdatasync, over existing blocks", over, "us, baseline"),
    ]


def append_costs(texts: list[str], rounds: int, intervals: list[int]) -> list[list[Row]]:
    """memstore's append statements, append by append, at each checkpoint interval: medians
    over ``rounds`` new files each, the intervals interleaved round by round (a noisy minute
    then hits all of them alike)."""
    figures: dict[int, dict[str, list[float]]] = {pages: {} for pages in intervals}
    for _ in range(rounds):
        for pages in intervals:
            checkpointing_every(pages)
            seconds: list[float] = []
            with tempfile.TemporaryDirectory() as tmp:
                asyncio.run(memstore_sql_only(Path(tmp) / "bench.db", texts, seconds))
            for name, value in _one_file(seconds).items():
                figures[pages].setdefault(name, []).append(value)
    return [_rows({k: statistics.median(v) for k, v in figures[p].items()}) for p in intervals]


def _one_file(seconds: list[float]) -> dict[str, float]:
    median = statistics.median(seconds)
    checkpoints = [i for i, s in enumerate(seconds[:-1]) if s >= SPIKE * median]
    slow = [seconds[i] for i in checkpoints]
    after = [seconds[i + 1] for i in checkpoints]
    return {
        "median": median * 1e6,
        "mean": statistics.mean(seconds) * 1e6,
        "p99": sorted(seconds)[int(0.99 * len(seconds))] * 1e6,
        "every": len(seconds) / max(len(checkpoints), 1),
        "checkpoint": statistics.mean(slow) * 1e3 if slow else 0.0,
        "after": statistics.mean(after) * 1e6 if after else 0.0,
        "share": (sum(slow) + sum(after)) / sum(seconds) * 100,
    }


def _rows(f: dict[str, float]) -> list[Row]:
    return [
        ("median append", f["median"], "us, baseline"),
        ("mean append", f["mean"], f"us; {f['mean'] / f['median']:.2f} x median"),
        ("99th percentile", f["p99"], "us"),
        (
            f"appends of {SPIKE}x the median or more (checkpoints)",
            f["checkpoint"],
            f"ms each, one in {f['every']:.0f} appends",
        ),
        (
            "the append after each (the WAL starts over)",
            f["after"],
            f"us; {f['after'] / f['median']:.1f} x median; with the checkpoints "
            f"{f['share']:.0f}% of the time",
        ),
    ]


def checkpointing_every(pages: int) -> None:
    """Make this process's writer connections checkpoint every ``pages`` WAL pages.

    ``sqlite_writer.connect`` reads both settings when it opens a connection.
    """
    sqlite_writer.CHECKPOINT_FRAMES = pages
    sqlite_writer.WAL_SIZE_LIMIT = 2 * pages * 4096


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=2000, help="appends per round")
    parser.add_argument("--rounds", type=int, default=3, help="new database files per figure")
    parser.add_argument(
        "--pages",
        default=str(sqlite_writer.CHECKPOINT_FRAMES),
        help="checkpoint intervals to compare, in WAL pages, comma-separated "
        "(default: memstore's own)",
    )
    parser.add_argument("--dir", help="where the files go (default: the temporary directory)")
    args = parser.parse_args()
    if args.dir:
        tempfile.tempdir = args.dir
    texts = messages(args.appends)
    intervals = [int(pages) for pages in args.pages.split(",")]
    sections = [
        ("(1) one append's WAL frames, written and synced (median)", fdatasync_costs(300, 5))
    ]
    for pages, rows in zip(intervals, append_costs(texts, args.rounds, intervals), strict=True):
        title = (
            f"(2) {args.appends} appends of memstore's SQL alone, a checkpoint every {pages} WAL "
            f"pages (medians of {args.rounds} files)"
        )
        sections.append((title, rows))
    for title, rows in sections:
        print(f"\n{title}")
        for label, value, note in rows:
            print(f"  {label:<52} {value:>10,.1f}  {note}")


if __name__ == "__main__":
    main()
