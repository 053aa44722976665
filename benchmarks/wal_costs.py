"""Where a durable append's time goes on this disk: the WAL's fsyncs and its checkpoints.

    python benchmarks/wal_costs.py [--appends 2000] [--rounds 5] [--pages 300,1000] [--dir DIR]

The figures behind goal (1)'s limit and memstore's checkpoint interval (``CHECKPOINT_FRAMES``
in ``memstore/db/sqlite_writer.py``), measured, not asserted:

1. ``fdatasync`` after writing one append's WAL frames (six pages) with plain file I/O, at the
   end of a file that grows (a new WAL), and over blocks the file already has (a WAL that has
   started over after a checkpoint). The file system journals a new size, not an overwrite.
2. memstore's own append statements, one transaction each, timed append by append
   (:func:`single_appends.memstore_sql_only`: memstore's connection settings and checkpoint
   interval, every parameter prepared beforehand): the median, the mean, the 99th percentile;
   the appends whose COMMIT checkpointed (it syncs the WAL, copies its pages into the database
   file and syncs that) and the appends right after them (they start the WAL over and sync its
   header first); and what those two cost above as many median appends, as a share of the
   run. ``--pages`` compares checkpoint intervals, interleaved round by round.

Which appends checkpointed is not guessed from their times (on a shared machine any append
can be slow): after each append's time is taken, the WAL header's salt-1, which changes each
time the WAL starts over, is read (:func:`timed_appends`), on a descriptor opened once (SQLite
takes its locks on the database and ``-shm`` files, never on ``-wal``). It must be the same
pass: the item ids are random, so the pages an append writes, and where the checkpoints fall,
vary from one file to the next. The read changed neither the median nor the mean measurably
(337 and 413 us without it, 340 and 399 us with it: 2,000 appends, 6 alternating files each).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import struct
import tempfile
import time
from pathlib import Path

from append_throughput import messages
from single_appends import Row, memstore_sql_only, print_sections

from memstore.db import sqlite_writer

#: One append's WAL frames: about six pages of 4 KiB, each with its 24-byte frame header.
APPEND_BYTES = 6 * (4096 + 24)
#: Where the WAL header keeps its salt-1, a big-endian 32-bit number that SQLite increments
#: each time the WAL starts over (https://sqlite.org/fileformat.html#walformat). The checkpoint
#: sequence number beside it changes too, but is counted by each connection for itself.
SALT_1_AT = 16


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


def timed_appends(texts: list[str]) -> tuple[list[float], list[int]]:
    """Append ``texts`` to a new file: each append's seconds, and the indexes of the appends
    that started the WAL over (the append before each is the one whose COMMIT checkpointed)."""
    seconds: list[float] = []
    salts: list[int] = []
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "bench.db"
        wal = f"{os.path.realpath(path)}-wal"
        fds: list[int] = []  # opened after the first COMMIT, which creates the WAL

        def observe(elapsed: float) -> None:  # memstore_sql_only leaves this out of the times
            seconds.append(elapsed)
            if not fds:
                fds.append(os.open(wal, os.O_RDONLY))
            header = os.pread(fds[0], 4, SALT_1_AT)
            salts.append(struct.unpack(">I", header)[0])

        try:
            asyncio.run(memstore_sql_only(path, texts, observe))
        finally:
            for fd in fds:
                os.close(fd)
    return seconds, restarts_of(salts)


def restarts_of(salts: list[int]) -> list[int]:
    """The appends that started the WAL over, given the WAL's salt-1 after each append: those
    after which it differs from the one before."""
    return [i for i in range(1, len(salts)) if salts[i] != salts[i - 1]]


def append_costs(texts: list[str], rounds: int, intervals: list[int]) -> list[list[Row]]:
    """memstore's append statements, append by append, at each checkpoint interval (in WAL
    pages): medians over ``rounds`` new files each. The intervals take turns, in reverse
    order every other round, so that a noisy minute hits all of them alike."""
    figures: dict[int, dict[str, list[float]]] = {pages: {} for pages in intervals}
    for round_ in range(rounds):
        for pages in intervals if round_ % 2 == 0 else intervals[::-1]:
            checkpointing_every(pages)
            for name, value in one_file(*timed_appends(texts)).items():
                figures[pages].setdefault(name, []).append(value)
    return [
        rows({name: statistics.median(values) for name, values in figures[pages].items()})
        for pages in intervals
    ]


def one_file(seconds: list[float], restarts: list[int]) -> dict[str, float]:
    """The figures of one file's appends (``seconds`` each), given the appends that started
    the WAL over: times in microseconds, the checkpoints' in milliseconds."""
    median = statistics.median(seconds)
    checkpoints = [seconds[i - 1] for i in restarts]
    after = [seconds[i] for i in restarts]
    above = sum(checkpoints) + sum(after) - 2 * len(restarts) * median
    nan = float("nan")
    return {
        "median": median * 1e6,
        "mean": statistics.mean(seconds) * 1e6,
        "p99": statistics.quantiles(seconds, n=100)[98] * 1e6,
        "checkpoints": len(restarts),
        "every": len(seconds) / len(restarts) if restarts else nan,
        "checkpoint": statistics.mean(checkpoints) * 1e3 if restarts else nan,
        "after": statistics.mean(after) * 1e6 if restarts else nan,
        "above": above / sum(seconds) * 100,
    }


def rows(f: dict[str, float]) -> list[Row]:
    """The printed rows of :func:`one_file`'s figures (one file's, or medians over files)."""
    if f["checkpoints"]:
        count = f"ms each; {f['checkpoints']:.0f}, one in {f['every']:.0f} appends"
    else:
        count = "none in this run"
    return [
        ("median append", f["median"], "us, baseline"),
        ("mean append", f["mean"], f"us; {f['mean'] / f['median']:.2f} x median"),
        ("99th percentile", f["p99"], "us"),
        ("appends whose COMMIT checkpointed", f["checkpoint"], count),
        (
            "the append after each (the WAL starts over)",
            f["after"],
            f"us; {f['after'] / f['median']:.1f} x median",
        ),
        ("both, above as many median appends", f["above"], "% of the run"),
    ]


def checkpointing_every(pages: int) -> None:
    """Make this process's writer connections checkpoint every ``pages`` WAL pages, with the
    WAL size limit that ``sqlite_writer`` derives from it (``connect`` reads both)."""
    sqlite_writer.CHECKPOINT_FRAMES = pages
    sqlite_writer.WAL_SIZE_LIMIT = 2 * pages * 4096


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--appends", type=int, default=2000, help="appends per file")
    parser.add_argument("--rounds", type=int, default=5, help="new database files per figure")
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
    for pages, section in zip(intervals, append_costs(texts, args.rounds, intervals), strict=True):
        title = (
            f"(2) {args.appends} appends of memstore's SQL alone, a checkpoint every {pages} WAL "
            f"pages (medians of {args.rounds} files)"
        )
        sections.append((title, section))
    print_sections(sections)


if __name__ == "__main__":
    main()
