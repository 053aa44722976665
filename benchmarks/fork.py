"""What a fork costs: the copy, the disk it takes, and a search across a parent and its forks.

    python benchmarks/fork.py [--forgotten 20000] [--active 50] [--forks 3] [--dir DIR]

On one SQLite file (memstore's settings), measured in one run:

1. ``store.fork(parent, new)`` of a session with ``--forgotten`` forgotten items and
   ``--active`` live ones (real chat turns from the Chit-Chat conversations), at the latest
   version and at the version half-way through, beside the session's export + import (what a
   user would do without forks);
2. the database's growth per fork (the copied rows and their search index);
3. ``store.search(question)`` across every session with ``--forks`` forks of the parent (each
   passage held ``--forks`` + 1 times, listed once) beside the same search with the parent
   alone.

Medians of a few rounds; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import sqlite3
import statistics
import tempfile
import time
import uuid
from pathlib import Path
from typing import Any

from search import chat_texts
from suite import history_records

from memstore import MemoryStore


async def timed(make: object) -> float:
    start = time.perf_counter()
    await make  # type: ignore[misc]
    return time.perf_counter() - start


def renamed(records: list[dict[str, Any]], new_id: str) -> list[dict[str, Any]]:
    """An export under another session id (items need ids of their own)."""
    out = []
    for record in records:
        if record["type"] == "session":
            out.append({**record, "id": new_id})
        elif record["type"] == "item":
            out.append({**record, "session_id": new_id, "id": str(uuid.uuid4())})
        else:
            out.append({**record, "session_id": new_id})
    return out


def used_bytes(path: Path) -> int:
    """Pages in use (not on the free list): what the data takes, whatever was freed before."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        free = conn.execute("PRAGMA freelist_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    return int((pages - free) * size)


async def run(forgotten: int, active: int, forks: int, directory: Path) -> None:
    texts, questions = chat_texts(forgotten + active)
    records = history_records(forgotten, active, texts)
    path = directory / "fork-bench.db"
    async with MemoryStore.open(path) as store:
        await store.import_session(records)
    before = used_bytes(path)  # measured first: later purges leave pages to reuse
    async with MemoryStore.open(path) as store:
        await store.fork("h", "grow")
    grown = used_bytes(path) - before
    async with MemoryStore.open(path) as store:
        await store.purge("grow")
        version = (await store.session_info("h")).version
        latest, halfway, copies = [], [], []
        for n in range(3):
            latest.append(await timed(store.fork("h", f"latest-{n}")))
            halfway.append(await timed(store.fork("h", f"half-{n}", at=version // 2)))
            start = time.perf_counter()
            exported = await store.export_session("h")
            await store.import_session(renamed(exported, f"copy-{n}"))
            copies.append(time.perf_counter() - start)
        for n in range(3):
            await store.purge(f"latest-{n}")
            await store.purge(f"half-{n}")
            await store.purge(f"copy-{n}")
    items = forgotten + active
    print(f"fork of a session of {items} items ({forgotten} forgotten), SQLite, medians of 3:")
    print(f"  fork at the latest version  {statistics.median(latest) * 1000:8.1f} ms")
    print(f"  fork half-way through       {statistics.median(halfway) * 1000:8.1f} ms")
    print(f"  export + import (a copy)    {statistics.median(copies) * 1000:8.1f} ms")
    print(f"  database growth per fork    {grown / 2**20:8.1f} MiB ({grown / items:.0f} B/item)")

    async with MemoryStore.open(path) as store:
        alone = [await timed(store.search(q, sessions=["h"])) for q in questions[:20]]
        expected = [h.item.id for h in await store.search(questions[0]) if h.item is not None]
        for n in range(forks):
            await store.fork("h", f"f{n}")
        shared = [await timed(store.search(q)) for q in questions[:20]]
        hits = await store.search(questions[0])
        seqs = [h.seq for h in hits]
    print(f"search, 20 questions, median: parent alone {statistics.median(alone) * 1000:.1f} ms,")
    print(
        f"  parent + {forks} forks holding every passage {statistics.median(shared) * 1000:.1f} "
        f"ms; {len(hits)} hits, {len(set(seqs))} distinct passages "
        f"({len(expected)} item hits for the parent alone)"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--forgotten", type=int, default=20_000)
    parser.add_argument("--active", type=int, default=50)
    parser.add_argument("--forks", type=int, default=3)
    parser.add_argument("--dir", type=Path, default=None)
    args = parser.parse_args()
    directory = args.dir or Path(tempfile.mkdtemp(prefix="memstore-fork-"))
    os.makedirs(directory, exist_ok=True)
    asyncio.run(run(args.forgotten, args.active, args.forks, directory))


if __name__ == "__main__":
    main()
