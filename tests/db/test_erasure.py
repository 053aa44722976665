"""After a purge (or a prune), no byte of the deleted text is left, long-term history included.

A canary (a passport number nobody else says) goes into a scoped session's items, its
summaries, a fork's copies, the search index, and a long-term entry consolidated from it that
a later version superseded, so its history holds it too. ``memstore purge --with-forks
--with-derived`` runs as a process of its own. Afterwards:

* SQLite: neither the database file nor its write-ahead log holds the canary's bytes (as
  written, or lower-cased as the full-text index stores its words);
* PostgreSQL: no row of any table, read as text, holds it;

and everything else is still there and ``memstore check`` passes. The canary starts with
letters no other word of these sessions starts with: FTS5 stores a word after the prefix it
shares with the word before it, which would hide a canary sharing one from a byte search.
"""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from clients import memstore_process

from memstore import MemoryKind, MemoryLimits, MemoryStore, Priority, WordEstimator
from memstore.db.search_index import index_tail

CANARY = "XQ7731ZKJ"
RENEWED = "PL5520RRT"
KEPT = "Quillwort"  # said in a session that stays: the scan must still find it
SCOPE = "user:bob"
ROOMY = MemoryLimits(hard=4000, target=3000, keep_recent=2)


#: Reads the database file and its write-ahead log as they are on disk, in a process of its
#: own: closing a descriptor of the file in the test's process would drop the POSIX locks its
#: open store holds on it (SQLite's documented caveat), which no real reader does.
_SCAN = """
import pathlib, sys
path, needle = pathlib.Path(sys.argv[1]), sys.argv[2].encode()
raw = b"".join(p.read_bytes() for p in (path, pathlib.Path(f"{path}-wal")) if p.exists())
print(needle in raw or needle.lower() in raw)
"""


def _raw_holds(path: str, needle: str) -> bool:
    scan = subprocess.run(
        [sys.executable, "-c", _SCAN, path, needle], capture_output=True, text=True, check=True
    )
    return scan.stdout.strip() == "True"


async def _postgres_rows_holding(url: str, needle: str) -> dict[str, int]:
    """Every table of the public schema: rows whose text holds ``needle`` (any case)."""
    import asyncpg  # type: ignore[import-untyped]

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        tables = [
            row[0]
            for row in await conn.fetch(
                "SELECT tablename FROM pg_tables WHERE schemaname = 'public'"
            )
        ]
        found = {}
        for table in tables:
            count = await conn.fetchval(
                f'SELECT count(*) FROM "{table}" AS t WHERE t::text ILIKE $1', f"%{needle}%"
            )
            if count:
                found[table] = count
        return found
    finally:
        await conn.close()


async def _holding(url: str, needle: str) -> bool:
    if url.startswith("postgresql"):
        return bool(await _postgres_rows_holding(url, needle))
    return await asyncio.to_thread(_raw_holds, url, needle)


async def _said_and_consolidated(store: MemoryStore) -> None:
    """The canary in items, summaries, a fork's copies, the index, an entry and its history."""
    bob = store.session("s", scope=SCOPE, limits=ROOMY, estimator=WordEstimator())
    await bob.add("user", f"My name is Ingrid and my passport number is {CANARY}.")
    for turn in range(20):
        await bob.add("assistant", f"Filler reply {turn} with several plain words about nothing.")
    await bob.consolidate()
    await bob.add("user", f"My name is Ingrid and my passport number is {RENEWED} now.")
    for turn in range(20):
        await bob.add("assistant", f"Another reply {turn} with several plain words about nothing.")
    await bob.consolidate()
    await bob.compact()  # a summary that keeps the canary
    await store.fork("s", "s-fork")
    other = store.session("other", scope=SCOPE, estimator=WordEstimator())
    await other.add("user", f"I grow {KEPT} in the garden.")
    await store.database.run_write(index_tail)  # the index holds every item, the canary too


