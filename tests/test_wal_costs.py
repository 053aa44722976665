"""benchmarks/wal_costs.py: its append-by-append timing and how it tells checkpoints apart.

Nothing here is timed against a limit; the figures are the benchmark's to print. These check
that what it prints is computed from real appends, adds up, and means what its labels say.
"""

from __future__ import annotations

from pathlib import Path
from types import ModuleType

import pytest

from memstore import MemoryStore
from memstore.db import sqlite_writer

BENCHMARKS = Path(__file__).resolve().parent.parent / "benchmarks"


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    """wal_costs, importable as the benchmarks import each other (as top-level modules), with
    the writer's checkpoint settings restored after the test."""
    monkeypatch.syspath_prepend(str(BENCHMARKS))
    for name in ("CHECKPOINT_FRAMES", "WAL_SIZE_LIMIT"):
        monkeypatch.setattr(sqlite_writer, name, getattr(sqlite_writer, name))
    import wal_costs

    return wal_costs


async def test_append_times_add_up_and_the_rows_are_memstores(
    bench: ModuleType, tmp_path: Path
) -> None:
    import append_throughput
    import single_appends

    texts = append_throughput.messages(60)
    seconds: list[float] = []
    path = tmp_path / "bench.db"
    elapsed = await single_appends.memstore_sql_only(path, texts, seconds)
    assert len(seconds) == 60 and all(s > 0 for s in seconds)
    # Each append runs from the end of the one before: together, the whole run but its end.
    assert sum(seconds) <= elapsed
    async with MemoryStore.open(path) as store:
        assert await store.check() == []
        stored = await store.session("b").items()
        assert [item.content for item in stored] == ["warm-up", *texts]


def test_checkpoints_and_the_append_after_each_are_counted_apart(bench: ModuleType) -> None:
    us = 1e-6
    seconds = [100 * us] * 20 + [900 * us, 250 * us] + [100 * us] * 20 + [300 * us, 180 * us]
    figures = bench._one_file(seconds)
    assert figures["median"] == pytest.approx(100)
    # 900 and 300 us are 3x the median or more; the appends right after them are "after".
    assert figures["checkpoint"] == pytest.approx(0.6)  # ms, the mean of 900 and 300 us
    assert figures["after"] == pytest.approx(215)
    assert figures["every"] == pytest.approx(len(seconds) / 2)
    assert figures["share"] == pytest.approx((900 + 250 + 300 + 180) / (sum(seconds) / us) * 100)
    # A last append that is slow has no "after": it is not counted as a checkpoint.
    assert bench._one_file([100 * us] * 9 + [900 * us])["checkpoint"] == 0.0


def test_an_interval_reaches_the_writers_connections(bench: ModuleType, tmp_path: Path) -> None:
    bench.checkpointing_every(1000)
    from memstore.config import Settings

    conn = sqlite_writer.connect(tmp_path / "x.db", Settings())
    try:
        assert conn.execute("PRAGMA wal_autocheckpoint").fetchone()[0] == 1000
        assert conn.execute("PRAGMA journal_size_limit").fetchone()[0] == 2 * 1000 * 4096
    finally:
        conn.close()


def test_fdatasync_rows(bench: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("tempfile.tempdir", str(tmp_path))
    (grow, over) = bench.fdatasync_costs(writes=4, rounds=1)
    assert grow[1] > 0 and over[1] > 0
    assert grow[2].endswith("x overwrite") and over[2] == "us, baseline"
    assert not list(tmp_path.iterdir())  # its files are gone
