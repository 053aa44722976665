"""Recall by meaning: a reworded question finds what a word search misses, everywhere a
query ranks, on both backends (with a small deterministic embedder: tests/concept_embedder.py)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest
from concept_embedder import ConceptEmbedder

from memstore import MemoryLimits, MemoryStore, SessionMemory, WordEstimator

ROOMY = MemoryLimits(hard=400, target=300, keep_recent=2)
ANSWER = "We bought a blue sedan last week and it is lovely."
QUESTION = "What colour is my car?"


@pytest.fixture
def embedder() -> ConceptEmbedder:
    return ConceptEmbedder()


@pytest.fixture
async def store(backend_url: str, embedder: ConceptEmbedder) -> AsyncIterator[MemoryStore]:
    async with MemoryStore.open(backend_url, embedder=embedder) as opened:
        yield opened


async def vague_summary(previous: str | None, items: object) -> str:
    return "The talk was about the weather."


def handle(store: MemoryStore, session: str = "s1", **options: object) -> SessionMemory:
    return store.session(
        session, limits=ROOMY, estimator=WordEstimator(), summarizer=vague_summary, **options
    )  # type: ignore[arg-type]


def recalled(model_input: list[dict[str, Any]]) -> str:
    """The recall message's text ("" when the input recalls nothing)."""
    found = [m["content"] for m in model_input if "<recalled>" in m["content"]]
    return found[0] if found else ""


async def forget_the_answer(store: MemoryStore, session: str = "s1") -> None:
    """The answer, then enough talk that a compaction removes it from working memory."""
    memory = handle(store, session)
    await memory.add("user", ANSWER)
    for turn in range(40):
        await memory.add("assistant", f"filler number {turn} about the weather and nothing")
    assert any(item.content == ANSWER for item in await memory.forgotten_items())


async def test_memory_search_finds_the_reworded_answer_that_words_miss(
    store: MemoryStore,
) -> None:
    await forget_the_answer(store)
    memory = handle(store)
    assert await memory.search(QUESTION, mode="lexical") == []
    hits = await memory.search(QUESTION)
    assert hits[0].text == ANSWER
    assert (await memory.search(QUESTION, mode="semantic"))[0].text == ANSWER


async def test_store_search_ranks_hybrid_by_default(store: MemoryStore) -> None:
    await forget_the_answer(store)
    assert await store.search(QUESTION, mode="lexical") == []
    assert (await store.search(QUESTION))[0].text == ANSWER


async def test_the_model_input_recalls_the_reworded_answer(store: MemoryStore) -> None:
    await forget_the_answer(store)
    memory = handle(store)
    assert "blue sedan" in recalled(await memory.build_model_input(recall=QUESTION))
    by_default = handle(store, recall_budget=150)
    await by_default.add("user", QUESTION)
    assert "blue sedan" in recalled(await by_default.build_model_input())


async def test_without_recall_words_alone_never_bring_it_back(tmp_path: Path) -> None:
    async with MemoryStore.open(tmp_path / "plain.db") as plain:
        await forget_the_answer(plain)
        model_input = await handle(plain).build_model_input(recall=QUESTION)
        assert not any("blue sedan" in message["content"] for message in model_input)


async def test_a_scoped_session_recalls_a_reworded_answer_of_another_session(
    store: MemoryStore,
) -> None:
    other = store.session("alice-1", limits=ROOMY, estimator=WordEstimator(), scope="user:alice")
    await other.add("user", ANSWER)
    later = store.session(
        "alice-2", limits=ROOMY, estimator=WordEstimator(), scope="user:alice", recall_budget=100
    )
    await later.add("user", QUESTION)
    model_input = await later.build_model_input()
    recalled = [m["content"] for m in model_input if "alice-1" in m["content"]]
    assert recalled and "blue sedan" in recalled[0]


async def test_long_term_memories_that_do_not_all_fit_rank_by_meaning(
    store: MemoryStore,
) -> None:
    await store.ltm.set("vehicle", "a blue sedan bought in March", scope="user:bob")
    for number in range(60):
        await store.ltm.set(f"note-{number}", f"unrelated detail number {number}", scope="user:bob")
    memory = store.session(
        "bob-1", limits=ROOMY, estimator=WordEstimator(), ltm_scopes=["user:bob"], ltm_budget=150
    )
    await memory.add("user", "Where is my car parked?")
    model_input = await memory.build_model_input(recall="Where is my car parked?")
    (memories,) = [m["content"] for m in model_input if "note-" in m["content"]]
    assert "blue sedan" in memories
    assert "note-59" not in memories or "note-0" not in memories  # not all of them fit


async def test_store_search_ranks_entries_by_meaning(store: MemoryStore) -> None:
    await store.ltm.set("vehicle", "a blue sedan", scope="user:bob")
    await store.ltm.set("food", "pizza on fridays", scope="user:bob")
    assert await store.search("my car", scopes=["user:bob"], mode="lexical") == []
    hits = await store.search("my car", scopes=["user:bob"])
    assert hits[0].entry is not None and hits[0].entry.key == "vehicle"


async def test_a_changed_entry_is_embedded_again(store: MemoryStore) -> None:
    await store.ltm.set("vehicle", "pizza on fridays", scope="user:bob")
    await store.search("my car", scopes=["user:bob"])  # embeds the entry as it is
    await store.ltm.set("vehicle", "a blue sedan", scope="user:bob")
    hits = await store.search("my car", scopes=["user:bob"], mode="semantic")
    assert hits[0].text == 'vehicle: "a blue sedan"'
