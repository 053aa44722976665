"""A worker process for the multi-process tests: appends to one session, compacting as needed.

    python concurrency_worker.py DB SESSION NAME N [--fail-rate R] [--slow S] [--calls FILE]
                                 [--acks FILE] [--lease S] [--seed K] [--stale-summary]

Each acknowledged append is written to the ``--acks`` file (one ``content`` per line) *after*
``add`` returned, so the file lists exactly what the store promised to keep. Each summarizer
call appends one line to ``--calls``. At the end the worker prints a JSON line with its
counters. ``MEMSTORE_FAULT`` (see :func:`memstore.config.fault_point`) makes it die at a
named point.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import random
import sys
from collections.abc import Sequence

from memstore import MemoryItem, MemoryLimits, MemoryStore, Settings, WordEstimator

LIMITS = MemoryLimits(hard=220, target=130, keep_recent=3)
KINDS = [
    ("user", "USER_MESSAGE", "NORMAL"),
    ("assistant", "ASSISTANT_MESSAGE", "NORMAL"),
    ("tool", "TOOL_OBSERVATION", "LOW"),
    ("tool", "TOOL_OBSERVATION", "HIGH"),
    ("developer", "DECISION", "NORMAL"),
]


def append_line(path: str | None, line: str) -> None:
    if path:
        # O_APPEND: small writes from many processes land whole, one per line.
        fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
        try:
            os.write(fd, (line + "\n").encode())
        finally:
            os.close(fd)


class _ConflictCounter(logging.Handler):
    """Counts the store's "lost the race; re-planning" log records."""

    def __init__(self) -> None:
        super().__init__()
        self.count = 0

    def emit(self, record: logging.LogRecord) -> None:
        if "re-planning" in record.getMessage():
            self.count += 1


async def run(args: argparse.Namespace) -> dict[str, int]:
    rng = random.Random(args.seed)
    calls = 0

    async def summarizer(previous: str | None, items: Sequence[MemoryItem]) -> str:
        nonlocal calls
        calls += 1
        append_line(args.calls, f"{args.name} {len(items)}")
        if args.marker:
            append_line(args.marker, "summarizing")
        await asyncio.sleep(args.pause_first if calls == 1 else rng.uniform(0, args.slow))
        if (calls == 1 and args.fail_first) or rng.random() < args.fail_rate:
            raise RuntimeError("scripted summarizer failure")
        prefix = f"STALE-{args.name}-{calls}" if args.stale_summary else f"summary by {args.name}"
        return f"{prefix}: {len(items)} items folded"

    conflicts = _ConflictCounter()
    logging.getLogger("memstore").addHandler(conflicts)
    logging.getLogger("memstore").setLevel(logging.INFO)
    settings = Settings(lease_s=args.lease, busy_timeout_s=30, summarizer_timeout_s=30)
    async with MemoryStore.open(args.db, settings=settings) as store:
        memory = store.session(
            args.session, limits=LIMITS, estimator=WordEstimator(), summarizer=summarizer
        )
        reports = 0

        def count(_report: object) -> None:
            nonlocal reports
            reports += 1

        memory.add_observer(count)
        for i in range(args.n):
            role, kind, priority = rng.choice(KINDS)
            content = f"{args.name}-{i} " + " ".join(f"w{rng.randint(0, 99)}" for _ in range(8))
            await memory.add(
                role, content, kind=kind, priority=priority, idempotency_key=f"{args.name}-{i}"
            )
            append_line(args.acks, content)
        return {
            "appended": args.n,
            "summarizer_calls": calls,
            "compactions": reports,
            "conflicts": conflicts.count,
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("session")
    parser.add_argument("name")
    parser.add_argument("n", type=int)
    parser.add_argument("--fail-rate", type=float, default=0.0)
    parser.add_argument("--slow", type=float, default=0.0)
    parser.add_argument("--calls")
    parser.add_argument("--acks")
    parser.add_argument("--marker")
    parser.add_argument("--lease", type=float, default=60.0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--pause-first", type=float, default=0.0)
    parser.add_argument("--fail-first", action="store_true", help="fail the first call")
    parser.add_argument("--stale-summary", action="store_true")
    args = parser.parse_args()
    result = asyncio.run(run(args))
    print(json.dumps(result))
    sys.stdout.flush()


if __name__ == "__main__":
    main()
