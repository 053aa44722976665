"""A worker process for the multi-process consolidation tests: consolidates one session.

    python consolidation_worker.py DB SESSION SCOPE [--lease S]

Prints one JSON line: the run's number (null: nothing committed), and what it wrote.
``MEMSTORE_FAULT=consolidation-mid-commit`` makes it die inside the commit's transaction, after
the entries and before the record of what it consumed (see
:func:`memstore.config.fault_point`).
"""

from __future__ import annotations

import argparse
import asyncio
import dataclasses
import json

from memstore import MemoryStore, Settings, WordEstimator


async def run(args: argparse.Namespace) -> dict[str, object]:
    settings = Settings.from_env()
    if args.lease is not None:
        settings = dataclasses.replace(settings, lease_s=args.lease)
    async with MemoryStore.open(args.db, settings=settings) as store:
        memory = store.session(args.session, scope=args.scope, estimator=WordEstimator())
        report = await memory.consolidate()
        assert report is not None
        return {
            "number": report.number,
            "written": [d.key for d in report.written],
            "skipped": len(report.skipped),
        }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("db")
    parser.add_argument("session")
    parser.add_argument("scope")
    parser.add_argument("--lease", type=float)
    print(json.dumps(asyncio.run(run(parser.parse_args()))), flush=True)


if __name__ == "__main__":
    main()
