"""What search and recall cost: a session with 100k forgotten items, other sessions, appends.

    python benchmarks/search.py [--forgotten 100000] [--calls 30] [--appends 2000] [--dir DIR]

On one SQLite file (memstore's settings, ``synchronous=FULL`` by default), measured in one run:

1. ``memory.search(question)`` on a session of 100k forgotten items + 50 active ones, beside
   an unindexed ``LIKE`` scan for the same words (raw sqlite3): every match, as ranking them
   would need, and only the first 10 found, unranked (the least a search without an index
   can do);
2. ``build_model_input(recall=question)`` beside ``build_model_input()`` on that session;
3. what recalling from a user's other sessions will cost on every model input: a search of
   the active items of 10 and of 100 other sessions (50 chat turns each), while none of them
   is indexed yet (the writer had no pause since they were written: every one is scanned)
   and once the writer has indexed them;
4. durable appends per second as they are (no index work) and with migration 0008's insert
   trigger put back (every append indexing its item), the same messages, rounds interleaved;
5. the index's size on disk (its FTS5 tables' pages, from ``dbstat``) beside the items'.

The items' texts are real people's chat turns (the Chit-Chat Challenge conversations,
fetched from PyPI by :mod:`conversations`), so word frequencies are those of conversation; the
queries are questions from the same conversations. Medians; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sqlite3
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

import conversations
from suite import SETTINGS, history_records

from memstore import MemoryLimits, MemoryStore, TiktokenEstimator
from memstore.core.search_terms import search_terms
from memstore.db import writer
from memstore.db.audit import index_lag
from memstore.db.search import FTS_TABLES
from memstore.db.search_index import index_pending
from memstore.render.recall import RECALL_CANDIDATES

NO_COMPACTION = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)
WORK_DIR: str | None = None


def chat_texts(limit: int) -> tuple[list[str], list[str]]:
    """Up to ``limit`` chat turns, and questions asked in them."""
    cache = conversations.DEFAULT_CACHE / "memstore-benchmarks"
    data = json.loads(conversations.fetch_chitchat(cache).read_text())
    texts: list[str] = []
    for talk in data.values():
        for turn in talk["messages"]:
            text = " ".join(m["text"].strip() for m in turn if m["text"].strip())
            if text:
                texts.append(text)
    questions = [t for t in texts if t.endswith("?") and len(search_terms(t)) >= 2]
    return texts[:limit], questions[:: max(1, len(questions) // 200)][:200]


def median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


async def timed(calls: int, run) -> float:  # type: ignore[no-untyped-def]
    samples = []
    for _ in range(calls):
        start = time.perf_counter()
        await run()
        samples.append(time.perf_counter() - start)
    return median_ms(samples)


def like_scan_ms(path: Path, questions: list[str], *, first: int | None) -> float:
    """The same words, unindexed: ``content LIKE '%word%' OR ...`` over the forgotten items,
    every match (what ranking them needs) or only the ``first`` found (unranked)."""
    samples = []
    with contextlib.closing(sqlite3.connect(path)) as conn:
        for question in questions:
            terms = search_terms(question)
            where = " OR ".join("content LIKE ?" for _ in terms)
            sql = (
                f"SELECT id, content FROM items WHERE session_id = 'h' AND fate IS NOT NULL "
                f"AND ({where})" + ("" if first is None else f" LIMIT {first}")
            )
            start = time.perf_counter()
            conn.execute(sql, [f"%{t}%" for t in terms]).fetchall()
            samples.append(time.perf_counter() - start)
    return median_ms(samples)


def index_bytes(path: Path) -> tuple[int, int]:
    """Bytes of the search index's tables and of the items table (with its indexes)."""
    with contextlib.closing(sqlite3.connect(path)) as conn:
        rows = conn.execute("SELECT name, sum(pgsize) FROM dbstat GROUP BY name").fetchall()
    sizes = dict(rows)
    index = sum(size for name, size in sizes.items() if name.startswith(tuple(FTS_TABLES)))
    items = sum(size for name, size in sizes.items() if name == "items" or name.startswith(
        ("ix_items", "uq_items", "sqlite_autoindex_items")))  # fmt: skip
    return index, items


