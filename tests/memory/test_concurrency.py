"""Many workers, one session: real OS processes on one real SQLite file.

Default runs take seconds; ``MEMSTORE_SOAK=1`` multiplies the work for a longer soak.
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from memstore import MemoryStore, Settings, WordEstimator
from memstore.config import fault_point

WORKER = Path(__file__).with_name("concurrency_worker.py")
SOAK = int(os.environ.get("MEMSTORE_SOAK", "0") or 0)
SCALE = 10 if SOAK else 1


def spawn(
    db: Path | str,
    name: str,
    n: int,
    *extra: str,
    env: dict[str, str] | None = None,
    session: str = "shared",
) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), str(db), session, name, str(n), *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def finish(proc: subprocess.Popen[str], timeout: float = 120) -> dict[str, int]:
    out, err = proc.communicate(timeout=timeout)
    assert proc.returncode == 0, err
    return json.loads(out.strip().splitlines()[-1])  # type: ignore[no-any-return]


def stored_contents(db: Path) -> dict[str, str | None]:
    with sqlite3.connect(db) as conn:
        return dict(conn.execute("SELECT content, fate FROM items"))


def acked(path: Path) -> list[str]:
    return path.read_text().splitlines() if path.exists() else []


def wait_for_acks(
    acks: Path, workers: list[str], procs: list[subprocess.Popen[str]], timeout: float = 60
) -> bool:
    """Whether each worker acknowledged an append (or already finished) before ``timeout``.

    A loaded machine may starve one worker while another finishes all its appends: the wait
    is for every worker to have had one acknowledged, not for any order among them.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        lines = acked(acks)
        if all(
            proc.poll() is not None or any(line.startswith(f"{worker}-") for line in lines)
            for worker, proc in zip(workers, procs, strict=True)
        ):
            return True
        time.sleep(0.01)
    return False


async def check(db: Path | str) -> list[str]:
    async with MemoryStore.open(db) as store:
        return [str(v) for v in await store.check()]


def integrity(db: Path) -> str:
    with sqlite3.connect(db) as conn:
        return conn.execute("PRAGMA integrity_check").fetchone()[0]  # type: ignore[no-any-return]


async def contents_by_api(url: str) -> dict[str, str | None]:
    """Every stored item's content -> its fate, read through memstore (any backend)."""
    async with MemoryStore.open(url) as store:
        history = await store.history("shared")
    return {item.content: item.fate.value if item.fate else None for item in history.items}


def test_stress_appends_and_compactions_from_many_processes(
    backend_url: str, tmp_path: Path
) -> None:
    db, calls, acks = backend_url, tmp_path / "calls", tmp_path / "acks"
    asyncio.run(check(db))  # create and migrate once, as a deployment would
    per_worker = 60 * SCALE
    procs = [
        spawn(
            db,
            f"w{i}",
            per_worker,
            "--fail-rate",
            "0.25",
            "--fail-first",
            "--slow",
            "0.05",
            "--calls",
            str(calls),
            "--acks",
            str(acks),
            "--seed",
            str(i),
        )
        for i in range(4)
    ]
    results = [finish(p) for p in procs]

    assert asyncio.run(check(db)) == []
    if not db.startswith("postgresql"):
        assert integrity(Path(db)) == "ok"
    stored = asyncio.run(contents_by_api(db))
    promised = acked(acks)
    assert len(promised) == 4 * per_worker
    missing = [c for c in promised if c not in stored]
    assert missing == []  # every acknowledged append is active or has a recorded fate
    assert len(stored) == len(promised)  # and nothing was duplicated

    async def reports() -> list:  # type: ignore[type-arg]
        async with MemoryStore.open(db) as store:
            return await (await store.attach("shared")).reports()

    all_reports = asyncio.run(reports())
    assert [r.compaction_count for r in all_reports] == list(range(1, len(all_reports) + 1))
    summarizing = [r for r in all_reports if r.summarizer is not None]
    assert summarizing, "the limits are meant to force summarizing compactions"
    assert any(r.summary_error for r in all_reports)  # failures happened and were recorded
    total_calls = len(acked(calls))
    assert total_calls == sum(r["summarizer_calls"] for r in results)
    # Single flight: every summarizer call but a rare lost race ends in a committed compaction.
    assert total_calls / len(summarizing) <= 1.1


@pytest.mark.parametrize(
    "point", ["after-append", "after-snapshot", "before-commit", "after-commit"]
)
def test_worker_killed_at_a_named_point_leaves_a_consistent_ledger(
    tmp_path: Path, point: str
) -> None:
    db, acks = tmp_path / "killed.db", tmp_path / "acks"
    asyncio.run(check(db))
    # Fill the session close to the hard limit, then let a worker die mid-way.
    finish(spawn(db, "fill", 12, "--acks", str(acks), "--lease", "0.5"))
    victim = spawn(
        db, "victim", 40, "--acks", str(acks), "--lease", "0.5", env={"MEMSTORE_FAULT": point}
    )
    victim.communicate(timeout=60)
    assert victim.returncode == 137  # it died at the fault point, as kill -9 would leave it
    assert asyncio.run(check(db)) == []
    assert integrity(db) == "ok"
    stored = stored_contents(db)
    assert all(c in stored for c in acked(acks))

    # A survivor carries on; a lease left by the dead worker delays it by at most 0.5 s.
    time.sleep(0.6)
    survivor = finish(spawn(db, "survivor", 40, "--acks", str(acks), "--lease", "0.5"))
    assert survivor["compactions"] >= 1
    assert asyncio.run(check(db)) == []
    stored = stored_contents(db)
    assert all(c in stored for c in acked(acks))


