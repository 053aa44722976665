"""Bad storage: not a database, schema versions, locks, read-only files, a full disk.

Every failure is a typed error, and the file is left as it was (see ``badinput.py``).
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import sys
import time
from contextlib import closing
from pathlib import Path

import pytest
from badinput import (
    FIRST,
    LIMITS,
    REPO_ROOT,
    SESSION,
    close_leaked_connections,
    counts,
    digest,
    sidecars,
    state,
)
from conftest import damage_items, raw_sqlite

from memstore import (
    CorruptDatabaseError,
    DatabaseMissingError,
    LockTimeoutError,
    MemoryStore,
    NotADatabaseError,
    SchemaOutdatedError,
    SchemaTooNewError,
    SessionMemory,
    Settings,
    StorageError,
    StorageFullError,
    WordEstimator,
)
from memstore.db.migrate import head_revision

# -- database files --------------------------------------------------------------------------


def _not_a_database(path: Path, kind: str) -> None:
    if kind == "random-bytes":
        data = os.urandom(8192)
        path.write_bytes(b"\x01" + data[1:])  # never the SQLite header by accident
    elif kind == "text":
        path.write_text("name,latency\npayment-service,1720\ncheckout,90\n")
    elif kind == "short-text":
        path.write_text("hi")
    elif kind == "sqlite-header-then-garbage":
        path.write_bytes(b"SQLite format 3\x00" + os.urandom(8000))
    else:
        raise AssertionError(kind)


@pytest.mark.parametrize(
    "kind", ["random-bytes", "text", "short-text", "sqlite-header-then-garbage"]
)
@pytest.mark.parametrize("options", [{}, {"upgrade": False}, {"create": False}])
async def test_file_that_is_not_a_database_is_left_untouched(
    tmp_path: Path, kind: str, options: dict[str, bool]
) -> None:
    path = tmp_path / "notes.db"
    _not_a_database(path, kind)
    before, mode, listing = digest(path), path.stat().st_mode, sorted(os.listdir(tmp_path))
    with pytest.raises(NotADatabaseError) as info:
        await MemoryStore.open(path, **options)
    assert type(info.value) is NotADatabaseError
    assert digest(path) == before, "the file was modified"
    assert path.stat().st_mode == mode
    assert sorted(os.listdir(tmp_path)) == listing, "files were created next to it"


async def test_truncated_database_is_refused_and_untouched(db_path: Path) -> None:
    async with MemoryStore.open(db_path) as store:
        handle = store.session(SESSION, estimator=WordEstimator())
        for n in range(40):
            await handle.add("user", f"message {n} " + "padding " * 40)
    data = db_path.read_bytes()
    assert len(data) > 8 * 4096
    db_path.write_bytes(data[: len(data) // 2])
    before = digest(db_path)
    with pytest.raises((NotADatabaseError, CorruptDatabaseError)) as info:
        async with MemoryStore.open(db_path) as store:
            await store.session(SESSION, estimator=WordEstimator()).items()
    assert "corrupt" in str(info.value) or "not an SQLite database" in str(info.value)
    assert digest(db_path) == before


async def test_directory_is_not_a_database(tmp_path: Path) -> None:
    target = tmp_path / "a-directory.db"
    target.mkdir()
    with pytest.raises(NotADatabaseError):
        await MemoryStore.open(target)
    assert target.is_dir() and os.listdir(target) == []


def _set_revision(path: Path, revision: str) -> None:
    with closing(raw_sqlite(path, isolation_level=None)) as conn:
        conn.execute("UPDATE alembic_version SET version_num = ?", (revision,))


@pytest.mark.parametrize("upgrade", [True, False])
async def test_schema_newer_than_the_code_is_refused(
    memory: SessionMemory, bad_store: MemoryStore, db_path: Path, upgrade: bool
) -> None:
    await bad_store.close()
    close_leaked_connections()
    _set_revision(db_path, "9999zz")
    before_state = state(db_path)
    close_leaked_connections()
    before_bytes = digest(db_path)
    with pytest.raises(SchemaTooNewError) as info:
        await MemoryStore.open(db_path, upgrade=upgrade)
    assert type(info.value) is SchemaTooNewError
    assert "9999zz" in str(info.value) and head_revision() in str(info.value)
    assert sidecars(db_path) == []  # the refused open closed every connection it made
    assert digest(db_path) == before_bytes
    assert state(db_path) == before_state
    # Back at head, the same file opens with its item intact.
    _set_revision(db_path, head_revision())
    async with MemoryStore.open(db_path) as store:
        items = await store.session(SESSION, estimator=WordEstimator()).items()
        assert [i.content for i in items] == [FIRST]


async def test_upgrade_false_on_an_empty_database(db_path: Path) -> None:
    with pytest.raises(SchemaOutdatedError) as info:
        await MemoryStore.open(db_path, upgrade=False)
    assert type(info.value) is SchemaOutdatedError
    assert "empty" in str(info.value) and head_revision() in str(info.value)
    with closing(raw_sqlite(db_path)) as conn:
        assert conn.execute("SELECT name FROM sqlite_master").fetchall() == []


@pytest.mark.parametrize("missing_dir", [False, True])
async def test_create_false_on_a_missing_file(tmp_path: Path, missing_dir: bool) -> None:
    path = tmp_path / "nowhere" / "memory.db" if missing_dir else tmp_path / "memory.db"
    listing = sorted(os.listdir(tmp_path))
    with pytest.raises(DatabaseMissingError) as info:
        await MemoryStore.open(path, create=False)
    assert type(info.value) is DatabaseMissingError
    assert isinstance(info.value, FileNotFoundError)
    assert str(path) in str(info.value)
    assert not path.exists() and sidecars(path) == []
    assert sorted(os.listdir(tmp_path)) == listing


async def test_create_false_opens_an_existing_database(
    memory: SessionMemory, bad_store: MemoryStore, db_path: Path
) -> None:
    await bad_store.close()
    async with MemoryStore.open(db_path, create=False, upgrade=False) as store:
        items = await store.session(SESSION, estimator=WordEstimator()).items()
        assert [i.content for i in items] == [FIRST]


# -- locks -----------------------------------------------------------------------------------


async def test_lock_timeout_is_typed_and_writes_nothing(db_path: Path) -> None:
    settings = Settings(busy_timeout_s=0.2)
    async with MemoryStore.open(db_path, settings=settings) as store:
        handle = store.session(SESSION, limits=LIMITS, estimator=WordEstimator())
        await handle.add("user", FIRST)
        before = state(db_path)
        holder = raw_sqlite(db_path, isolation_level=None)
        try:
            holder.execute("BEGIN IMMEDIATE")
            secret = "confidential-content-4242"
            started = time.perf_counter()
            with pytest.raises(LockTimeoutError) as info:
                await handle.add("user", secret)
            waited = time.perf_counter() - started
            assert type(info.value) is LockTimeoutError
            assert isinstance(info.value, TimeoutError)
            assert secret not in str(info.value)  # no stored content in errors
            assert 0.1 < waited < 3.0, f"waited {waited:.2f}s for a 0.2s busy timeout"
            with pytest.raises(LockTimeoutError):
                await handle.compact()
            # Readers are not blocked by the writer (WAL).
            assert [i.content for i in await handle.items()] == [FIRST]
        finally:
            holder.execute("ROLLBACK")
            holder.close()
        assert state(db_path) == before
        # The store is still usable once the lock is gone.
        await handle.add("user", "after the lock")
        assert counts(db_path)["items"] == 2


async def test_open_while_another_process_writes(
    memory: SessionMemory, bad_store: MemoryStore, db_path: Path
) -> None:
    await bad_store.close()
    holder = raw_sqlite(db_path, isolation_level=None)
    try:
        holder.execute("BEGIN IMMEDIATE")
        before = state(db_path)
        async with MemoryStore.open(db_path, settings=Settings(busy_timeout_s=0.2)) as store:
            handle = store.session(SESSION, limits=LIMITS, estimator=WordEstimator())
            assert [i.content for i in await handle.items()] == [FIRST]
            with pytest.raises(LockTimeoutError):
                await handle.add("user", "blocked")
        assert state(db_path) == before
    finally:
        holder.execute("ROLLBACK")
        holder.close()


# -- read-only databases and file permissions ------------------------------------------------

_READ_ONLY_CHILD = r"""
import asyncio, json, os, sys
from pathlib import Path
from memstore import MemoryStore, WordEstimator

