"""One agent turn's memory cost, beside the Agents SDK's own ``SQLiteSession``.

What users feel of a session's speed is what the SDK's Runner asks of it once per turn:
``get_items()`` (the model input) and then ``add_items()`` with the turn's items, here a user
message, a function call, its output and the assistant's reply (generated tool-using turns,
:mod:`agent_tasks`). Both sessions start from the same history of N items (appended as turns,
so memstore's has compacted as it would have in use), then the timed turns alternate between
them:

* ``SQLiteSession`` at its defaults (WAL, ``synchronous=FULL``); after each timed turn its four
  items are popped, untimed, so every turn it serves starts from N items;
* ``MemstoreSession`` (tiktoken, the extractive summarizer, hard 4,000 / target 2,500 / keep
  8, memstore's ``MEMSTORE_*`` settings): its history only grows, and it compacts whenever a
  turn takes it past the hard limit, inside that turn's ``add_items``.

Each contender's figure is the median turn; the mean is printed beside it because memstore's
compactions (one every dozen or so turns here) land in the turns that set them off.

    python benchmarks/agent_turn.py [--sizes 200 2000 20000] [--turns 200] [--spans-off]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from agent_tasks import generate  # beside this file

from memstore import ExtractiveSummarizer, MemoryLimits, TiktokenEstimator
from memstore.adapters.agents_sdk import MemstoreSession

#: The limits of the measured sessions: an agent with a 4,000-token working memory.
LIMITS = MemoryLimits(hard=4000, target=2500, keep_recent=8)
#: The shape of a measured turn: what the Runner stores after one tool call and the reply.
TURN_SHAPE = ["message", "function_call", "function_call_output", "message"]
SDK = "SQLiteSession"
MEMSTORE = "MemstoreSession"
Items = list[dict[str, Any]]


def tool_turns(count: int) -> list[Items]:
    """``count`` distinct generated turns of :data:`TURN_SHAPE` (unique call ids)."""
    turns: list[Items] = []
    seed = 0
    while len(turns) < count:
        seed += 1
        for items, _priorities in generate(seed, 40).batches:
            if [item.get("type", "message") for item in items] == TURN_SHAPE:
                turns.append(items)
    return turns[:count]


@dataclass
class Turns:
    """One contender's timed turns at one history size (seconds)."""

    total: list[float] = field(default_factory=list)
    get: list[float] = field(default_factory=list)
    add: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.total)

    @property
    def mean(self) -> float:
        return statistics.mean(self.total)


async def _timed_turn(session: Any, items: Items, into: Turns) -> None:
    began = time.perf_counter()
    await session.get_items()
    fetched = time.perf_counter()
    await session.add_items(items)
    ended = time.perf_counter()
    into.get.append(fetched - began)
    into.add.append(ended - fetched)
    into.total.append(ended - began)


async def measure(history: int, turns: int, work_dir: str | None = None) -> dict[str, Turns]:
    """Both sessions at ``history`` items, ``turns`` timed turns each, alternating turn by
    turn (each goes first in every other pair), so that a noisy moment of a shared machine
    falls on both alike."""
    from agents import SQLiteSession

    generated = tool_turns(history // 4 + turns)
    built, fresh = generated[: history // 4], generated[history // 4 :]
    found = {SDK: Turns(), MEMSTORE: Turns()}
    with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
        sdk = SQLiteSession("turns", str(Path(tmp) / "sdk.db"))
        memstore = MemstoreSession.from_url(
            "turns",
            Path(tmp) / "memstore.db",
            limits=LIMITS,
            estimator=TiktokenEstimator(),
            summarizer=ExtractiveSummarizer(),
        )
        try:
            for items in built:
                await sdk.add_items(items)
                await memstore.add_items(items)
            for number, items in enumerate(fresh):
                for label in [SDK, MEMSTORE] if number % 2 == 0 else [MEMSTORE, SDK]:
                    if label == SDK:
                        await _timed_turn(sdk, items, found[SDK])
                        for _ in items:  # back to ``history`` items, untimed
                            await sdk.pop_item()
                    else:
                        await _timed_turn(memstore, items, found[MEMSTORE])
        finally:
            sdk.close()
            await memstore.close()
    return found


def run(
    sizes: Sequence[int], turns: int, work_dir: str | None = None
) -> dict[int, dict[str, Turns]]:
    """:func:`measure` at every size, each in a fresh event loop and fresh files."""
    return {size: asyncio.run(measure(size, turns, work_dir)) for size in sizes}


def table(results: dict[int, dict[str, Turns]]) -> list[str]:
    """The per-turn table, in Markdown: medians, their ratio, and the means."""
    lines = [
        "| history | `SQLiteSession` turn | `MemstoreSession` turn | memstore / SDK "
        "| means (memstore's with compactions) |",
        "|---|---|---|---|---|",
    ]
    for size, found in results.items():
        sdk, ms = found[SDK], found[MEMSTORE]
        lines.append(
            f"| {size:,} items | {sdk.median * 1e3:.2f} ms | {ms.median * 1e3:.2f} ms "
            f"| {ms.median / sdk.median:.2f} | {sdk.mean * 1e3:.2f} / {ms.mean * 1e3:.2f} ms |"
        )
    return lines


def split(results: dict[int, dict[str, Turns]]) -> list[str]:
    """Where each turn went: the medians of ``get_items()`` and of ``add_items()``."""
    lines = []
    for size, found in results.items():
        parts = [
            f"{label} get {statistics.median(t.get) * 1e3:.2f} + add "
            f"{statistics.median(t.add) * 1e3:.2f} ms"
            for label, t in found.items()
        ]
        lines.append(f"  {size:>6,} items: " + "; ".join(parts))
    return lines


def tracing_mode() -> str:
    """Import the OpenTelemetry API as an application that traces would (no provider, no
    exporter: memory operations then start spans that record nothing); what was found."""
    try:
        import opentelemetry.trace  # noqa: F401
    except ImportError:
        return "OpenTelemetry API not installed"
    return "OpenTelemetry API imported, no provider"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[200, 2000, 20000])
    parser.add_argument("--turns", type=int, default=200, help="timed turns per session")
    parser.add_argument("--dir", help="where the databases go (default: the temp directory)")
    parser.add_argument(
        "--spans-off",
        action="store_true",
        help="memstore's spans take the exit they take when no application imported the API",
    )
    args = parser.parse_args()
    mode = tracing_mode()
    if args.spans_off:  # what the spans cost, measured against none at all
        from memstore.memory import tracing

        tracing.API_MODULE = "opentelemetry.not-imported"
        mode += ", memstore's spans off"
    print(f"one agent turn, {mode}")
    results = run(args.sizes, args.turns, args.dir)
    print("\n".join(table(results)))
    print("\n".join(split(results)))


if __name__ == "__main__":
    main()