async def reads(
    path: Path, forgotten: int, calls: int, texts: list[str], questions: list[str]
) -> tuple[float, float, float]:
    async with MemoryStore.open(path, settings=SETTINGS) as store:
        await store.import_session(history_records(forgotten, 50, texts))
        while await store.database.run_write(index_pending):  # what the writer does next
            pass
        memory = await store.attach("h")
        asked = iter(questions * (calls // len(questions) + 2))
        await memory.build_model_input()
        search = await timed(calls, lambda: memory.search(next(asked)))
        plain = await timed(calls, lambda: memory.build_model_input())
        recall = await timed(calls, lambda: memory.build_model_input(recall=next(asked)))
    return search, plain, recall


def other_sessions(count: int, active: int, texts: list[str]) -> list[list[dict[str, Any]]]:
    """Exports of ``count`` sessions of ``active`` chat turns each, all in working memory."""
    exports = []
    for n in range(count):
        chunk = texts[n * active : (n + 1) * active]
        records = history_records(0, active, chunk)
        for record in records:
            record["id" if record["type"] == "session" else "session_id"] = f"other-{n}"
        exports.append(records)
    return exports


async def search_others(store: MemoryStore, count: int, calls: int, questions: list[str]) -> float:
    """Median ms of a recall-sized search of the first ``count`` other sessions."""
    others = [f"other-{n}" for n in range(count)]
    asked = iter(questions * (calls // len(questions) + 1))
    return await timed(
        calls, lambda: store.search(next(asked), sessions=others, limit=RECALL_CANDIDATES)
    )


async def cross_session(
    folder: Path, counts: tuple[int, ...], calls: int, texts: list[str], questions: list[str]
) -> list[tuple[int, float, float]]:
    """Per number of other sessions (each in a database of its own): a search of their
    active items (ms), none of them indexed yet, then all indexed."""
    found = []
    # The writer would index the imported sessions at its first pause: not before we measured.
    writer.MAINTENANCE_INTERVAL_S, interval = 3600.0, writer.MAINTENANCE_INTERVAL_S
    for count in counts:
        async with MemoryStore.open(folder / f"others-{count}.db", settings=SETTINGS) as store:
            for records in other_sessions(count, 50, texts):
                await store.import_session(records)  # imported rows are not indexed yet
            assert await index_lag(store.database) == 50 * count
            unindexed = await search_others(store, count, calls, questions)
            while await store.database.run_write(index_pending):
                pass
            found.append((count, unindexed, await search_others(store, count, calls, questions)))
    writer.MAINTENANCE_INTERVAL_S = interval
    return found


#: Migration 0008's insert trigger: every append indexed its item.
_INDEXING_TRIGGER = (
    "CREATE TRIGGER items_fts_insert AFTER INSERT ON items BEGIN "
    "INSERT INTO items_fts(rowid, content) VALUES (new.rowid, new.content); END"
)


async def appends_per_second(path: Path, texts: list[str], *, indexing: bool) -> float:
    async with MemoryStore.open(path, settings=SETTINGS) as store:
        if indexing:
            with contextlib.closing(sqlite3.connect(path)) as raw:
                raw.execute(_INDEXING_TRIGGER)
                raw.execute("UPDATE items_fts_watermark SET upto = 9223372036854775807")
        memory = store.session("b", estimator=TiktokenEstimator(), limits=NO_COMPACTION)
        await memory.add("user", "warm-up")
        start = time.perf_counter()
        for text in texts:
            await memory.add("user", text)
        return len(texts) / (time.perf_counter() - start)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--forgotten", type=int, default=100_000)
    parser.add_argument("--calls", type=int, default=30)
    parser.add_argument("--appends", type=int, default=2_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the databases go")
    args = parser.parse_args()
    texts, questions = chat_texts(args.forgotten)
    with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
        path = Path(scratch) / "history.db"
        search, plain, recall = asyncio.run(
            reads(path, args.forgotten, args.calls, texts, questions)
        )
        like_all = like_scan_ms(path, questions[: args.calls], first=None)
        like_ten = like_scan_ms(path, questions[: args.calls], first=10)
        index, items = index_bytes(path)
        others = asyncio.run(cross_session(Path(scratch), (10, 100), args.calls, texts, questions))
    rates: dict[bool, list[float]] = {True: [], False: []}
    for _ in range(args.rounds):
        for indexing in (False, True):
            with tempfile.TemporaryDirectory(dir=args.dir) as scratch:
                rates[indexing].append(
                    asyncio.run(
                        appends_per_second(
                            Path(scratch) / "a.db", texts[: args.appends], indexing=indexing
                        )
                    )
                )
    now, indexing = (statistics.median(rates[flag]) for flag in (False, True))
    n = f"{args.forgotten:,}"
    print(f"session of {n} forgotten + 50 active items (chat turns), medians of {args.calls}:")
    print(f"  memory.search(question)                    {search:8.2f} ms")
    print(f"  LIKE scan for the same words, all matches  {like_all:8.2f} ms")
    print(f"  LIKE scan, the first 10 found (unranked)   {like_ten:8.2f} ms")
    print(f"  build_model_input()                        {plain:8.2f} ms")
    print(f"  build_model_input(recall=question)         {recall:8.2f} ms")
    print("a search of other sessions' active items (50 chat turns each), for recall:")
    for count, unindexed, indexed in others:
        print(f"  {count:3} sessions, none indexed yet   {unindexed:8.2f} ms")
        print(f"  {count:3} sessions, indexed            {indexed:8.2f} ms")
    print(f"durable appends, {args.appends:,} chat turns, median of {args.rounds} rounds:")
    print(f"  as they are (no index work)       {now:8.0f} /s")
    print(f"  each indexing its item (0008)     {indexing:8.0f} /s   ({now / indexing:.2f}x)")
    print(f"on disk: index {index / 2**20:.1f} MiB beside the items' {items / 2**20:.1f} MiB")


if __name__ == "__main__":
    main()
