"""What deleting history leaves in a SQLite file, and how ``prune`` and ``purge`` leave nothing.

Deleting a row takes it out of its table, not out of the file. Three places keep its bytes:

1. **Free space.** A deleted (or rewritten) row's cell, and a page that empties, keep their
   bytes until something overwrites them. Every connection memstore opens sets
   ``secure_delete=ON`` (:mod:`memstore.db.connection`), so SQLite overwrites them with zeros
   as it frees them: cells, overflow pages, free-list pages.
2. **The full-text index.** FTS5 does not remove a deleted row's words from the segments that
   hold them: it adds a delete marker, and the words stay until a merge drops both. After a
   delete, :func:`erase_index_residue` runs FTS5's ``optimize`` on each index that lost rows,
   in the deleting transaction: every segment is merged into one, without the deleted rows'
   words, and the old segments' pages are freed (and zeroed, by 1). ``merge`` would bound the
   work but not guarantee the words are gone; ``rebuild`` re-reads every row's text, several
   times ``optimize``'s cost (benchmarks/erasure.py measures the three).
3. **The write-ahead log.** The WAL holds the pages as they were before the delete until a
   checkpoint copies the new ones into the file and the log starts over. After the delete
   commits, :func:`truncate_wal` runs ``PRAGMA wal_checkpoint(TRUNCATE)``: the file gets the
   new pages and the log is cut to zero bytes. Another process reading an older snapshot at
   that moment keeps the checkpoint from finishing; the store then logs a warning (the
   deleted pages stay in the log until the next complete checkpoint) rather than failing a
   delete that committed.

PostgreSQL keeps a deleted row as a dead tuple until ``VACUUM`` (autovacuum) reclaims its
space, and its write-ahead log and backups keep what they keep: that is the server's. memstore
deletes every row that holds the text; what the server retains is its operator's to bound.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterable

from sqlalchemy import Connection, text
from sqlalchemy.engine import Engine

from memstore.db.driver_errors import translate_errors
from memstore.db.engine import Database

log = logging.getLogger("memstore")

#: The FTS5 indexes, by the table whose rows they index (migration 0008).
INDEXES = {"items": "items_fts", "summaries": "summaries_fts", "ltm_entries": "ltm_entries_fts"}


def erase_index_residue(conn: Connection, tables: Iterable[str]) -> None:
    """Merge each FTS5 index of ``tables`` (rows were deleted from them) into one segment,
    without the deleted rows' words; SQLite only, in the deleting transaction."""
    if conn.dialect.name != "sqlite":
        return
    for table in sorted(set(tables)):
        index = INDEXES[table]
        conn.execute(text(f"INSERT INTO {index}({index}) VALUES ('optimize')"))


async def truncate_wal(db: Database, what: str) -> bool:
    """Checkpoint a SQLite file's WAL into it and truncate the log, after a delete committed
    (``what`` names the delete in the warning); whether it finished. A no-op elsewhere.

    Runs in a thread of its own, on a connection outside any transaction (a checkpoint cannot
    run inside one); it waits for other writers up to the busy timeout.
    """
    if db.dialect != "sqlite" or db.read_only or not db.sync_engine.url.database:
        return True
    busy = await asyncio.to_thread(_checkpoint, db.sync_engine)
    if busy:
        log.warning(
            "memstore: %s committed, but another connection was reading, so the write-ahead "
            "log still holds the deleted pages until the next complete checkpoint "
            "(PRAGMA wal_checkpoint(TRUNCATE) when no reader is busy)",
            what,
        )
    return not busy


def _checkpoint(engine: Engine) -> bool:
    """``PRAGMA wal_checkpoint(TRUNCATE)``; whether it was kept from finishing."""
    with translate_errors():
        raw = engine.raw_connection()
        try:
            cursor = raw.cursor()
            try:
                busy, _log, _done = cursor.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
            finally:
                cursor.close()
        finally:
            raw.close()
    return bool(busy)
