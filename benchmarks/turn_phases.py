"""Where one agent turn's time goes in memstore: each phase of ``get_items()`` and
``add_items()`` timed in place, over the turns of :mod:`agent_turn`.

    python benchmarks/turn_phases.py [--history 200] [--turns 300]

The phases are timed by wrapping the functions that run them (a timer around each, in the
thread that runs it), so the wrappers add a few microseconds of their own. The hand-offs are
what is left of a call once its phases are taken out: queueing a job for a thread, the thread
waking, and the event loop waking with the answer. Turns that set off a compaction are left
out (their compaction is timed on its own line); medians throughout.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from agent_turn import LIMITS, tool_turns  # beside this file
from sqlalchemy.engine import Connection
from sqlalchemy.engine.default import DefaultDialect

from memstore import ExtractiveSummarizer, TiktokenEstimator
from memstore.adapters.agents_sdk import MemstoreSession
from memstore.db import append, reads, writer
from memstore.memory import compactor, model_input, session

#: (module, function name, phase) for every timed function.
TIMED = [
    (session, "new_items", "add: validate and count the items (event loop)"),
    (writer, "_commit_batch", "add: the writer's transaction, all of it"),
    (append, "append_items", "add:   the append's statements (bump, lookups, insert)"),
    (Connection, "exec_driver_sql", "add:   BEGIN IMMEDIATE"),
    (DefaultDialect, "do_commit", "add:   COMMIT (the fsync)"),
    (reads, "read_snapshot", "get: read the session row and active items (reader thread)"),
    (model_input, "bounded_view", "get: bound the view (event loop)"),
    (model_input, "build_input", "get: order, copy, check units, label (event loop)"),
    (compactor.Compactor, "run", "a compaction, when one runs (lease, summarizer, commit)"),
]


def _timer(fn: Callable[..., Any], into: list[float], phase: str) -> Callable[..., Any]:
    if asyncio.iscoroutinefunction(fn):

        async def timed_async(*args: Any, **kwargs: Any) -> Any:
            began = time.perf_counter()
            try:
                return await fn(*args, **kwargs)
            finally:
                into.append(time.perf_counter() - began)

        return timed_async

    def timed(*args: Any, **kwargs: Any) -> Any:
        if not _counts(phase, args):
            return fn(*args, **kwargs)
        began = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            into.append(time.perf_counter() - began)

    return timed


def _outer(phase: str, call: str) -> bool:
    """Whether ``phase`` is one of ``call``'s own (not one nested in another, indented)."""
    return phase.startswith(f"{call}: ") and not phase.startswith(f"{call}:  ")


def _counts(phase: str, args: tuple[Any, ...]) -> bool:
    """BEGIN and COMMIT are timed in the writer thread only, and BEGIN alone of the SQL the
    driver runs directly."""
    if "BEGIN" in phase:
        return args[1:2] == ("BEGIN IMMEDIATE",)
    if "COMMIT" in phase:
        return threading.current_thread().name == "memstore-sqlite-writer"
    return True


async def measure(history: int, turns: int) -> dict[str, float]:
    """Median seconds of each phase over ``turns`` turns after ``history`` items."""
    found: dict[str, list[float]] = {phase: [] for _, _, phase in TIMED}
    for owner, name, phase in TIMED:
        setattr(owner, name, _timer(getattr(owner, name), found[phase], phase))
    generated = tool_turns(history // 4 + turns)
    per_turn: dict[str, list[float]] = {phase: [] for phase in found}
    per_turn["get_items(), whole"] = []
    per_turn["add_items(), whole"] = []
    rest: dict[str, list[float]] = {"get": [], "add": []}
    with tempfile.TemporaryDirectory() as tmp:
        memory = MemstoreSession.from_url(
            "phases", Path(tmp) / "phases.db", limits=LIMITS,
            estimator=TiktokenEstimator(), summarizer=ExtractiveSummarizer(),
        )  # fmt: skip
        try:
            for items in generated[: history // 4]:
                await memory.add_items(items)
            for items in generated[history // 4 :]:
                for timings in found.values():
                    timings.clear()
                began = time.perf_counter()
                await memory.get_items()
                fetched = time.perf_counter()
                await memory.add_items(items)
                ended = time.perf_counter()
                compaction = found[TIMED[-1][2]]
                if compaction:
                    per_turn[TIMED[-1][2]].append(sum(compaction))
                    continue
                for phase, timings in found.items():
                    if timings:
                        per_turn[phase].append(sum(timings))
                per_turn["get_items(), whole"].append(fetched - began)
                per_turn["add_items(), whole"].append(ended - fetched)
                for call, whole in (("get", fetched - began), ("add", ended - fetched)):
                    parts = [sum(t) for p, t in found.items() if _outer(p, call)]
                    rest[call].append(whole - sum(parts))
        finally:
            await memory.close()
    medians = {phase: statistics.median(t) for phase, t in per_turn.items() if t}
    for call, left in rest.items():
        medians[f"{call}: hand-offs and the rest (the whole less its phases)"] = statistics.median(
            left
        )
    return medians


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--history", type=int, default=200)
    parser.add_argument("--turns", type=int, default=300)
    args = parser.parse_args()
    medians = asyncio.run(measure(args.history, args.turns))
    print(f"one turn after {args.history:,} items, medians of turns without a compaction")
    for phase, seconds in sorted(medians.items()):
        print(f"  {phase:<66} {seconds * 1e6:8.0f} us")


if __name__ == "__main__":
    main()
