"""``memstore input NEW --scope S``: the input a returning user's fresh session would start
with (the scope's memories, and with ``--recall`` what its other sessions said), written
nowhere."""

from __future__ import annotations

import asyncio
import hashlib
import json
from pathlib import Path

from clients import memstore_cli
from conftest import table_counts

from memstore import MemoryLimits, MemoryStore, WordEstimator


async def two_users(path: Path) -> dict[str, int]:
    async with MemoryStore.open(path) as store:
        limits = MemoryLimits(hard=60, target=40, keep_recent=2)
        alice = store.session("a-1", scope="user:alice", estimator=WordEstimator(), limits=limits)
        await alice.add("user", "I am flying to Lisbon next Tuesday for the conference.")
        for i in range(8):
            await alice.add("assistant", f"Noted, item {i} of the packing list.")
        bob = store.session("b-1", scope="user:bob", estimator=WordEstimator())
        await bob.add("user", "I am flying to Lisbon too, says Bob.")
        await store.ltm.set("editor", "neovim", scope="user:alice")
        await store.ltm.set("editor", "emacs", scope="user:bob")
        return await table_counts(store)


async def counts(path: Path) -> dict[str, int]:
    async with MemoryStore.open(path, read_only=True) as store:
        return await table_counts(store)


def test_a_new_session_of_a_scope_is_previewed_and_nothing_written(db_path: Path) -> None:
    before = asyncio.run(two_users(db_path))
    digest = hashlib.sha256(db_path.read_bytes()).hexdigest()
    args = ["input", "fresh", "--scope", "user:alice", "--recall", "When do I fly to Lisbon?"]
    result = memstore_cli(db_path, *args)
    assert result.returncode == 0, result.stderr
    shown = "\n".join(message["content"] for message in json.loads(result.stdout))
    assert "neovim" in shown  # the scope's memories
    assert "next Tuesday for the conference" in shown and '"session":"a-1"' in shown  # recall
    assert "emacs" not in shown and "says Bob" not in shown  # never another scope's
    assert hashlib.sha256(db_path.read_bytes()).hexdigest() == digest
    assert asyncio.run(counts(db_path)) == before
    assert "fresh" not in memstore_cli(db_path, "sessions", "--json").stdout


def test_without_a_scope_a_missing_session_says_how_to_preview_one(db_path: Path) -> None:
    asyncio.run(two_users(db_path))
    result = memstore_cli(db_path, "input", "fresh", "--recall", "Lisbon")
    assert result.returncode == 1
    assert result.stderr.startswith("Error: session 'fresh' does not exist (with --scope")
    assert len(result.stderr.splitlines()) == 1


def test_an_unscoped_session_recalls_across_the_scope_it_is_shown_with(db_path: Path) -> None:
    asyncio.run(two_users(db_path))
    assert memstore_cli(db_path, "add", "old", "hello", "--estimator", "words").returncode == 0
    result = memstore_cli(db_path, "input", "old", "--scope", "user:alice", "--recall", "Lisbon")
    assert result.returncode == 0, result.stderr
    assert "next Tuesday for the conference" in result.stdout and "says Bob" not in result.stdout
