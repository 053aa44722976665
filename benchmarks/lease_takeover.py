"""Compactors that die: 6 workers share one session, 2 are SIGKILLed holding the lease.

    python benchmarks/lease_takeover.py [--workers 6] [--kills 2] [--n 150] [--db-url URL]

Each worker appends ``--n`` messages of ~20 words to one session (hard 400, target 250, keep
3) with a summarizer that takes 50-400 ms. The driver waits until a worker is inside its
summarizer holding the compaction lease and SIGKILLs it, as an OOM kill or a redeploy would,
``--kills`` times. It reports:

* compactions committed, and how many took over an abandoned lease;
* for each kill, seconds until the next compaction committed;
* the largest session total any worker saw between a kill and that compaction;
* the largest total seen over the whole run, kills or not: appends outrun a 50-400 ms
  summarizer (``--kills 0`` gives the same run without kills, to compare);
* summarizer calls per summarizing compaction, with the killed holders' last calls and
  without them.

``--db-url`` points the workers at PostgreSQL (its public schema is reset first).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from datetime import UTC
from pathlib import Path

from memstore import MemoryLimits, MemoryStore, WordEstimator

LIMITS = MemoryLimits(hard=400, target=250, keep_recent=3)

WORKER = """
import asyncio, json, random, sys, time
from memstore import MemoryLimits, MemoryStore, WordEstimator
url, name, n, log = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
LIMITS = MemoryLimits(hard=400, target=250, keep_recent=3)
rng = random.Random(name)
out = open(log, "a", buffering=1)
def say(**record):
    out.write(json.dumps({"t": time.time(), "worker": name, **record}) + "\\n")
async def summarize(previous, items):
    say(event="summarizing")
    await asyncio.sleep(rng.uniform(0.05, 0.4))
    return f"{name}: {len(items)} items folded"
async def main():
    async with MemoryStore.open(url) as store:
        memory = store.session("shared", limits=LIMITS, estimator=WordEstimator(),
                               summarizer=summarize)
        for i in range(n):
            words = " ".join(rng.choice(["trace", "span", "retry", "cache", "queue"])
                             for _ in range(20))
            await memory.add("user", f"{name}-{i} {words}")
            say(event="total", total=await memory.estimated_tokens())
asyncio.run(main())
"""


async def reset(url: str) -> None:
    if url.startswith("postgresql"):
        import asyncpg  # type: ignore[import-untyped]

        conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
        await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
        await conn.close()
    async with MemoryStore.open(url) as store:
        await store.session("shared", limits=LIMITS, estimator=WordEstimator()).add("user", "start")


async def holder_pid(url: str) -> int | None:
    async with MemoryStore.open(url) as store:
        held = await store.lease_holder("shared")
    return held.pid if held is not None and held.expires_in > 0 else None


def run(url: str, workers: int, kills: int, n: int, log: Path) -> None:
    asyncio.run(reset(url))
    procs = {
        proc.pid: proc
        for proc in (
            subprocess.Popen([sys.executable, "-c", WORKER, url, f"w{i}", str(n), str(log)])
            for i in range(workers)
        )
    }
    rng = random.Random(1)
    kill_times: list[float] = []
    while len(kill_times) < kills and any(p.poll() is None for p in procs.values()):
        time.sleep(rng.uniform(0.3, 1.2))
        pid = asyncio.run(holder_pid(url))
        if pid in procs and procs[pid].poll() is None:
            procs[pid].send_signal(signal.SIGKILL)
            kill_times.append(time.time())
    for proc in procs.values():
        proc.wait()
    asyncio.run(report(url, log, kill_times))


async def report(url: str, log: Path, kill_times: list[float]) -> None:
    async with MemoryStore.open(url) as store:
        reports = await (await store.attach("shared")).reports()
        violations = await store.check("shared")
    events = [json.loads(line) for line in log.read_text().splitlines()]
    commits = sorted(
        r.finished_at.replace(tzinfo=UTC).timestamp() for r in reports if r.finished_at
    )
    calls = sum(e["event"] == "summarizing" for e in events)
    summarizing = sum(r.summarizer is not None for r in reports)
    print(
        f"compactions: {len(reports)}, took over an abandoned lease: "
        f"{sum(r.took_over_from is not None for r in reports)}, violations: {len(violations)}"
    )
    for killed in kill_times:
        after = next((c for c in commits if c > killed), None)
        window = [
            e["total"]
            for e in events
            if e["event"] == "total" and killed <= e["t"] <= (after or float("inf"))
        ]
        print(
            f"kill at +{killed - kill_times[0]:.2f}s: next compaction after "
            f"{'never' if after is None else f'{after - killed:.2f}s'}, largest total seen "
            f"meanwhile {max(window, default=0)} (hard limit {LIMITS.hard})"
        )
    totals = [e["total"] for e in events if e["event"] == "total"]
    print(f"largest total seen in the whole run: {max(totals, default=0)}")
    wasted = len(kill_times)  # at most: each kill cuts off the holder's one summarizer call
    print(
        f"summarizer calls per summarizing compaction: {calls}/{summarizing} = "
        f"{calls / max(summarizing, 1):.2f}; without the killed holders' last calls "
        f"{max(calls - wasted, 0) / max(summarizing, 1):.2f}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--workers", type=int, default=6)
    parser.add_argument("--kills", type=int, default=2)
    parser.add_argument("--n", type=int, default=150)
    parser.add_argument("--db-url", help="default: a fresh SQLite file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        url = args.db_url or str(Path(tmp) / "leases.db")
        log = Path(tmp) / "events.jsonl"
        print(
            f"{args.workers} workers x {args.n} appends, {args.kills} lease holders killed, "
            f"on {'PostgreSQL' if url.startswith('postgresql') else 'SQLite'}, pid {os.getpid()}"
        )
        run(url, args.workers, args.kills, args.n, log)


if __name__ == "__main__":
    main()
