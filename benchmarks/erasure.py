"""What leaving no byte of deleted history costs on a large SQLite file, step by step.

    python benchmarks/erasure.py [--items 100000] [--purged 2000] [--appends 1000]
                                 [--rounds 3] [--dir DIR]

One file holds a session of ``--items`` forgotten chat turns and one of ``--purged`` more, all
in the search index (as an import leaves them). Each measurement runs on a fresh copy of it:

1. ``store.purge()`` of the small session as memstore runs it (``secure_delete``, FTS5
   ``optimize`` of the indexes that lost rows, ``wal_checkpoint(TRUNCATE)``);
2. the same steps one by one, with raw sqlite3: the deletes with ``secure_delete`` on and off,
   then what each way of dropping the deleted rows' words from the index costs (``optimize``,
   ``merge`` until there is nothing left to merge, ``rebuild``), the checkpoint, and ``VACUUM``
   (which rewrites the whole file: what a file written without ``secure_delete`` needs once);
3. durable appends per second with ``secure_delete`` on and off, rounds interleaved.

Wall-clock seconds (appends: medians of the rounds); nothing is asserted.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import shutil
import sqlite3
import statistics
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from search import appends_per_second, chat_texts
from sqlalchemy import event
from suite import SETTINGS, history_records

import memstore.db.connection as connection
from memstore import MemoryStore

#: The deletes a purge of session ``p`` runs, as raw SQL (the triggers keep the index right).
PURGE_SQL = [
    "DELETE FROM summaries WHERE session_id = 'p'",
    "DELETE FROM items WHERE session_id = 'p'",
    "DELETE FROM compactions WHERE session_id = 'p'",
    "DELETE FROM sessions WHERE id = 'p'",
]


async def build(path: Path, items: int, purged: int, texts: list[str]) -> None:
    async with MemoryStore.open(path, settings=SETTINGS) as store:
        await store.import_session(history_records(items, 50, texts))
        small = history_records(purged, 10, texts[::-1])
        for record in small:  # the same records, as session "p"
            if record["type"] == "session":
                record["id"] = "p"
            else:
                record["session_id"] = "p"
        await store.import_session(small)


@contextlib.contextmanager
def copy_of(base: Path, scratch: Path, name: str) -> Iterator[Path]:
    path = scratch / name
    shutil.copy(base, path)
    try:
        yield path
    finally:
        for suffix in ("", "-wal", "-shm"):
            Path(f"{path}{suffix}").unlink(missing_ok=True)


def timed(fn: Callable[[], Any]) -> float:
    start = time.perf_counter()
    fn()
    return time.perf_counter() - start


def raw(path: Path, secure: bool) -> sqlite3.Connection:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("PRAGMA journal_mode = WAL")
    conn.execute(f"PRAGMA synchronous = {SETTINGS.sqlite_synchronous}")
    conn.execute("PRAGMA foreign_keys = ON")
    conn.execute(f"PRAGMA secure_delete = {'ON' if secure else 'OFF'}")
    return conn


def in_transaction(conn: sqlite3.Connection, statements: list[str]) -> None:
    conn.execute("BEGIN IMMEDIATE")
    for statement in statements:
        conn.execute(statement)
    conn.execute("COMMIT")


def merge_until_done(conn: sqlite3.Connection) -> None:
    """FTS5 ``merge`` in steps of 500 pages until a step changes (almost) nothing: the
    documented way to tell that merging is complete."""
    while True:
        before = conn.total_changes
        in_transaction(conn, ["INSERT INTO items_fts(items_fts, rank) VALUES ('merge', -500)"])
        if conn.total_changes - before < 2:
            return


def steps(base: Path, scratch: Path) -> dict[str, float]:
    out: dict[str, float] = {}
    for secure in (True, False):
        with copy_of(base, scratch, f"deletes-{secure}.db") as path:
            conn = raw(path, secure)
            out[f"deletes, secure_delete {'on' if secure else 'off'}"] = timed(
                lambda conn=conn: in_transaction(conn, PURGE_SQL)
            )
            conn.close()
    index_ways: dict[str, Callable[[sqlite3.Connection], None]] = {
        "optimize": lambda c: in_transaction(
            c, ["INSERT INTO items_fts(items_fts) VALUES ('optimize')"]
        ),
        "merge until done": merge_until_done,
        "rebuild": lambda c: in_transaction(
            c, ["INSERT INTO items_fts(items_fts) VALUES ('rebuild')"]
        ),
    }
    for name, way in index_ways.items():
        with copy_of(base, scratch, f"index-{name}.db") as path:
            conn = raw(path, True)
            in_transaction(conn, PURGE_SQL)
            out[f"items_fts {name}"] = timed(lambda conn=conn, way=way: way(conn))
            if name == "optimize":
                out["wal_checkpoint(TRUNCATE)"] = timed(
                    lambda conn=conn: conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchall()
                )
                out["VACUUM"] = timed(lambda conn=conn: conn.execute("VACUUM"))
            conn.close()
    return out


async def purge_as_memstore_does(path: Path) -> float:
    async with MemoryStore.open(path, settings=SETTINGS) as store:
        start = time.perf_counter()
        await store.purge("p")
        return time.perf_counter() - start


@contextlib.contextmanager
def secure_delete_off() -> Iterator[None]:
    """memstore's connection recipe, then ``secure_delete=OFF`` (what it was before)."""
    recipe = connection._install_sqlite_recipe

    def without(engine: Any, settings: Any) -> None:
        recipe(engine, settings)

        @event.listens_for(engine, "connect")
        def _off(dbapi_connection: Any, _record: Any) -> None:
            dbapi_connection.execute("PRAGMA secure_delete = OFF")

    connection._install_sqlite_recipe = without
    try:
        yield
    finally:
        connection._install_sqlite_recipe = recipe


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=100_000)
    parser.add_argument("--purged", type=int, default=2_000)
    parser.add_argument("--appends", type=int, default=1_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--dir", default=None, help="where the databases go")
    args = parser.parse_args()
    texts, _questions = chat_texts(max(args.items, args.appends))
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        scratch = Path(tmp)
        base = scratch / "base.db"
        asyncio.run(build(base, args.items, args.purged, texts))
        size = base.stat().st_size / 2**20
        with copy_of(base, scratch, "purge.db") as path:
            whole = asyncio.run(purge_as_memstore_does(path))
        parts = steps(base, scratch)
        rates: dict[bool, list[float]] = {True: [], False: []}
        for _ in range(args.rounds):
            for secure in (True, False):
                with copy_of(base, scratch, "appends.db") as path:
                    with contextlib.nullcontext() if secure else secure_delete_off():
                        appends = appends_per_second(path, texts[: args.appends], indexing=False)
                        rate = asyncio.run(appends)
                    rates[secure].append(rate)
    print(f"a file of {args.items:,} + {args.purged:,} indexed chat turns ({size:.0f} MiB):")
    print(f"  store.purge() of the {args.purged:,}, as memstore runs it   {whole:7.2f} s")
    for name, seconds in parts.items():
        print(f"  {name:<50} {seconds:7.2f} s")
    on, off = (statistics.median(rates[flag]) for flag in (True, False))
    print(f"durable appends, {args.appends:,} chat turns, median of {args.rounds} rounds:")
    print(f"  secure_delete on    {on:8.0f} /s")
    print(f"  secure_delete off   {off:8.0f} /s   (on / off: {on / off:.2f})")


if __name__ == "__main__":
    main()
