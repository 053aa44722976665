"""Many processes creating one new database at once all succeed, on a machine too busy for
the busy timeout.

The first opener runs every migration; the others must wait for the schema, not for one
busy timeout. A busy timeout far shorter than creating the schema takes (50 ms) stands in for
a machine so loaded that the migrations outlast the default one: openers that waited only for
the lock failed here with ``LockTimeoutError``, all but the one that migrated.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
import time
from pathlib import Path

from conftest import reset_postgres

from memstore import MemoryStore
from memstore.db.migrate import SCHEMA_HEAD

#: Openers of the one new database.
OPENERS = 4

NAMES = [f"w{n}" for n in range(OPENERS)]
_OPENER = r"""
import asyncio, sys, time
from pathlib import Path
from memstore import MemoryStore, Settings, WordEstimator

url, name, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
Path(f"{go}.{name}.ready").touch()
deadline = time.monotonic() + 60
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.001)

async def main():
    # 50 ms: far below the time the migrations take (about 0.15 s once Alembic is loaded).
    async with MemoryStore.open(url, settings=Settings(busy_timeout_s=0.05)) as store:
        await store.sessions()  # usable: the schema is there
    # Then an append each, at the default busy timeout (the openers' writes queue up).
    async with MemoryStore.open(url) as store:
        await store.session(name, estimator=WordEstimator()).add("user", f"hello from {name}")

asyncio.run(main())
print("ok")
"""


def open_at_once(url: str, go: Path) -> list[str]:
    """Start the openers, release them together; the failures (last stderr lines)."""
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPENER, url, name, str(go)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for name in NAMES
    ]
    deadline = time.monotonic() + 120
    while len(list(go.parent.glob(f"{go.name}.*.ready"))) < OPENERS:
        assert time.monotonic() < deadline, "the openers did not start"
        time.sleep(0.01)
    go.touch()
    failures = []
    for proc in procs:
        out, err = proc.communicate(timeout=180)
        if proc.returncode != 0 or out.strip() != "ok":
            failures.append(
                err.strip().splitlines()[-1] if err.strip() else f"rc={proc.returncode}"
            )
    return failures


async def revisions_and_sessions(url: str) -> tuple[list[str], list[str]]:
    """Every row of ``alembic_version`` (one, at head, when the migrations ran once), and
    every session's id."""
    from sqlalchemy import text

    async with MemoryStore.open(url, upgrade=False) as store:
        query = text("SELECT version_num FROM alembic_version")
        revisions = await store.database.run_read(lambda c: c.execute(query).scalars().all())
        return list(revisions), sorted(info.id for info in await store.sessions())


def test_many_processes_create_one_new_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    assert open_at_once(str(db), tmp_path / "go") == []
    assert asyncio.run(revisions_and_sessions(str(db))) == ([SCHEMA_HEAD], NAMES)
    assert [p.name for p in tmp_path.iterdir() if "creating" in p.name] == []  # no leftovers


def test_many_processes_create_one_new_postgresql_schema(postgres_url: str, tmp_path: Path) -> None:
    asyncio.run(reset_postgres(postgres_url))  # no tables: the openers create the schema
    assert open_at_once(postgres_url, tmp_path / "go") == []
    assert asyncio.run(revisions_and_sessions(postgres_url)) == ([SCHEMA_HEAD], NAMES)
