"""A worker for the multi-process compare-and-set test: N read-then-CAS increments of one key.

    python ltm_counter_worker.py DB KEY N GO_FILE READY_FILE

Each increment reads the entry, then writes value + 1 with ``expected_version`` = the version
it read (0 when there is none yet). A :class:`VersionConflictError` means another worker won
in between: read again and retry. The worker touches READY_FILE, waits for GO_FILE (so all
workers start together) and prints one JSON line: ``{"increments": N, "conflicts": C}``.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
from pathlib import Path

from memstore import MemoryStore, Settings, VersionConflictError


async def run(db: str, key: str, n: int) -> dict[str, int]:
    conflicts = 0
    # A long busy timeout: contention is the point here, a lock timeout is not.
    async with MemoryStore.open(db, settings=Settings(busy_timeout_s=60)) as store:
        for _ in range(n):
            while True:
                entry = await store.ltm.get(key, scope="test:counter")
                value, version = (0, 0) if entry is None else (entry.value, entry.version)
                try:
                    await store.ltm.set(
                        key, value + 1, scope="test:counter", expected_version=version
                    )
                    break
                except VersionConflictError:
                    conflicts += 1
    return {"increments": n, "conflicts": conflicts}


def main() -> None:
    db, key, n, go, ready = sys.argv[1], sys.argv[2], int(sys.argv[3]), *sys.argv[4:6]
    Path(ready).touch()
    deadline = time.monotonic() + 60
    while not Path(go).exists() and time.monotonic() < deadline:
        time.sleep(0.001)
    print(json.dumps(asyncio.run(run(db, key, n))))


if __name__ == "__main__":
    main()
