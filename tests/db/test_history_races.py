"""Races between edits of history, forced every time, with real processes, on both backends.

Each test starts one ``memstore`` process with ``MEMSTORE_PAUSE`` naming a point inside its
write transaction (:func:`memstore.config.pause_point`): the process stops itself there,
holding whatever it holds, and the test starts a second process that does the racing thing.
The second one either finishes (it was not kept out of the window) or waits for a lock; only
then is the first one let go. So the bad interleaving is tried on every run, not nine times
in ten, and the outcome is what the locks make of it:

* two prunes of one session: one deletes, the other finds nothing left to delete, and the
  session's counters stay right (``memstore check``, and a later prune still works);
* a fork, or an import of a fork, racing a purge of its parent: the new session is never
  left naming a parent that no longer exists.

On SQLite the write lock already serializes all of these (every write takes it first); the
same tests run there to hold it to that.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

from clients import memstore_command

from memstore import MemoryLimits, MemoryStore, WordEstimator

LIMITS = MemoryLimits(hard=40, target=25, keep_recent=2)
#: How long a process may take to reach its pause point or to finish (a loaded machine).
PROCESS_TIMEOUT_S = 120.0
#: SQLite: how long the second process is given to reach the write lock before the first is
#: let go. Its outcome does not depend on it (SQLite's lock serializes either way); it only
#: makes the run try the same interleaving as on PostgreSQL.
SQLITE_GRACE_S = 1.5


def _env(pause: str | None = None) -> dict[str, str]:
    env = dict(os.environ)
    env["MEMSTORE_BUSY_TIMEOUT"] = "120"  # waiting for the paused process is the point
    if pause is not None:
        env["MEMSTORE_PAUSE"] = pause
    return env


def _memstore(url: str, args: Sequence[str], pause: str | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [*memstore_command(), "--db", url, *args],
        env=_env(pause),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def _wait_stopped(process: subprocess.Popen[str]) -> None:
    """Until ``process`` stopped itself at its pause point (it must not end first)."""
    deadline = time.monotonic() + PROCESS_TIMEOUT_S
    while time.monotonic() < deadline:
        pid, status = os.waitpid(process.pid, os.WNOHANG | os.WUNTRACED)
        if pid and os.WIFSTOPPED(status):
            return
        assert not pid, f"the paused process ended instead (status {status})"
        time.sleep(0.02)
    raise AssertionError("the process never reached its pause point")


async def _waiting_for_lock(url: str) -> bool:
    """PostgreSQL: whether some backend waits for a lock (the second process, kept out)."""
    import asyncpg  # type: ignore[import-untyped]

    conn = await asyncpg.connect(url.replace("postgresql+asyncpg://", "postgresql://", 1))
    try:
        return bool(await conn.fetchval("SELECT count(*) FROM pg_locks WHERE NOT granted"))
    finally:
        await conn.close()


async def _race(
    url: str, paused: Sequence[str], point: str, racing: Sequence[str]
) -> tuple[subprocess.CompletedProcess[str], subprocess.CompletedProcess[str]]:
    """Run ``paused`` until it stops at ``point``, then ``racing`` until it ends or waits for
    a lock, then let the first go on; both outcomes."""
    first = _memstore(url, paused, pause=point)
    second: subprocess.Popen[str] | None = None
    try:
        await asyncio.to_thread(_wait_stopped, first)
        second = _memstore(url, racing)
        started = time.monotonic()
        while second.poll() is None:
            if time.monotonic() - started > PROCESS_TIMEOUT_S:
                raise AssertionError("the racing process neither finished nor waited")
            if url.startswith("postgresql") and await _waiting_for_lock(url):
                break
            if not url.startswith("postgresql") and time.monotonic() - started > SQLITE_GRACE_S:
                break
            await asyncio.sleep(0.05)
    finally:
        os.kill(first.pid, signal.SIGCONT)
    out, err = await asyncio.to_thread(first.communicate, timeout=PROCESS_TIMEOUT_S)
    # waitpid above may have reaped nothing yet; communicate() collects the exit status.
    one = subprocess.CompletedProcess(first.args, first.returncode, out, err)
    assert second is not None
    out, err = await asyncio.to_thread(second.communicate, timeout=PROCESS_TIMEOUT_S)
    return one, subprocess.CompletedProcess(second.args, second.returncode, out, err)


async def _conversation(store: MemoryStore, session_id: str, turns: int) -> None:
    memory = store.session(session_id, limits=LIMITS, estimator=WordEstimator())
    for turn in range(turns):
        role = "user" if turn % 2 else "assistant"
        await memory.add(role, f"turn {turn} of {session_id} mentions topic {turn} alone")


async def _orphans(store: MemoryStore) -> list[tuple[str, str | None]]:
    """Sessions that name a parent the database does not hold."""
    infos = await store.sessions()
    ids = {info.id for info in infos}
    return [
        (i.id, i.parent_id) for i in infos if i.parent_id is not None and i.parent_id not in ids
    ]


async def test_two_prunes_at_once_delete_once(backend_url: str) -> None:
    async with MemoryStore.open(backend_url) as store:
        await _conversation(store, "s", 40)
        reports = await store.session("s", estimator=WordEstimator()).reports()
        assert len(reports) >= 6
        before = str(reports[3].committed_version + 1)
    prune = ["prune", "s", "--before", before, "--yes"]
    first, second = await _race(backend_url, prune, "prune-read", prune)
    assert first.returncode == 0, first.stderr
    assert second.returncode == 0, second.stderr
    pruned = [out.stdout.split()[1] for out in (first, second)]
    assert sorted(pruned) == ["0", "4"], (first.stdout, second.stdout)
    async with MemoryStore.open(backend_url) as store:
        assert await store.check() == []
        kept = [report.compaction_count for report in (await store.history("s")).reports]
        assert kept == list(range(5, len(reports) + 1))
        # Every later prune still works: no gap in the numbers it starts from.
        later = reports[5].committed_version + 1
        removed = sum(1 for i in (await store.history("s")).items if i.removed_by in (5, 6))
        assert await store.prune("s", before_version=later) == (2, removed)
        assert await store.check() == []


async def test_a_fork_racing_a_purge_with_forks_is_never_left_behind(backend_url: str) -> None:
    async with MemoryStore.open(backend_url) as store:
        await _conversation(store, "p", 12)
        await store.fork("p", "f1")
        await store.session("other", estimator=WordEstimator()).add("user", "unrelated")
    purge = ["purge", "p", "--with-forks", "--yes"]
    purged, forked = await _race(backend_url, purge, "purge-read", ["fork", "p", "new"])
    assert purged.returncode == 0, purged.stderr
    async with MemoryStore.open(backend_url) as store:
        assert await _orphans(store) == []
        left = sorted(info.id for info in await store.sessions())
        assert left == ["other"], (left, forked.stdout, forked.stderr)
        # The fork came too late: the parent was gone, and it said so in one line.
        assert forked.returncode == 1 and "p" in forked.stderr, forked
        assert "Traceback" not in forked.stderr
        assert await store.check() == []


async def test_an_import_racing_a_purge_of_its_parent_is_refused(
    backend_url: str, tmp_path: Path
) -> None:
    async with MemoryStore.open(backend_url) as store:
        await _conversation(store, "p", 12)
        await store.fork("p", "f")
        records = await store.export_session("f")
        await store.purge("f")
    exported = tmp_path / "f.jsonl"
    exported.write_text("".join(json.dumps(record) + "\n" for record in records))
    purge = ["purge", "p", "--yes"]
    purged, imported = await _race(backend_url, purge, "purge-read", ["import", str(exported)])
    assert purged.returncode == 0, purged.stderr
    async with MemoryStore.open(backend_url) as store:
        assert await _orphans(store) == []
        assert await store.sessions() == []
        assert imported.returncode != 0, imported.stdout
        assert "parent_id" in imported.stderr and "Traceback" not in imported.stderr


async def test_check_names_a_fork_whose_parent_is_gone(any_store: MemoryStore) -> None:
    """What the race left behind before the locks (a parent deleted under its new fork) is a
    violation ``memstore check`` names."""
    from sqlalchemy import delete

    from memstore.db.tables import sessions

    await _conversation(any_store, "p", 12)
    await any_store.fork("p", "f")
    assert await any_store.check() == []
    await any_store.database.run_write(
        lambda conn: conn.execute(delete(sessions).where(sessions.c.id == "p"))
    )
    (violation,) = await any_store.check()
    assert (violation.session_id, violation.rule) == ("f", "fork")
    assert "'p'" in violation.detail
