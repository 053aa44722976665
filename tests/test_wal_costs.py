"""benchmarks/wal_costs.py: its append-by-append timing and how it finds the checkpoints.

Nothing here is timed against a limit; the figures are the benchmark's to print. These check
that what it prints is computed from real appends, that the times cover the run, that the
checkpoints it reports are where the WAL really started over, and that the rows say so.
"""

from __future__ import annotations

import itertools
import math
from pathlib import Path
from types import ModuleType, SimpleNamespace

import pytest

from memstore import MemoryStore
from memstore.config import Settings
from memstore.db import sqlite_writer

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"
US = 1e-6


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> ModuleType:
    """wal_costs, importable as the benchmarks import each other (as top-level modules), with
    the writer's checkpoint settings and the temporary directory restored after the test."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    for name in ("CHECKPOINT_FRAMES", "WAL_SIZE_LIMIT"):
        monkeypatch.setattr(sqlite_writer, name, getattr(sqlite_writer, name))
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    import wal_costs

    return wal_costs


async def test_each_append_is_timed_from_the_end_of_the_one_before(
    bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import append_throughput
    import single_appends

    texts = append_throughput.messages(60)
    ticks = iter(range(10**6))  # a clock that moves one tick each time it is read
    monkeypatch.setattr(single_appends, "time", SimpleNamespace(perf_counter=lambda: next(ticks)))
    seconds: list[float] = []
    path = tmp_path / "bench.db"
    elapsed = await single_appends.memstore_sql_only(path, texts, seconds.append)
    # One tick per append (its end), one to resume after the callback, one at the end: each
    # append's time starts where the one before (and its callback) ended.
    assert seconds == [1] * 60
    assert elapsed == 2 * 60 + 1
    async with MemoryStore.open(path) as store:  # real rows, as memstore's appends store them
        assert await store.check() == []
        stored = await store.session("b").items()
        assert [item.content for item in stored] == ["warm-up", *texts]


def test_restarts_are_read_from_the_wal_header(bench: ModuleType) -> None:
    import append_throughput

    texts = append_throughput.messages(40)
    bench.checkpointing_every(30)  # five or so appends a cycle, at about six pages each
    seconds, restarts = bench.timed_appends(texts)
    assert len(seconds) == 40 and all(s > 0 for s in seconds)
    assert len(restarts) >= 5
    assert all(3 <= b - a <= 7 for a, b in itertools.pairwise(restarts))
    bench.checkpointing_every(10**6)
    assert bench.timed_appends(texts)[1] == []  # never checkpointed: never started over


def test_a_restart_is_the_append_after_which_the_salt_changed(bench: ModuleType) -> None:
    # Salt-1 read after each append: appends 3 and 5 wrote the first frames of a new WAL.
    assert bench.restarts_of([7, 7, 7, 8, 8, 9]) == [3, 5]
    assert bench.restarts_of([7]) == [] and bench.restarts_of([]) == []


def test_one_file_counts_only_the_appends_around_a_restart(bench: ModuleType) -> None:
    seconds = [100 * US] * 44
    seconds[5] = 5000 * US  # slow, but no checkpoint: not counted
    seconds[20], seconds[21] = 900 * US, 450 * US  # a checkpoint; the next one starts over
    seconds[42], seconds[43] = 300 * US, 180 * US
    f = bench.one_file(seconds, [21, 43])
    assert f["median"] == pytest.approx(100)
    assert (f["checkpoints"], f["every"]) == (2, 22)
    assert f["checkpoint"] == pytest.approx(0.6)  # ms: the mean of 900 and 300 us
    assert f["after"] == pytest.approx(315)
    # What the four cost above four median appends, as a share of the run.
    assert f["above"] == pytest.approx((900 + 450 + 300 + 180 - 400) / 10730 * 100)
    none = bench.one_file([100 * US] * 10, [])
    assert none["checkpoints"] == 0 and math.isnan(none["checkpoint"]) and none["above"] == 0
    assert bench.rows(none)[3][2] == "none in this run"


def test_intervals_take_turns_and_keep_their_own_figures(
    bench: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    times = {300: [100, 900, 300, 100], 1000: [200, 200, 200, 200]}  # us
    restarts = {300: [2], 1000: []}
    calls: list[int] = []

    def fake_timed_appends(texts: list[str]) -> tuple[list[float], list[int]]:
        pages = sqlite_writer.CHECKPOINT_FRAMES
        calls.append(pages)
        return [us * US for us in times[pages]], restarts[pages]

    monkeypatch.setattr(bench, "timed_appends", fake_timed_appends)
    short, long = bench.append_costs(["x"] * 4, 3, [300, 1000])
    assert calls == [300, 1000, 1000, 300, 300, 1000]
    figures = {label: (value, note) for label, value, note in short}
    assert figures["median append"][0] == pytest.approx(200)
    assert figures["mean append"] == (pytest.approx(350), "us; 1.75 x median")
    assert figures["appends whose COMMIT checkpointed"] == (
        pytest.approx(0.9),
        "ms each; 1, one in 4 appends",
    )
    assert figures["the append after each (the WAL starts over)"][0] == pytest.approx(300)
    assert figures["both, above as many median appends"][0] == pytest.approx(800 / 1400 * 100)
    assert [(label, note) for label, _, note in long][3] == (
        "appends whose COMMIT checkpointed",
        "none in this run",
    )
    assert long[0][1] == pytest.approx(200) and long[5][1] == 0


def test_an_interval_reaches_the_writers_connections(bench: ModuleType, tmp_path: Path) -> None:
    bench.checkpointing_every(1000)
    conn = sqlite_writer.connect(tmp_path / "x.db", Settings())
    try:
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert conn.execute("PRAGMA journal_size_limit").fetchone()[0] == 2 * 1000 * 4096
    finally:
        conn.close()


def test_fdatasync_rows(bench: ModuleType, tmp_path: Path) -> None:
    grow, over = bench.fdatasync_costs(writes=4, rounds=1)
    assert grow[1] > 0 and over[1] > 0
    assert grow[2].endswith("x overwrite") and over[2] == "us, baseline"
    assert not list(tmp_path.iterdir())  # its files are gone
