"""One bind layer: every timestamp is stored in SQLAlchemy's one text form, so rows sort by
time as text (``prune --before``, ordering) even at exact-second ties."""

from __future__ import annotations

import sqlite3
from contextlib import closing
from datetime import UTC, datetime
from pathlib import Path

import pytest

from memstore import MemoryLimits, MemoryStore, WordEstimator
from memstore.db import append

LIMITS = MemoryLimits(hard=10**6, target=10**5, keep_recent=2)
EXACT = datetime(2026, 12, 1, 17, 0, 0, tzinfo=UTC)
LATER = datetime(2026, 12, 1, 17, 0, 0, 1, tzinfo=UTC)


async def test_a_zero_microsecond_time_is_stored_like_any_other(
    db_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    times = iter([EXACT, LATER, EXACT])
    monkeypatch.setattr(append, "utcnow", lambda: next(times))
    async with MemoryStore.open(db_path) as store:
        memory = store.session("t", estimator=WordEstimator(), limits=LIMITS)
        for text in ("at the second", "a microsecond later", "at the second again"):
            await memory.add("user", text)
        read_back = [item.timestamp for item in await memory.items()]
    assert read_back == [EXACT, LATER, EXACT]
    with closing(sqlite3.connect(db_path)) as conn:
        stored = [row[0] for row in conn.execute("SELECT created_at FROM items ORDER BY seq")]
        updated = conn.execute("SELECT updated_at FROM sessions").fetchone()[0]
    assert stored == [
        "2026-12-01 17:00:00.000000",
        "2026-12-01 17:00:00.000001",
        "2026-12-01 17:00:00.000000",
    ]
    assert updated == "2026-12-01 17:00:00.000000"
    assert sorted(stored) == [stored[0], stored[2], stored[1]]  # text order is time order
