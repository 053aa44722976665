"""What an import costs now that it indexes what it wrote, beside leaving that to the writer.

    python benchmarks/import_index.py [--sizes 50000,200000] [--searches 10] [--dir DIR]

For each size N, a session of N chat turns (the Chit-Chat corpus, as :mod:`search` reads it)
is imported into a fresh SQLite file twice, one way after the other:

* as ``memstore import`` does now: the rows and their search index in one transaction;
* as it did before (``index_tail`` switched off): the rows only, the writer indexing 500 an
  idle second afterwards.

Then, right after the import returned: the items not in the index (what ``memstore check``
shows as lag) and the median time of a search of the session for a question from the corpus.
Wall-clock seconds; nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import statistics
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

from search import chat_texts
from suite import SETTINGS, history_records

import memstore.db.transfer as transfer
from memstore import MemoryStore
from memstore.db.audit import index_lag


@contextlib.contextmanager
def indexing(on: bool) -> Iterator[None]:
    """The import as it is (``on``), or as it was: no indexing of what it wrote."""
    index_tail = transfer.index_tail
    if not on:
        transfer.index_tail = lambda conn: None  # type: ignore[assignment]
    try:
        yield
    finally:
        transfer.index_tail = index_tail


async def imported(
    path: Path, size: int, texts: list[str], questions: list[str], searches: int
) -> tuple[float, int, float]:
    records = history_records(0, size, texts)
    async with MemoryStore.open(path, settings=SETTINGS) as store:
        start = time.perf_counter()
        await store.import_session(records)
        seconds = time.perf_counter() - start
        lag = await index_lag(store.database)
        samples = []
        for question in questions[:searches]:
            start = time.perf_counter()
            await store.search(question, sessions=["h"])
            samples.append(time.perf_counter() - start)
        return seconds, lag, statistics.median(samples)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", default="50000,200000")
    parser.add_argument("--searches", type=int, default=10)
    parser.add_argument("--dir", default=None, help="where the databases go")
    args = parser.parse_args()
    sizes = [int(size) for size in args.sizes.split(",")]
    texts, questions = chat_texts(max(sizes))
    print(f"{'items':>8} {'import':>16} {'seconds':>8} {'lag after':>10} {'a search':>10}")
    for size in sizes:
        for on in (True, False):
            with tempfile.TemporaryDirectory(dir=args.dir) as scratch, indexing(on):
                seconds, lag, search = asyncio.run(
                    imported(Path(scratch) / "i.db", size, texts, questions, args.searches)
                )
            way = "indexes its rows" if on else "leaves the index"
            print(f"{size:>8,} {way:>16} {seconds:>7.2f}s {lag:>10,} {search * 1000:>8.1f}ms")


if __name__ == "__main__":
    main()
