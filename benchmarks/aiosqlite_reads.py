"""``build_model_input()`` with its reads on SQLAlchemy's async engine over aiosqlite, beside
memstore's reader threads, in one run on one file.

    python benchmarks/aiosqlite_reads.py [--calls 200] [--turns 600]

One long Chit-Chat conversation (the chitchat-dataset wheel, see fidelity.py) is appended
through memstore with the store's default limits, so it compacts and leaves a history to
recall from. Then two stores read the same session of the same file:

* **reader threads**: the store opened by path (each read one call into memstore's reader
  threads, the SQL run there);
* **aiosqlite**: the store opened with ``engine=create_async_engine("sqlite+aiosqlite:///...")``
  (each read run by SQLAlchemy's async engine through ``run_sync``: every statement and fetch
  is a trip to aiosqlite's thread and back to the event loop).

Each round calls ``build_model_input()`` once on each, in turn first (interleaved, so a
noisy moment of a shared machine hits both alike), without and with recall. A block of
rounds gives one median per path and their ratio; several blocks show how much that ratio
moves on a busy machine, and the median of the blocks' ratios decides whether aiosqlite may
replace the reader threads (at most 1.2x).
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import statistics
import tempfile
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from conversations import DEFAULT_CACHE, chitchat_conversations, fetch_chitchat
from sqlalchemy.ext.asyncio import create_async_engine

from memstore import MemoryStore

#: The ratio at which reads through aiosqlite would replace the reader threads.
GOAL = 1.2


async def fill(path: Path, turns: list[tuple[str, str]]) -> None:
    """Append the conversation through memstore (the store's default limits and counter)."""
    async with MemoryStore.open(path) as store:
        memory = store.session("talk")
        for role, text in turns:
            await memory.add(role, text)


async def medians(path: Path, calls: int, recall: bool) -> dict[str, float]:
    """Median seconds of one ``build_model_input()`` through each read path (one block)."""
    engine = create_async_engine(f"sqlite+aiosqlite:///{path}")
    try:
        async with (
            MemoryStore.open(path) as by_path,
            MemoryStore.open(engine=engine) as by_engine,
        ):
            budget = 400 if recall else None
            calls_of: dict[str, Callable[[], Awaitable[Any]]] = {
                "reader threads": (
                    await by_path.attach("talk", recall_budget=budget)
                ).build_model_input,
                "aiosqlite": (
                    await by_engine.attach("talk", recall_budget=budget)
                ).build_model_input,
            }
            times: dict[str, list[float]] = {name: [] for name in calls_of}
            orders = itertools.cycle([list(calls_of.items()), list(calls_of.items())[::-1]])
            for round_, order in zip(range(calls + 10), orders, strict=False):
                for name, call in order:
                    start = time.perf_counter()
                    await call()
                    if round_ >= 10:  # the first rounds warm caches and pools
                        times[name].append(time.perf_counter() - start)
            return {name: statistics.median(seconds) for name, seconds in times.items()}
    finally:
        await engine.dispose()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=100, help="rounds per block")
    parser.add_argument("--blocks", type=int, default=5)
    parser.add_argument("--turns", type=int, default=600)
    parser.add_argument("--cache", type=Path, default=DEFAULT_CACHE / "memstore-benchmarks")
    args = parser.parse_args()
    (talk,) = chitchat_conversations(
        fetch_chitchat(args.cache), count=1, min_sessions=10, max_turns=args.turns, questions=1
    )
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "reads.db"
        asyncio.run(fill(path, talk.turns))
        print(
            f"{len(talk.turns)} Chit-Chat turns appended; {args.blocks} blocks of "
            f"{args.calls} calls on each path, medians"
        )
        for recall in (False, True):
            label = "with recall" if recall else "no recall"
            ratios = []
            for _ in range(args.blocks):
                found = asyncio.run(medians(path, args.calls, recall))
                ratios.append(found["aiosqlite"] / found["reader threads"])
                threads, aio = found["reader threads"] * 1000, found["aiosqlite"] * 1000
                print(f"  {label}: reader threads {threads:.3f} ms, aiosqlite {aio:.3f} ms: "
                      f"{ratios[-1]:.2f}x")  # fmt: skip
            ratio = statistics.median(ratios)
            verdict = "replaces" if ratio <= GOAL else "does not replace"
            print(f"aiosqlite / reader threads ({label}), median of blocks: {ratio:.2f}x "
                  f"(goal <= {GOAL}x: aiosqlite {verdict} the reader threads)")  # fmt: skip


if __name__ == "__main__":
    main()
