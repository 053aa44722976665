"""``memstore consolidate SESSION [--dry-run]``, provenance in ``ltm list`` / ``history``, the
scope in ``sessions`` / ``show``, and ``purge`` / ``prune`` keeping derived entries unless
``--with-derived``."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner, Result
from conftest import table_counts

from memstore import MemoryStore, WordEstimator
from memstore.cli import main

SCOPE = "user:alice"
TURNS = [
    ("user", "My sister Maria moved to Lisbon last month and she works as a nurse there."),
    ("assistant", "That sounds exciting. Do you visit her often, or does she come to you?"),
    ("user", "I am flying to Lisbon on March 14 to see her, and I love the food there."),
    ("assistant", "My favorite dish is grilled sardines, and I always order them in Porto."),
    ("user", "I adopted a beagle named Biscuit in January and he loves the beach."),
]


def run(db: str | Path, *args: str) -> Result:
    return CliRunner().invoke(main, ["--db", str(db), *args], env={"COLUMNS": "250"})


def ok_json(db: str | Path, *args: str) -> Any:
    result = run(db, *args, "--json")
    assert result.exit_code == 0, result.output
    return json.loads(result.stdout)


async def prepare(db: str, session_id: str = "s1", scope: str | None = SCOPE) -> None:
    async with MemoryStore.open(db) as store:
        memory = store.session(session_id, scope=scope, estimator=WordEstimator())
        for role, text in TURNS:
            await memory.add(role, text)


async def counts(db: str) -> dict[str, int]:
    async with MemoryStore.open(db) as store:
        return await table_counts(store)


def test_consolidate_previews_then_writes_entries_that_name_their_source(
    backend_url: str,
) -> None:
    asyncio.run(prepare(backend_url))
    before = asyncio.run(counts(backend_url))
    preview = ok_json(backend_url, "consolidate", "s1", "--dry-run")
    assert preview["dry_run"] and preview["number"] is None and preview["written"] >= 1
    assert asyncio.run(counts(backend_url)) == before  # the dry run wrote nothing

    human = run(backend_url, "consolidate", "s1")
    assert human.exit_code == 0, human.output
    assert "consolidation 1" in human.output and f"scope {SCOPE}" in human.output
    entries = ok_json(backend_url, "ltm", "list", "--scope", SCOPE)
    assert len(entries) == preview["written"]
    assert all(e["source"]["session"] == "s1" and e["source"]["seqs"] for e in entries)
    listing = run(backend_url, "ltm", "list", "--scope", SCOPE)
    assert "session s1 #" in listing.output and "extractive" in listing.output
    history = run(backend_url, "ltm", "history", entries[0]["key"], "--scope", SCOPE)
    assert history.exit_code == 0 and "session s1 #" in history.output

    again = ok_json(backend_url, "consolidate", "s1")
    assert again["number"] is None and again["proposed"] == 0

    sessions = ok_json(backend_url, "sessions")
    assert [(s["id"], s["scope"]) for s in sessions] == [("s1", SCOPE)]
    assert f"scope {SCOPE}" in run(backend_url, "show", "s1").output


def test_an_unscoped_session_needs_a_scope(tmp_path: Path) -> None:
    db = str(tmp_path / "plain.db")
    asyncio.run(prepare(db, "plain", None))
    refused = run(db, "consolidate", "plain")
    assert refused.exit_code == 2 and "--scope" in refused.output
    assert "Traceback" not in refused.output
    # It says what is wrong with the session, not with a --scope that was never given.
    assert "session 'plain' belongs to no scope" in refused.stderr
    assert "Invalid value" not in refused.stderr and "store.session" not in refused.stderr
    done = ok_json(db, "consolidate", "plain", "--scope", SCOPE)
    assert done["scope"] == SCOPE and done["written"] >= 1


def test_purge_keeps_derived_entries_unless_asked(backend_url: str) -> None:
    asyncio.run(prepare(backend_url))
    ok_json(backend_url, "consolidate", "s1")
    derived = {e["key"] for e in ok_json(backend_url, "ltm", "list", "--scope", SCOPE)}
    purged = run(backend_url, "purge", "s1", "--yes")
    assert purged.exit_code == 0, purged.output
    assert "kept long-term entry" in purged.output and "--with-derived" in purged.output
    assert {e["key"] for e in ok_json(backend_url, "ltm", "list", "--scope", SCOPE)} == derived

    asyncio.run(prepare(backend_url))  # the same conversation again, then purged for good
    ok_json(backend_url, "consolidate", "s1")
    purged = run(backend_url, "purge", "s1", "--yes", "--with-derived")
    assert purged.exit_code == 0, purged.output
    assert ok_json(backend_url, "ltm", "list", "--scope", SCOPE) == []


def test_add_starts_a_scoped_session_that_consolidates_there(tmp_path: Path) -> None:
    db = tmp_path / "scoped.db"
    for role, text in TURNS:
        added = run(db, "add", "s1", text, "--role", role, "--scope", SCOPE, "--estimator", "words")
        assert added.exit_code == 0, added.output
    sessions = ok_json(db, "sessions")
    assert [(info["id"], info["scope"]) for info in sessions] == [("s1", SCOPE)]
    done = ok_json(db, "consolidate", "s1")  # its own scope: no --scope needed
    assert done["scope"] == SCOPE and done["written"] >= 1
    assert ok_json(db, "ltm", "list", "--scope", SCOPE)


def test_add_keeps_the_scope_a_session_started_in(tmp_path: Path) -> None:
    db = tmp_path / "kept.db"
    assert run(db, "add", "s1", "hello", "--scope", SCOPE).exit_code == 0
    assert run(db, "add", "plain", "hello").exit_code == 0
    before = asyncio.run(counts(str(db)))
    other = run(db, "add", "s1", "more", "--scope", "user:bob")
    late = run(db, "add", "plain", "more", "--scope", SCOPE)
    bad = run(db, "add", "s2", "more", "--scope", "Bad")
    for refused, said in [
        (other, "session 's1' was started in scope 'user:alice'"),
        (late, "session 'plain' was started in no scope"),
        (bad, "'Bad' is not a valid scope"),
    ]:
        assert refused.exit_code == 2 and "'--scope'" in refused.stderr
        assert said in refused.stderr
    assert asyncio.run(counts(str(db))) == before
    assert run(db, "add", "s1", "more").exit_code == 0  # without --scope: its own


def test_a_compaction_of_a_scoped_session_consolidates_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As in the API (``store.session(id, scope=...)``): what a compaction removes from a
    scoped session is distilled into its scope, by the ``add`` that set it off."""
    monkeypatch.setenv("MEMORY_HARD_LIMIT", "90")
    monkeypatch.setenv("MEMORY_TARGET_LIMIT", "20")
    monkeypatch.setenv("MEMORY_KEEP_RECENT", "1")
    db = tmp_path / "compacting.db"
    for role, text in TURNS:
        added = run(db, "add", "s1", text, "--role", role, "--scope", SCOPE, "--estimator", "words")
        assert added.exit_code == 0, added.output
    assert ok_json(db, "sessions")[0]["compaction_count"] >= 1
    entries = ok_json(db, "ltm", "list", "--scope", SCOPE)
    assert entries and all(entry["source"]["session"] == "s1" for entry in entries)
