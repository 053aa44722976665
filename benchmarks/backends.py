"""SQLite beside PostgreSQL, same run, same workload.

    python benchmarks/backends.py --postgres postgresql+asyncpg://USER@HOST:PORT/DB [--n 300]

1. durable single appends in one process (~200-word messages, WordEstimator), and
2. 4 processes x 500 appends of 30 words on one session, compacting all the time
   (see many_workers.py),

each on a temporary SQLite file and on the given PostgreSQL database (its public schema is
dropped and recreated first: point it at a scratch database). Raw sqlite3 (WAL, one insert
per commit, the same synchronous setting) is the common baseline.
"""

from __future__ import annotations

import argparse
import asyncio
import tempfile
from pathlib import Path

from many_workers import (
    LIMITS,
    create,
    create_raw_table,
    memstore_worker,
    raw_worker,
    run_processes,
    summarize_reports,
)
from suite import SYNC, memstore_appends, messages, raw_single_inserts


async def reset(url: str) -> None:
    import asyncpg  # type: ignore[import-untyped]

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        await conn.execute("DROP SCHEMA public CASCADE; CREATE SCHEMA public")
    finally:
        await conn.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--postgres", required=True, help="a scratch PostgreSQL database URL")
    parser.add_argument("--n", type=int, default=300, help="single appends per backend")
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--per-proc", type=int, default=500)
    args = parser.parse_args()
    texts = messages(args.n)
    rows: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        base = args.n / asyncio.run(raw_single_inserts(texts)(Path(tmp) / "raw.db"))
        rows.append((f"raw sqlite3, one insert per commit ({SYNC})", base, ""))
        rate = args.n / asyncio.run(memstore_appends(texts)(Path(tmp) / "single.db"))
        rows.append(("memstore add, SQLite", rate, ""))
        asyncio.run(reset(args.postgres))
        rate = args.n / asyncio.run(memstore_appends(texts)(args.postgres))  # type: ignore[arg-type]
        rows.append(("memstore add, PostgreSQL", rate, ""))

        total = args.procs * args.per_proc
        raw_path = str(Path(tmp) / "raw-mp.db")
        create_raw_table(raw_path)
        raw = run_processes(raw_worker, (raw_path, args.per_proc, 30), args.procs)
        rows.append(
            (
                f"raw sqlite3, {args.procs} procs + busy_timeout",
                total / max(r["seconds"] for r in raw),
                f"errors {sum(r['errors'] for r in raw)}",
            )
        )
        for label, url in (("SQLite", str(Path(tmp) / "mp.db")), ("PostgreSQL", args.postgres)):
            if url.startswith("postgresql"):
                asyncio.run(reset(url))
            asyncio.run(create(url))
            results = run_processes(
                memstore_worker, (url, args.per_proc, 30, 0.0, LIMITS), args.procs
            )
            facts = asyncio.run(summarize_reports(url))
            calls = sum(r["calls"] for r in results)
            ratio = calls / facts["summarizing"] if facts["summarizing"] else float("nan")
            rows.append(
                (
                    f"memstore, {args.procs} procs, one session, {label}",
                    total / max(r["seconds"] for r in results),
                    f"errors {sum(r['errors'] for r in results)}, {facts['compactions']} "
                    f"compactions, {facts['retried']} retried, calls/summarizing {ratio:.2f}, "
                    f"violations {facts['violations']}",
                )
            )
    print(f"{'contender':<46} {'appends/s':>10}  notes")
    for label, rate, notes in rows:
        print(f"{label:<46} {rate:>10.0f}  {notes}")


if __name__ == "__main__":
    main()
