"""Consolidation across OS processes, on SQLite and PostgreSQL: two workers consolidating one
session write each fact once, and a worker killed inside its commit leaves nothing behind."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import table_counts

from memstore import MemoryStore, WordEstimator
from memstore.extraction.slots import FACT_PREFIX

WORKER = Path(__file__).with_name("consolidation_worker.py")
SCOPE = "user:alice"
TURNS = [
    ("user", "My sister Maria moved to Lisbon last month and she works as a nurse there."),
    ("assistant", "That sounds exciting. Do you visit her often?"),
    ("user", "I am flying to Lisbon on March 14 to see her, and I love the food there."),
    ("assistant", "My favorite dish is grilled sardines, and I always order them in Porto."),
    ("user", "I adopted a beagle named Biscuit in January and he loves the beach."),
]


def spawn(db: str, *extra: str, env: dict[str, str] | None = None) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, str(WORKER), db, "s1", SCOPE, *extra],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **(env or {})},
    )


def finish(proc: subprocess.Popen[str]) -> dict[str, object]:
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    result: dict[str, object] = json.loads(out.strip().splitlines()[-1])
    return result


async def prepare(db: str) -> None:
    async with MemoryStore.open(db) as store:
        memory = store.session("s1", scope=SCOPE, estimator=WordEstimator())
        for role, text in TURNS:
            await memory.add(role, text)


async def facts(db: str) -> tuple[dict[str, tuple[object, int]], int]:
    async with MemoryStore.open(db) as store:
        entries = await store.ltm.list(scope=SCOPE, prefix=FACT_PREFIX)
        runs = await store.session(
            "s1", scope=SCOPE, estimator=WordEstimator()
        ).consolidation_reports()
        return {e.key: (e.value, e.version) for e in entries}, len(runs)


def test_two_processes_consolidating_one_session_write_each_fact_once(backend_url: str) -> None:
    asyncio.run(prepare(backend_url))
    results = [finish(p) for p in [spawn(backend_url), spawn(backend_url)]]
    committed = [r for r in results if r["number"] is not None]
    assert len(committed) == 1  # one run consumed the items; the other found nothing new
    entries, runs = asyncio.run(facts(backend_url))
    assert runs == 1
    assert entries and sorted(entries) == sorted(committed[0]["written"])  # type: ignore[arg-type]
    assert all(version == 1 for _value, version in entries.values())


def test_a_worker_killed_mid_consolidation_leaves_nothing_half_written(backend_url: str) -> None:
    asyncio.run(prepare(backend_url))

    async def counts() -> dict[str, int]:
        async with MemoryStore.open(backend_url) as store:
            return await table_counts(store)

    before = asyncio.run(counts())
    victim = spawn(backend_url, "--lease", "30", env={"MEMSTORE_FAULT": "consolidation-mid-commit"})
    victim.communicate(timeout=120)
    assert victim.returncode == 137  # died inside the commit's transaction, as kill -9 leaves it
    assert asyncio.run(counts()) == before  # no entry, no record, no history
    # The dead worker's lease (30 s) is taken over at once on this host; the run then commits.
    survivor = finish(spawn(backend_url))
    assert survivor["number"] == 1 and survivor["written"]
    entries, runs = asyncio.run(facts(backend_url))
    assert runs == 1 and sorted(entries) == sorted(survivor["written"])  # type: ignore[arg-type]
    assert all(version == 1 for _value, version in entries.values())
