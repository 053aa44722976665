"""A damaged database file: found, said, and never written to again; new files made whole.

Damage is made two ways: garbage over a third of a real file's pages (what a failing disk or
a bad copy leaves), and one stored text that is not UTF-8 (deterministic: memstore only ever
stores valid UTF-8, so such bytes in its tables are damage too).
"""

from __future__ import annotations

import asyncio
import os
import random
import sqlite3
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from badinput import digest
from clients import memstore_cli
from conftest import damage_items, raw_sqlite

from memstore import (
    CorruptDatabaseError,
    MemoryLimits,
    MemoryStore,
    NotADatabaseError,
    WordEstimator,
)

LIMITS = MemoryLimits(hard=10**9, target=10**8, keep_recent=4)


async def filled(path: Path, n: int) -> None:
    async with MemoryStore.open(path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        await asyncio.gather(
            *(memory.add("user", f"message {i} " + "word " * 50) for i in range(n))
        )


def garble_middle(path: Path) -> None:
    """Random bytes over the middle third of the file (its header and first pages intact)."""
    size = path.stat().st_size
    with open(path, "r+b") as handle:
        handle.seek(size // 3)
        handle.write(random.Random(7).randbytes(size // 3))


def not_utf8(path: Path, seq: int) -> None:
    """Damage one stored text: bytes that are not UTF-8 where the text was (written past the
    index's update trigger, whose function cannot read such a text, as damage would be)."""
    with closing(raw_sqlite(path)) as conn:
        damage_items(
            conn, "UPDATE items SET content = CAST(x'ff4e6f74' AS TEXT) WHERE seq = ?", seq
        )


def integrity(path: Path) -> str:
    with closing(raw_sqlite(path)) as conn:
        try:
            return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
        except sqlite3.DatabaseError as error:
            return str(error)


async def test_once_damage_is_met_every_later_write_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "damaged.db"
    await filled(path, 1500)
    garble_middle(path)
    assert integrity(path) != "ok"
    async with MemoryStore.open(path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        with pytest.raises(CorruptDatabaseError) as found:
            await memory.items()  # every active item: the damaged pages among them
        assert "memstore check" in str(found.value) and ".recover" in str(found.value)
        before = digest(path)
        for write in (
            lambda: memory.add("user", "after the damage"),
            lambda: store.ltm.set("k", 1),
            lambda: store.purge("s"),
        ):
            with pytest.raises(CorruptDatabaseError, match="refuses writes"):
                await write()
        with pytest.raises(CorruptDatabaseError):
            await memory.compact()  # its snapshot meets the damage before any write
        assert digest(path) == before  # nothing written, not even to the WAL
        assert (await store.session_info("s")).items_total == 1500  # reads go on


async def test_a_stored_text_that_is_not_utf8_is_damage_too(tmp_path: Path) -> None:
    path = tmp_path / "bytes.db"
    await filled(path, 5)
    not_utf8(path, 3)
    async with MemoryStore.open(path) as store:
        memory = store.session("s", estimator=WordEstimator(), limits=LIMITS)
        with pytest.raises(CorruptDatabaseError, match="not valid UTF-8"):
            await memory.items()
        with pytest.raises(CorruptDatabaseError):
            await memory.add("user", "refused")
    async with MemoryStore.open(path) as reopened:  # a new store tries again
        await reopened.session("s", estimator=WordEstimator(), limits=LIMITS).add("user", "ok")


def test_the_cli_never_reports_a_stored_item_as_failed(tmp_path: Path) -> None:
    """The append commits; the read for its display meets the damage: exit 0, the seq said,
    the failure after it said too (a script retrying on exit 1 would store it twice)."""
    path = tmp_path / "cli.db"
    asyncio.run(filled(path, 5))
    not_utf8(path, 2)
    result = memstore_cli(path, "add", "s", "stored anyway")
    assert result.returncode == 0, result.stderr
    assert "added #6" in result.stdout
    assert "Warning: the item is stored, but reading the session failed" in result.stderr
    assert "Traceback" not in result.stderr
    with closing(raw_sqlite(path)) as conn:
        assert conn.execute("SELECT max(seq) FROM items").fetchone() == (6,)


async def test_verify_refuses_a_damaged_file_at_open_and_leaves_it_untouched(
    tmp_path: Path,
) -> None:
    path = tmp_path / "verify.db"
    await filled(path, 1500)
    async with MemoryStore.open(path, verify=True) as store:  # a sound file opens
        assert (await store.session_info("s")).items_total == 1500
    garble_middle(path)
    before = digest(path)
    with pytest.raises(CorruptDatabaseError, match=r"quick_check|corrupt"):
        await MemoryStore.open(path, verify=True)
    assert digest(path) == before


async def test_an_existing_empty_file_is_left_alone_where_nothing_may_be_created(
    tmp_path: Path,
) -> None:
    path = tmp_path / "empty.db"
    path.touch()
    with pytest.raises(NotADatabaseError, match="empty file"):
        await MemoryStore.open(path, create=False)
    assert path.stat().st_size == 0 and sorted(os.listdir(tmp_path)) == ["empty.db"]


async def test_an_empty_file_becomes_a_database_readable_by_its_owner(tmp_path: Path) -> None:
    # A create that died before the first page (a full disk, an older memstore) left it:
    # it holds nothing to lose and must not block every later open.
    path = tmp_path / "empty.db"
    path.touch(mode=0o644)
    async with MemoryStore.open(path) as store:
        assert await store.check() == []
    assert path.stat().st_mode & 0o777 == 0o600


#: A child process where file writes fail as on a full disk (RLIMIT_FSIZE 0: EFBIG), which
#: exits 0 only if the create was refused with a StorageError.
NO_ROOM = """
import asyncio, os, resource, signal, sys
from memstore import MemoryStore, StorageError
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
try:
    asyncio.run(MemoryStore.open(sys.argv[1]).__aenter__())
except StorageError as error:
    os._exit(0 if "cannot create" in str(error) else 2)
os._exit(1)
"""


def test_a_create_that_fails_for_lack_of_room_leaves_no_file_behind(tmp_path: Path) -> None:
    path = tmp_path / "full.db"
    child = subprocess.run([sys.executable, "-c", NO_ROOM, str(path)], timeout=60)
    assert child.returncode == 0
    assert sorted(os.listdir(tmp_path)) == []