async def test_a_purge_leaves_no_byte_of_the_purged_text(backend_url: str) -> None:
    # The store stays open across the purge, as a long-lived worker's does: its connections
    # keep the write-ahead log from being folded in and removed when the purging process
    # closes, so what the log holds after the purge is what the purge left there.
    async with MemoryStore.open(backend_url) as store:
        await _said_and_consolidated(store)
        (entry,) = [e for e in await store.ltm.list(scope=SCOPE) if RENEWED in str(e.value)]
        history = await store.ltm.history(entry.key, scope=SCOPE)
        assert CANARY in str(history[0].value), "the superseded version holds the canary"
        assert CANARY in (await store.session("s", estimator=WordEstimator()).summary() or "")
        assert await _holding(backend_url, CANARY)
        purge = ["purge", "s", "--with-forks", "--with-derived", "--yes"]
        purged = await asyncio.to_thread(memstore_process, backend_url, *purge)
        assert purged.returncode == 0, purged.stderr
        assert "write-ahead log still holds" not in purged.stderr
        assert not await _holding(backend_url, CANARY)
        assert not await _holding(backend_url, RENEWED)
        assert await _holding(backend_url, KEPT)
        assert await store.check() == []
        assert [info.id for info in await store.sessions()] == ["other"]
        changes = await store.ltm.history(entry.key, scope=SCOPE)
        assert [c.action for c in changes] == ["purged", "purged", "delete"]
        assert all(c.value is None and c.source is None for c in changes)
        assert await store.search(CANARY) == []


async def test_a_prune_leaves_no_byte_of_what_it_deleted(backend_url: str) -> None:
    """The canary in a dropped tool observation only (never summarized): pruning the
    compaction that dropped it takes it out of the file too (the store open throughout)."""
    async with MemoryStore.open(backend_url) as store:
        memory = store.session("s", limits=MemoryLimits(40, 25, 2), estimator=WordEstimator())
        await memory.add(
            "tool",
            f"debug dump {CANARY} of the gateway",
            kind=MemoryKind.TOOL_OBSERVATION,
            priority=Priority.LOW,
        )
        for turn in range(14):
            await memory.add("user", f"turn {turn} keeps talking about Lisbon and the trip")
        reports = await memory.reports()
        dropped = reports[0]
        assert dropped.items_dropped == 1
        await store.database.run_write(index_tail)
        assert CANARY not in (await memory.summary() or "")
        assert await _holding(backend_url, CANARY)
        prune = ["prune", "s", "--before", str(dropped.committed_version + 1), "--yes"]
        pruned = await asyncio.to_thread(memstore_process, backend_url, *prune)
        assert pruned.returncode == 0, pruned.stderr
        assert not await _holding(backend_url, CANARY)
        assert await store.check() == []


@pytest.mark.parametrize("flag", ["with_forks", "with_derived"])
async def test_a_flag_that_is_no_bool_is_refused(any_store: MemoryStore, flag: str) -> None:
    await any_store.session("s", estimator=WordEstimator()).add("user", "keep me")
    with pytest.raises(ValueError) as refused:
        await any_store.purge("s", **{flag: "no"})  # type: ignore[arg-type]
    assert getattr(refused.value, "field", None) == flag
    assert [info.id for info in await any_store.sessions()] == ["s"]


def test_every_connection_zeroes_what_it_frees(tmp_path: Path) -> None:
    """``secure_delete`` is ON on memstore's connections even where the SQLite build's default
    is OFF (many are; without it a purge left 22 copies of the canary in the file's free
    pages): a connection that starts with it OFF has it ON once the recipe ran."""
    from sqlalchemy import event, text

    from memstore import Settings
    from memstore.db.connection import sqlite_engine

    engine = sqlite_engine(tmp_path / "plain.db", Settings())

    def build_default_off(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.execute("PRAGMA secure_delete = OFF")

    event.listen(engine, "connect", build_default_off, insert=True)  # runs before the recipe
    try:
        with engine.connect() as conn:
            assert conn.execute(text("PRAGMA secure_delete")).scalar() == 1
    finally:
        engine.dispose()
