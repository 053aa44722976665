"""The in-process cache of vectors stays right when another OS process writes or deletes
vectors (its generation and count checks), on both backends."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from concept_embedder import ConceptEmbedder

from memstore import MemoryLimits, MemoryStore, WordEstimator

NEVER = MemoryLimits(hard=10_000, target=9_000, keep_recent=2)
TESTS = Path(__file__).resolve().parents[1]


def in_another_process(url: str, body: str) -> None:
    """Run ``body`` (async code with ``store`` open on ``url`` with the test embedder) in a
    process of its own."""
    script = textwrap.dedent(
        """
        import asyncio, sys
        sys.path.insert(0, {tests!r})
        from concept_embedder import ConceptEmbedder
        from memstore import MemoryLimits, MemoryStore, WordEstimator

        async def main():
            async with MemoryStore.open({url!r}, embedder=ConceptEmbedder()) as store:
        {body}

        asyncio.run(main())
        """
    ).format(tests=str(TESTS), url=url, body=textwrap.indent(textwrap.dedent(body), " " * 8))
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr


async def test_vectors_another_process_writes_or_deletes_are_seen(backend_url: str) -> None:
    async with MemoryStore.open(backend_url, embedder=ConceptEmbedder()) as store:
        mine = store.session("mine", limits=NEVER, estimator=WordEstimator())
        await mine.add("user", "Our puppy chewed the sofa.")
        first = await store.search("my dog", mode="semantic")
        assert [hit.session_id for hit in first] == ["mine"]
        assert store.embedding is not None and len(store.embedding.cache) == 1

        in_another_process(
            backend_url,
            """
            memory = store.session("theirs", limits=MemoryLimits(10_000, 9_000, 2),
                                   estimator=WordEstimator())
            await memory.add("user", "We bought a blue sedan.")
            await store.embed_pending()
            """,
        )
        hits = await store.search("my car", mode="semantic", limit=1)
        assert [(hit.session_id, hit.text) for hit in hits] == [
            ("theirs", "We bought a blue sedan.")
        ]
        assert len(store.embedding.cache) == 2

        in_another_process(backend_url, 'await store.purge("theirs")')
        hits = await store.search("my car", mode="semantic")
        assert [hit.session_id for hit in hits] == ["mine"]
        assert len(store.embedding.cache) == 1  # reloaded without the deleted vectors
