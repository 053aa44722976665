"""Vectors are made off the append path: in the background after a compaction or an import,
with retries; failures are recorded and searches fall back to words; one embedder name keeps
its dimensions; a new embedder re-embeds lazily; closing the store stops the work."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Sequence
from pathlib import Path
from typing import Any

import pytest
from concept_embedder import CONCEPTS, ConceptEmbedder

from memstore import (
    EmbedderMismatchError,
    EmbeddingError,
    MemoryLimits,
    MemoryStore,
    ValidationError,
    WordEstimator,
)
from memstore.memory import embedding

NEVER = MemoryLimits(hard=10_000, target=9_000, keep_recent=2)
SMALL = MemoryLimits(hard=60, target=40, keep_recent=2)


@pytest.fixture(autouse=True)
def quick_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(embedding, "BACKOFF_S", 0.01)


@pytest.fixture
def embedder() -> ConceptEmbedder:
    return ConceptEmbedder()


@pytest.fixture
async def store(backend_url: str, embedder: ConceptEmbedder) -> AsyncIterator[MemoryStore]:
    async with MemoryStore.open(backend_url, embedder=embedder) as opened:
        yield opened


async def settle(store: MemoryStore) -> None:
    """Wait for the background run that a compaction or an import started."""
    assert store.embedding is not None
    await store.embedding.catch_up()


async def test_appends_never_call_the_embedder(
    store: MemoryStore, embedder: ConceptEmbedder
) -> None:
    memory = store.session("s", limits=NEVER, estimator=WordEstimator())
    for turn in range(20):
        await memory.add("user", f"turn {turn}")
    await memory.add_items([{"role": "user", "content": "a carried item"}])
    await asyncio.sleep(0.05)  # a background run, had one started, would have called it now
    assert embedder.calls == []
    (status,) = await store.embedding_status()
    assert (status.embedded, status.pending) == (0, 21)


async def test_a_compaction_starts_the_background_run(
    store: MemoryStore, embedder: ConceptEmbedder
) -> None:
    memory = store.session("s", limits=SMALL, estimator=WordEstimator())
    for turn in range(20):
        await memory.add("user", f"turn number {turn} of the talk")
    assert (await memory.reports()) != []
    assert store.embedding is not None and store.embedding._task is not None
    await settle(store)
    (status,) = await store.embedding_status()
    assert (status.embedded, status.pending, status.failed) == (20, 0, 0)
    assert max(len(call) for call in embedder.calls) <= embedding.BATCH


async def test_an_import_starts_the_background_run(
    store: MemoryStore, embedder: ConceptEmbedder, tmp_path: Path
) -> None:
    async with MemoryStore.open(tmp_path / "elsewhere.db") as elsewhere:
        memory = elsewhere.session("s", limits=NEVER, estimator=WordEstimator())
        await memory.add("user", "We bought a blue sedan.")
        await memory.add("assistant", "Lovely colour.")
        records = await elsewhere.export_session("s")
    await store.import_session(records)
    assert store.embedding is not None and store.embedding._task is not None
    await settle(store)
    (status,) = await store.embedding_status()
    assert (status.embedded, status.pending) == (2, 0)


async def test_a_failing_call_is_retried_with_backoff(
    store: MemoryStore, embedder: ConceptEmbedder
) -> None:
    memory = store.session("s", limits=NEVER, estimator=WordEstimator())
    await memory.add("user", "We bought a blue sedan.")
    embedder.fail_next = embedding.RETRIES - 1
    counts = await store.embed_pending()
    assert (counts.embedded, counts.failed) == (1, 0)
    assert len(embedder.calls) == embedding.RETRIES


async def test_a_call_that_keeps_failing_is_recorded_and_words_still_find(
    store: MemoryStore, embedder: ConceptEmbedder
) -> None:
    memory = store.session("s", limits=NEVER, estimator=WordEstimator())
    await memory.add("user", "We bought a blue sedan.")
    embedder.fail_next = 10**6
    counts = await store.embed_pending()
    assert (counts.embedded, counts.failed) == (0, 1)
    (status,) = await store.embedding_status()
    assert (status.failed, status.pending) == (1, 1)
    assert "the test embedder is down" in (status.last_error or "")
    # Hybrid search falls back to words; an explicit semantic search says why it cannot.
    hits = await memory.search("blue sedan", include_active=True)
    assert [hit.seq for hit in hits] == [1]
    with pytest.raises(EmbeddingError, match="test embedder is down"):
        await memory.search("blue sedan", include_active=True, mode="semantic")
    # The next run tries the failed rows again.
    embedder.fail_next = 0
    assert (await store.embed_pending()).embedded == 1
    (status,) = await store.embedding_status()
    assert (status.failed, status.pending, status.last_error) == (0, 0, None)


async def test_a_search_embeds_what_it_covers_before_ranking(
    store: MemoryStore, embedder: ConceptEmbedder
) -> None:
    memory = store.session("s", limits=NEVER, estimator=WordEstimator())
    await memory.add("user", "We bought a blue sedan.")
    hits = await memory.search("my car", include_active=True, mode="semantic")
    assert hits[0].seq == 1
    assert embedder.calls == [["my car", "We bought a blue sedan."]]  # one call, query first
    await memory.search("my car", include_active=True)
    assert embedder.calls[-1] == ["my car"]  # stored: not embedded twice


async def test_a_search_leaves_what_is_past_its_limit_to_the_background(
    store: MemoryStore, embedder: ConceptEmbedder, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embedding, "SEARCH_EMBED_LIMIT", 3)
    memory = store.session("s", limits=NEVER, estimator=WordEstimator())
    for turn in range(10):
        await memory.add("user", f"turn {turn}")
    await memory.search("turn", include_active=True)
    assert len(embedder.calls[0]) == 1 + 3
    await settle(store)
    (status,) = await store.embedding_status()
    assert status.pending == 0


async def test_one_name_keeps_its_dimensions(backend_url: str) -> None:
    async with MemoryStore.open(backend_url, embedder=ConceptEmbedder()) as store:
        memory = store.session("s", limits=NEVER, estimator=WordEstimator())
        await memory.add("user", "We bought a blue sedan.")
        await store.embed_pending()
    with pytest.raises(EmbedderMismatchError, match="32 dimensions") as caught:
        await MemoryStore.open(backend_url, embedder=ConceptEmbedder(dimensions=48))
    assert (caught.value.expected, caught.value.actual) == (32, 48)


async def test_a_new_embedder_reembeds_lazily_and_never_mixes(backend_url: str) -> None:
    first = ConceptEmbedder("test:first")
    async with MemoryStore.open(backend_url, embedder=first) as store:
        memory = store.session("s", limits=NEVER, estimator=WordEstimator())
        await memory.add("user", "We bought a blue sedan.")
        await store.embed_pending()
    second = ConceptEmbedder("test:second", dimensions=16)
    async with MemoryStore.open(backend_url, embedder=second) as store:
        statuses = {s.embedder: s for s in await store.embedding_status()}
        assert (statuses["test:first"].embedded, statuses["test:second"].pending) == (1, 1)
        memory = store.session("s", limits=NEVER, estimator=WordEstimator())
        hits = await memory.search("my car", include_active=True, mode="semantic")
        assert hits[0].seq == 1  # with its own vectors, made on the way
        assert second.calls == [["my car", "We bought a blue sedan."]]
        statuses = {s.embedder: s for s in await store.embedding_status()}
        assert statuses["test:second"].embedded == 1
        assert statuses["test:first"].embedded == 1  # the other's vectors stay, untouched


async def test_a_store_without_an_embedder_refuses_semantic_search(backend_url: str) -> None:
    async with MemoryStore.open(backend_url) as store:
        with pytest.raises(ValidationError) as caught:
            await store.search("car", mode="semantic")
        assert caught.value.field == "mode"
        with pytest.raises(ValidationError):
            await store.embed_pending()


async def test_a_read_only_store_finds_by_words_what_has_no_vector(tmp_path: Path) -> None:
    path = tmp_path / "ro.db"
    async with MemoryStore.open(path) as store:
        memory = store.session("s", limits=NEVER, estimator=WordEstimator())
        await memory.add("user", "We bought a blue sedan.")
    embedder = ConceptEmbedder()
    async with MemoryStore.open(path, read_only=True, embedder=embedder) as store:
        hits = await store.search("blue sedan")
        assert [hit.seq for hit in hits] == [1]
        assert embedder.calls == [["blue sedan"]]  # the query only: nothing is stored
        assert await store.search("my car", mode="semantic") == []


class SlowEmbedder(ConceptEmbedder):
    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        await asyncio.sleep(30)
        return await super().embed(texts)


async def test_closing_the_store_stops_the_background_run(backend_url: str) -> None:
    store = await MemoryStore.open(backend_url, embedder=SlowEmbedder())
    memory = store.session("s", limits=SMALL, estimator=WordEstimator())
    for turn in range(20):
        await memory.add("user", f"turn number {turn} of the talk")
    assert store.embedding is not None
    task = store.embedding._task
    assert task is not None and not task.done()
    await asyncio.wait_for(store.close(), timeout=10)
    assert task.done()


class PlainEmbedder:
    """An embedder whose ``embed`` is a plain function returning a numpy array."""

    name = "test:plain"
    dimensions = 32

    def __init__(self) -> None:
        self.concepts = ConceptEmbedder()

    def embed(self, texts: Sequence[str]) -> Any:
        import numpy as np

        return np.array([self.concepts.vector(text) for text in texts], dtype=np.float64)


async def test_an_embedder_may_answer_without_awaiting(tmp_path: Path) -> None:
    async with MemoryStore.open(tmp_path / "p.db", embedder=PlainEmbedder()) as store:  # type: ignore[arg-type]
        memory = store.session("s", limits=NEVER, estimator=WordEstimator())
        await memory.add("user", "Our new puppy sleeps all day.")
        hits = await memory.search("the dog", include_active=True, mode="semantic")
        assert hits[0].seq == 1


class WrongShape(ConceptEmbedder):
    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        return [[1.0, 2.0]]


async def test_vectors_of_the_wrong_shape_are_an_embedding_error(tmp_path: Path) -> None:
    async with MemoryStore.open(tmp_path / "w.db", embedder=WrongShape()) as store:
        memory = store.session("s", limits=NEVER, estimator=WordEstimator())
        await memory.add("user", "Our new puppy sleeps all day.")
        with pytest.raises(EmbeddingError, match="shape"):
            await memory.search("dog", include_active=True, mode="semantic")
        assert [hit.seq for hit in await memory.search("puppy", include_active=True)] == [1]


def test_a_store_used_on_a_second_event_loop_still_embeds(tmp_path: Path) -> None:
    embedder = ConceptEmbedder()

    async def open_and_compact() -> MemoryStore:
        store = await MemoryStore.open(tmp_path / "loops.db", embedder=embedder)
        memory = store.session("s", limits=SMALL, estimator=WordEstimator())
        for turn in range(20):
            await memory.add("user", f"turn number {turn} of the talk")
        return store

    store = asyncio.run(open_and_compact())  # that loop closed with its run cut short

    async def later() -> None:
        await store.embed_pending()
        (status,) = await store.embedding_status()
        assert status.pending == 0
        await store.close()

    asyncio.run(later())


class Vocabulary(ConceptEmbedder):
    """Knows only its concepts' words: other texts get a zero vector, as a bag-of-words
    model over a small vocabulary gives."""

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        vectors = await super().embed(texts)
        return [v[: len(CONCEPTS)] + [0.0] * (self.dimensions - len(CONCEPTS)) for v in vectors]


async def test_a_text_of_no_known_word_gets_a_vector_that_matches_nothing(
    tmp_path: Path,
) -> None:
    async with MemoryStore.open(tmp_path / "v.db", embedder=Vocabulary()) as store:
        memory = store.session("s", limits=NEVER, estimator=WordEstimator())
        await memory.add("user", "Nothing to see here at all.")
        await memory.add("user", "We bought a blue sedan.")
        hits = await memory.search("my car", include_active=True, mode="semantic")
        assert hits[0].seq == 2
        (status,) = await store.embedding_status()
        assert (status.embedded, status.failed) == (2, 0)
