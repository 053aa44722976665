"""Many processes creating one new database at once all succeed, on a machine too busy for
the busy timeout.

The first opener runs every migration; the others must wait for the schema, not for one
busy timeout. A busy timeout far shorter than creating the schema takes (50 ms) stands in for
a machine so loaded that the migrations outlast the default one: openers that waited only for
the lock failed here with ``LockTimeoutError``, 7 of 8 of them.
"""

from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import time
from pathlib import Path

from conftest import reset_postgres

from memstore import MemoryStore
from memstore.db.migrate import SCHEMA_HEAD

#: Openers of the one new database.
OPENERS = 8
#: Far below the time the migrations take (about 0.15 s once Alembic is loaded).
SHORT_BUSY_TIMEOUT = "0.05"

_OPENER = r"""
import asyncio, sys, time
from pathlib import Path
from memstore import MemoryStore

url, name, go = sys.argv[1], sys.argv[2], Path(sys.argv[3])
Path(f"{go}.{name}.ready").touch()
deadline = time.monotonic() + 60
while not go.exists() and time.monotonic() < deadline:
    time.sleep(0.001)

async def main():
    async with MemoryStore.open(url) as store:
        assert await store.sessions() == []  # usable: the schema is there

asyncio.run(main())
print("ok")
"""


def open_at_once(url: str, go: Path) -> list[str]:
    """Start the openers, release them together; the failures (last stderr lines)."""
    env = {**os.environ, "MEMSTORE_BUSY_TIMEOUT": SHORT_BUSY_TIMEOUT}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", _OPENER, url, f"w{n}", str(go)],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(OPENERS)
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


async def revisions(url: str) -> list[str]:
    """Every row of ``alembic_version``: one, at head, when the migrations ran once."""
    from sqlalchemy import text

    async with MemoryStore.open(url, upgrade=False) as store:
        query = text("SELECT version_num FROM alembic_version")
        return list(await store.database.run_read(lambda c: c.execute(query).scalars().all()))


def test_many_processes_create_one_new_sqlite_file(tmp_path: Path) -> None:
    db = tmp_path / "new.db"
    assert open_at_once(str(db), tmp_path / "go") == []
    assert asyncio.run(revisions(str(db))) == [SCHEMA_HEAD]


def test_many_processes_create_one_new_postgresql_schema(postgres_url: str, tmp_path: Path) -> None:
    asyncio.run(reset_postgres(postgres_url))  # no tables: the openers create the schema
    assert open_at_once(postgres_url, tmp_path / "go") == []
    assert asyncio.run(revisions(postgres_url)) == [SCHEMA_HEAD]
