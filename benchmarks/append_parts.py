"""What each part of a durable append costs: memstore's ledger, taken apart, beside the SDK's.

    python benchmarks/append_parts.py [--n 300] [--rounds 5] [--dir DIR]

Every variant appends ``--n`` ~200-word messages, one per ``BEGIN IMMEDIATE ... COMMIT``, in a
plain loop on one connection (no thread, no event loop, no validation: the transaction
alone), at memstore's ``synchronous`` setting, on a fresh database each round, rounds
interleaved. The baseline is the Agents SDK's ``SQLiteSession.add_items`` reduced the same
way: its three statements on its own schema. memstore's variants each take one part of the
ledger away (an index every read needs, the session row's version bump, random ids) to say
what that part costs; none of them is what memstore does, except the first.

Printed: appends/s, the ratio to the SDK's statements, and the bytes each append writes (the
pages its commit appends to the write-ahead log).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

from suite import NO_COMPACTION, SETTINGS, SYNC, messages  # beside this file

from memstore import MemoryStore, WordEstimator
from memstore.core.values import MemoryKind, MemoryRole, Priority
from memstore.db import append
from memstore.db.append import NewItem, append_items
from memstore.db.connection import WRITE_OPTION, sqlite_engine

SDK_SCHEMA = (
    "CREATE TABLE agent_sessions (session_id TEXT PRIMARY KEY, created_at TIMESTAMP DEFAULT "
    "CURRENT_TIMESTAMP, updated_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP)",
    "CREATE TABLE agent_messages (id INTEGER PRIMARY KEY AUTOINCREMENT, session_id TEXT NOT "
    "NULL, message_data TEXT NOT NULL, created_at TIMESTAMP DEFAULT CURRENT_TIMESTAMP, FOREIGN "
    "KEY (session_id) REFERENCES agent_sessions (session_id) ON DELETE CASCADE)",
    "CREATE INDEX idx_agent_messages_session_id ON agent_messages (session_id, id)",
)
#: Variant -> (indexes dropped first, ids in time order, session row bumped).
VARIANTS: dict[str, tuple[tuple[str, ...], bool, bool]] = {
    "memstore append: bump + insert": ((), False, True),
    "  without the handle index": (("ix_items_handle",), False, True),
    "  without the active-items index": (("ix_items_active",), False, True),
    "  with ids in time order, not uuid4": ((), True, True),
    "  without the session row's bump": ((), False, False),
    "  without any of these": (("ix_items_handle", "ix_items_active"), True, False),
}
SDK = "SDK SQLiteSession's statements"


def written() -> int:
    """Bytes this process has written so far (Linux; 0 elsewhere)."""
    try:
        lines = Path("/proc/self/io").read_text().splitlines()
    except OSError:
        return 0
    return int(dict(line.split(": ") for line in lines)["wchar"])


def sdk_statements(path: Path, texts: list[str]) -> float:
    import json
    import sqlite3

    conn = sqlite3.connect(path)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute(f"PRAGMA synchronous={SYNC}")
    for statement in SDK_SCHEMA:
        conn.execute(statement)
    conn.commit()
    began = time.perf_counter()
    for text in texts:
        conn.execute("INSERT OR IGNORE INTO agent_sessions (session_id) VALUES (?)", ("b",))
        conn.executemany(
            "INSERT INTO agent_messages (session_id, message_data) VALUES (?, ?)",
            [("b", json.dumps({"role": "user", "content": text}))],
        )
        conn.execute(
            "UPDATE agent_sessions SET updated_at = CURRENT_TIMESTAMP WHERE session_id = ?", ("b",)
        )
        conn.commit()
    elapsed = time.perf_counter() - began
    conn.close()
    return elapsed


def memstore_variant(dropped: tuple[str, ...], ordered: bool, bump: bool) -> Callable[..., float]:
    def run(path: Path, texts: list[str]) -> float:
        async def create() -> None:
            async with MemoryStore.open(path, settings=SETTINGS) as store:
                memory = store.session("b", estimator=WordEstimator(), limits=NO_COMPACTION)
                await memory.add("user", "warm-up")

        asyncio.run(create())
        engine = sqlite_engine(path, SETTINGS)
        news = [
            NewItem(MemoryRole.USER, MemoryKind.USER_MESSAGE, Priority.NORMAL, t, 200, handle="h")
            for t in texts
        ]
        real_uuid = append.uuid
        if ordered:  # what a time-ordered id (UUIDv7) would do to the primary key's pages
            counter = iter(range(1, 10**9))
            append.uuid = SimpleNamespace(uuid4=lambda: uuid.UUID(int=next(counter)))  # type: ignore[assignment]
        try:
            with engine.connect().execution_options(**{WRITE_OPTION: True}) as conn:
                for index in dropped:
                    conn.exec_driver_sql(f"DROP INDEX {index}")
                conn.commit()
                began = time.perf_counter()
                for seq, new in enumerate(news, start=2):
                    with conn.begin():
                        if bump:
                            append_items(conn, "b", "words", NO_COMPACTION, [new])
                        else:  # the item row alone, at the seq the bump would have given
                            row = SimpleNamespace(version=seq, last_seq=seq)
                            item = append.MemoryItem(
                                id=str(append.uuid.uuid4()), session_id="b", seq=seq,
                                role=new.role, kind=new.kind, priority=new.priority,
                                content=new.content, timestamp=append.utcnow(),
                                estimated_tokens=new.estimated_tokens, version=row.version,
                                handle=new.handle, turn=seq,
                            )  # fmt: skip
                            append.insert_items(conn, [item], [new])
                elapsed = time.perf_counter() - began
        finally:
            append.uuid = real_uuid
            engine.dispose()
        return elapsed

    return run


def measure(n: int, rounds: int, work_dir: str | None) -> dict[str, tuple[float, float]]:
    """Label -> (median appends/s, bytes written per append)."""
    texts = messages(n)
    contenders: dict[str, Callable[..., float]] = {SDK: sdk_statements}
    contenders.update({label: memstore_variant(*spec) for label, spec in VARIANTS.items()})
    rates: dict[str, list[float]] = {label: [] for label in contenders}
    sizes: dict[str, list[float]] = {label: [] for label in contenders}
    for _ in range(rounds):
        for label, run in contenders.items():
            with tempfile.TemporaryDirectory(dir=work_dir) as tmp:
                before = written()
                seconds = run(Path(tmp) / "parts.db", texts)
                sizes[label].append((written() - before) / n)
                rates[label].append(n / seconds)
    return {
        label: (statistics.median(rates[label]), statistics.median(sizes[label]))
        for label in contenders
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--dir", help="where the databases go (default: the temp directory)")
    args = parser.parse_args()
    found = measure(args.n, args.rounds, args.dir)
    base = found[SDK][0]
    print(f"durable single appends in a plain loop, synchronous={SYNC}")
    for label, (rate, size) in found.items():
        print(f"  {label:<40} {rate:8.0f}/s  {rate / base:5.2f}x  {size / 1024:6.1f} KiB each")


if __name__ == "__main__":
    main()
