"""Shared by the long-term memory tests: a controllable clock and row counts."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from conftest import table_counts

from memstore import MemoryStore


class FakeClock:
    """``store.ltm.clock`` under the test's control."""

    def __init__(self) -> None:
        self.now = datetime(2030, 1, 1, 12, 0, tzinfo=UTC)

    def __call__(self) -> datetime:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += timedelta(seconds=seconds)


def install_clock(store: MemoryStore) -> FakeClock:
    """Give ``store.ltm`` a fake clock and return it."""
    fake = FakeClock()
    store.ltm.clock = fake
    return fake


async def ltm_counts(store: MemoryStore) -> tuple[int, int]:
    """Rows in (ltm_entries, ltm_history)."""
    counts = await table_counts(store)
    return counts["ltm_entries"], counts["ltm_history"]