def test_kill_9_at_random_moments(tmp_path: Path) -> None:
    db, acks = tmp_path / "random.db", tmp_path / "acks"
    asyncio.run(check(db))
    rng = random.Random(1234)
    for round_ in range(3 * SCALE):
        procs = [
            spawn(
                db,
                f"r{round_}w{i}",
                200,
                "--acks",
                str(acks),
                "--slow",
                "0.02",
                "--lease",
                "0.3",
                "--seed",
                str(i),
            )
            for i in range(3)
        ]
        # Kill only once every worker of the round has had an append acknowledged: on a
        # loaded machine a kill could otherwise land before any, and prove nothing.
        assert wait_for_acks(acks, [f"r{round_}w{i}" for i in range(3)], procs)
        time.sleep(rng.uniform(0.0, 0.8))  # then at a random moment of the run
        for proc in procs:
            proc.send_signal(signal.SIGKILL)
        for proc in procs:
            proc.communicate(timeout=30)
        assert asyncio.run(check(db)) == []
        assert integrity(db) == "ok"
        stored = stored_contents(db)
        assert all(c in stored for c in acked(acks))
    assert len(acked(acks)) > 0


def test_paused_lease_holder_cannot_commit_over_a_newer_compaction(tmp_path: Path) -> None:
    db, marker = tmp_path / "paused.db", tmp_path / "marker"
    asyncio.run(check(db))
    finish(spawn(db, "fill", 14, "--lease", "1"))
    # The holder's summarizer takes up to 2 s; it announces itself in the marker file.
    holder = spawn(
        db,
        "holder",
        12,
        "--lease",
        "1",
        "--pause-first",
        "2",
        "--marker",
        str(marker),
        "--stale-summary",
    )
    deadline = time.time() + 60
    while not marker.exists() and time.time() < deadline:
        time.sleep(0.02)
    assert marker.exists(), "the holder never started a compaction"
    holder.send_signal(signal.SIGSTOP)
    try:
        time.sleep(1.3)  # past its lease

        async def compact_elsewhere() -> int:
            async def quick(previous: str | None, items: object) -> str:
                return "summary by the other worker"

            settings = Settings(lease_s=1)
            async with MemoryStore.open(db, settings=settings) as store:
                info = await store.session_info("shared")
                memory = store.session(
                    "shared", limits=info.limits, estimator=WordEstimator(), summarizer=quick
                )
                report = await memory.compact()
                assert report is not None
                return report.compaction_count

        number = asyncio.run(compact_elsewhere())
    finally:
        holder.send_signal(signal.SIGCONT)
    held = finish(holder)
    assert held["conflicts"] >= 1  # its commit was rejected by the fence
    with sqlite3.connect(db) as conn:
        # The compaction the holder planned before the pause never landed: no summary it
        # produced in that first call exists, and the other worker's compaction stands.
        stale = conn.execute(
            "SELECT count(*) FROM summaries WHERE content LIKE 'STALE-holder-1:%'"
        ).fetchone()[0]
        other = conn.execute(
            "SELECT content FROM summaries WHERE compaction_number = ?", (number,)
        ).fetchone()
    assert stale == 0
    assert other == ("summary by the other worker",)
    assert asyncio.run(check(db)) == []


def test_every_fault_point_is_passed_when_unset(tmp_path: Path) -> None:
    """MEMSTORE_FAULT is unset (the autouse fixture clears it): an append and a compaction
    pass every named point (after-append, after-snapshot, before-commit, after-commit) and
    commit, in this very process."""

    async def append_and_compact() -> tuple[int | None, list[str]]:
        async with MemoryStore.open(tmp_path / "faults.db") as store:
            memory = store.session("f", estimator=WordEstimator())
            for n in range(6):
                await memory.add("user", f"message number {n}")
            report = await memory.compact()
            return (None if report is None else report.compaction_count), [
                item.content for item in await memory.items()
            ]

    for name in ("after-append", "after-snapshot", "before-commit", "after-commit"):
        assert fault_point(name) is None
    count, kept = asyncio.run(append_and_compact())
    assert count == 1
    assert kept and kept[-1] == "message number 5"


def test_forked_child_opens_its_own_connections(tmp_path: Path) -> None:
    db = tmp_path / "fork.db"

    async def opened() -> MemoryStore:
        return await MemoryStore.open(db)

    store = asyncio.run(opened())
    memory = store.session("forked", estimator=WordEstimator())
    asyncio.run(memory.add("user", "from the parent"))
    pid = os.fork()
    if pid == 0:  # pragma: no cover - runs in the child
        code = 0
        try:
            asyncio.run(memory.add("user", "from the child"))
        except BaseException:
            code = 1
        os._exit(code)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    asyncio.run(memory.add("user", "parent again"))

    async def contents() -> list[str]:
        items = await memory.items()
        await store.close()
        return [i.content for i in items]

    assert asyncio.run(contents()) == ["from the parent", "from the child", "parent again"]