path = Path(sys.argv[1])
try:
    os.close(os.open(path.parent / "probe", os.O_CREAT | os.O_WRONLY, 0o600))
    writable = True
except PermissionError:
    writable = os.access(path, os.W_OK)
if writable:
    print(json.dumps({"skip": "this process can still write the read-only directory"}))
    raise SystemExit(0)

async def main():
    stage = "open"
    try:
        async with MemoryStore.open(path) as store:
            stage = "read"
            handle = store.session("s1", estimator=WordEstimator())
            items = [i.content for i in await handle.items()]
            stage = "add"
            await handle.add("user", "must not be stored")
            return {"stage": "none", "items": items}
    except BaseException as error:
        return {"stage": stage, "error": type(error).__name__, "module": type(error).__module__,
                "message": str(error)}

print(json.dumps(asyncio.run(main())))
"""


def _unprivileged(command: list[str]) -> list[str]:
    """``command`` run without the capabilities that let root ignore permission bits."""
    if os.geteuid() != 0:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        pytest.skip("running as root (euid 0) and setpriv is unavailable to drop privileges")
    drop = "-dac_override,-dac_read_search,-fowner"
    return [setpriv, "--bounding-set", drop, "--inh-caps", "-all", *command]


async def test_read_only_database(
    memory: SessionMemory, bad_store: MemoryStore, db_path: Path
) -> None:
    await bad_store.close()
    close_leaked_connections()
    assert sidecars(db_path) == []
    before_state, before_bytes = state(db_path), digest(db_path)
    folder = db_path.parent
    db_path.chmod(0o444)
    folder.chmod(0o555)
    try:
        paths = [str(REPO_ROOT), *filter(None, [os.environ.get("PYTHONPATH")])]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(paths)}
        run = subprocess.run(
            _unprivileged([sys.executable, "-c", _READ_ONLY_CHILD, str(db_path)]),
            capture_output=True,
            text=True,
            timeout=60,
            env=env,
        )
    finally:
        folder.chmod(0o755)
        db_path.chmod(0o600)
    assert run.returncode == 0, run.stderr
    outcome = json.loads(run.stdout.strip().splitlines()[-1])
    if "skip" in outcome:
        pytest.skip(f"root (euid {os.geteuid()}) ignores permission bits: {outcome['skip']}")
    assert outcome.get("error") == "ReadOnlyDatabaseError", outcome
    assert outcome["module"] == "memstore.errors"
    assert outcome["stage"] in ("open", "add")
    assert digest(db_path) == before_bytes
    assert state(db_path) == before_state


@pytest.mark.parametrize("umask", [0o022, 0o000])
async def test_new_database_files_are_private(db_path: Path, umask: int) -> None:
    previous = os.umask(umask)
    try:
        async with MemoryStore.open(db_path) as store:
            await store.session(SESSION, estimator=WordEstimator()).add("user", FIRST)
            created = [db_path, *(Path(f"{db_path}{s}") for s in sidecars(db_path))]
            assert len(created) >= 2, "expected the WAL files while the store is open"
            modes = {p.name: oct(p.stat().st_mode & 0o777) for p in created}
    finally:
        os.umask(previous)
    assert set(modes.values()) == {"0o600"}, modes
    assert oct(db_path.stat().st_mode & 0o777) == "0o600"


# -- a full disk -------------------------------------------------------------------------------


async def test_full_database_is_a_typed_error_and_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """SQLITE_FULL, produced the portable way: a page budget the next write cannot fit."""
    from sqlalchemy import event

    def capped(dbapi_connection: sqlite3.Connection, *_: object) -> None:
        pages = dbapi_connection.execute("PRAGMA page_count").fetchone()[0]
        dbapi_connection.execute(f"PRAGMA max_page_count = {pages}")

    path = tmp_path / "full.db"
    async with MemoryStore.open(path) as store:
        memory = store.session("s", limits=LIMITS, estimator=WordEstimator())
        await memory.add("user", "first item")
    before = state(path)
    async with MemoryStore.open(path) as store:
        # Before the first write: the writer thread checks its connection out then.
        event.listen(store.database.sync_engine, "checkout", capped)
        memory = store.session("s", limits=LIMITS, estimator=WordEstimator())
        with pytest.raises(StorageFullError) as info:
            await memory.add("user", "x " * 20_000)
        assert "full" in str(info.value)
        assert "x x x" not in str(info.value)  # the message never echoes stored content
    assert state(path) == before


# -- stored content never in an error's chain -------------------------------------------------


async def test_a_row_that_is_not_utf8_fails_cleanly_and_its_chain_quotes_nothing(
    tmp_path: Path,
) -> None:
    import traceback

    from memstore.db.driver_errors import DriverError

    path = tmp_path / "bad-utf8.db"
    async with MemoryStore.open(path) as store:
        await store.session("s", limits=LIMITS, estimator=WordEstimator()).add("user", "hello")
    with closing(raw_sqlite(path)) as conn:  # "Secret" after a byte that is not UTF-8
        damage_items(conn, "UPDATE items SET content = CAST(x'ff536563726574' AS TEXT)")
    async with MemoryStore.open(path) as store:
        with pytest.raises(StorageError) as info:
            await store.session("s", limits=LIMITS, estimator=WordEstimator()).items()
    printed = "".join(traceback.format_exception(info.value))
    assert "Secret" not in printed and "Secret" not in str(info.value)
    assert isinstance(info.value.__cause__, DriverError)
    assert info.value.__cause__.driver_type == "sqlite3.OperationalError"
