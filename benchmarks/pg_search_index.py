"""PostgreSQL: what indexing every item costs appends, and what not indexing active items would
cost searches (the measurement behind keeping PostgreSQL's index as it is).

    python benchmarks/pg_search_index.py --postgres postgresql+asyncpg://USER@HOST:PORT/DB

On the given database (its public schema is dropped and recreated: point it at a scratch
database), measured in one run:

1. durable single appends of chat turns with the items' GIN index partial (forgotten items
   only, so an append's row is not indexed: the alternative considered) and as it is
   (every row indexed), rounds interleaved;
2. a recall-sized search (40 hits) of the active items of 10 and of 100 other sessions (50
   chat turns each) with that partial index, which leaves PostgreSQL to read and match them
   row by row, beside the same search with the index as it is.

Texts and questions are the Chit-Chat Challenge's, as in ``search.py``. Medians; nothing is
asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from backends import reset
from search import chat_texts, other_sessions, search_others
from sqlalchemy import text

from memstore import MemoryLimits, MemoryStore, WordEstimator

NO_COMPACTION = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)
_FULL_INDEX = (
    "CREATE INDEX ix_items_search ON items USING gin (to_tsvector('english'::regconfig, content))"
)
_PARTIAL_INDEX = _FULL_INDEX + " WHERE fate IS NOT NULL"


async def set_index(store: MemoryStore, ddl: str) -> None:
    def swap(conn: object) -> None:
        conn.execute(text("DROP INDEX ix_items_search"))  # type: ignore[attr-defined]
        conn.execute(text(ddl))  # type: ignore[attr-defined]

    await store.database.run_write(swap)


async def appends_per_second(url: str, texts: list[str], ddl: str) -> float:
    await reset(url)
    async with MemoryStore.open(url) as store:
        await set_index(store, ddl)
        memory = store.session("b", estimator=WordEstimator(), limits=NO_COMPACTION)
        await memory.add("user", "warm-up")
        start = time.perf_counter()
        for turn in texts:
            await memory.add("user", turn)
        return len(texts) / (time.perf_counter() - start)


async def searches(
    url: str, texts: list[str], questions: list[str], calls: int
) -> list[tuple[int, float, float]]:
    found = []
    for count in (10, 100):
        await reset(url)
        async with MemoryStore.open(url) as store:
            for records in other_sessions(count, 50, texts):
                await store.import_session(records)
            indexed = await search_others(store, count, calls, questions)
            await set_index(store, _PARTIAL_INDEX)
            read = await search_others(store, count, calls, questions)
            found.append((count, read, indexed))
    return found


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", required=True, help="a scratch database's URL")
    parser.add_argument("--appends", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--calls", type=int, default=30)
    args = parser.parse_args()
    texts, questions = chat_texts(5_000)
    rates: dict[str, list[float]] = {"partial": [], "full": []}
    for _ in range(args.rounds):
        for label, ddl in (("partial", _PARTIAL_INDEX), ("full", _FULL_INDEX)):
            rate = asyncio.run(appends_per_second(args.postgres, texts[: args.appends], ddl))
            rates[label].append(rate)
    partial, full = (statistics.median(rates[label]) for label in ("partial", "full"))
    found = asyncio.run(searches(args.postgres, texts, questions, args.calls))
    print(f"durable appends, {args.appends} chat turns, median of {args.rounds} rounds:")
    print(f"  every row indexed (as it is)        {full:8.0f} /s")
    print(f"  forgotten items only (partial)      {partial:8.0f} /s   ({partial / full:.2f}x)")
    print("a search of other sessions' active items (50 chat turns each), for recall:")
    for count, read, indexed in found:
        print(f"  {count:3} sessions, every row indexed      {indexed:8.2f} ms")
        slower = read / indexed
        print(f"  {count:3} sessions, read row by row        {read:8.2f} ms   ({slower:.1f}x)")


if __name__ == "__main__":
    main()
