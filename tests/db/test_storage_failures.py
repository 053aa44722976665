"""Creating or opening a database where the disk says no: a read-only file system, a file-size
limit, a full disk. Each is one line naming the problem, no traceback, and nothing left
behind that would block the next open."""

from __future__ import annotations

import resource
import shutil
import signal
import subprocess
from pathlib import Path

import pytest
from clients import memstore_cli, memstore_command

from memstore import MemoryStore, WordEstimator

UNSHARE = shutil.which("unshare")


def leftovers(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())


def in_mount_namespace(
    options: str, mountpoint: Path, *args: str
) -> subprocess.CompletedProcess[str]:
    """``memstore ARGS`` inside a user + mount namespace where ``mountpoint`` is a fresh tmpfs
    mounted with ``options`` (no root needed; the mount vanishes with the process)."""
    if UNSHARE is None or subprocess.run([UNSHARE, "-rm", "true"]).returncode != 0:
        pytest.skip("needs unprivileged user namespaces (unshare -rm)")
    command = " ".join(f"'{part}'" for part in [*memstore_command(), *args])
    script = (
        f"mount -t tmpfs -o {options} tmpfs '{mountpoint}' && {command}; rc=$?; "
        f"echo files=$(ls -A '{mountpoint}'); echo rc=$rc"
    )
    return subprocess.run(
        [UNSHARE, "-rm", "sh", "-c", script], capture_output=True, text=True, timeout=120
    )


def exit_code(done: subprocess.CompletedProcess[str]) -> int:
    return int(done.stdout.rsplit("rc=", 1)[1])


def files_left(done: subprocess.CompletedProcess[str]) -> str:
    return done.stdout.rsplit("files=", 1)[1].split("\n", 1)[0].strip()


def test_creating_a_database_on_a_read_only_file_system(tmp_path: Path) -> None:
    mount = tmp_path / "ro"
    mount.mkdir()
    done = in_mount_namespace("ro", mount, "--db", str(mount / "n.db"), "add", "s", "hello")
    assert exit_code(done) == 1, done
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "read-only" in done.stderr


def test_a_full_disk_while_creating_is_storage_full_and_leaves_nothing(tmp_path: Path) -> None:
    mount = tmp_path / "small"
    mount.mkdir()
    db = mount / "n.db"
    done = in_mount_namespace("size=24k", mount, "--db", str(db), "add", "s", "hello")
    assert exit_code(done) == 1, done
    assert "full" in done.stderr and "Traceback" not in done.stderr, done.stderr
    assert done.stderr.count("\n") == 1
    assert files_left(done) == ""  # no n.db, -wal or -shm to trip over


def limited(max_bytes: int) -> None:
    """In the child: a file-size limit, with SIGXFSZ ignored so a write past it fails (EFBIG)
    instead of killing the process."""
    signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (max_bytes, max_bytes))


@pytest.mark.parametrize("limit", [0, 4096, 20_000])
def test_a_create_under_a_file_size_limit_fails_cleanly_and_can_be_retried(
    tmp_path: Path, limit: int
) -> None:
    db = tmp_path / "n.db"
    done = subprocess.run(
        [*memstore_command(), "--db", str(db), "add", "s", "hello"],
        capture_output=True,
        text=True,
        timeout=120,
        preexec_fn=lambda: limited(limit),
    )
    assert done.returncode == 1, done.stderr
    assert "Traceback" not in done.stderr and done.stderr.count("\n") == 1, done.stderr
    assert "full" in done.stderr or "size limit" in done.stderr, done.stderr
    assert leftovers(tmp_path) == []  # no n.db, -wal or -shm to trip over
    retried = memstore_cli(db, "add", "s", "hello")
    assert retried.returncode == 0, retried.stderr


async def test_an_empty_file_does_not_block_opening(tmp_path: Path) -> None:
    db = tmp_path / "empty.db"
    db.touch(mode=0o600)
    async with MemoryStore.open(db) as store:
        memory = store.session("s", estimator=WordEstimator())
        await memory.add("user", "hello")
        assert [item.content for item in await memory.items()] == ["hello"]
    assert db.stat().st_size > 0
