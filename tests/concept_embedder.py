"""A small deterministic embedder for tests: words of one concept share a dimension.

``car``, ``sedan`` and ``vehicle`` are one concept, so "my car" and "we bought a blue sedan"
point alike although they share no word, the way a real model's vectors do; every other
word gets a dimension of its own by hash. It satisfies :class:`memstore.Embedder` by its
members alone (no base class), as a user's own embedder would.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence

CONCEPTS = {
    "car": ("car", "cars", "sedan", "vehicle", "drive", "drove"),
    "pet": ("pet", "pets", "dog", "puppy", "cat", "kitten"),
    "job": ("job", "work", "works", "employer", "career", "hired"),
    "home": ("home", "house", "apartment", "flat", "live", "lives", "moved"),
}
DIMENSIONS = 32


class ConceptEmbedder:
    """Concept dimensions first, then hashed words; records every batch it was given."""

    def __init__(self, name: str = "test:concepts", dimensions: int = DIMENSIONS) -> None:
        self.name = name
        self.dimensions = dimensions
        self.calls: list[list[str]] = []
        self.fail_next = 0  # that many calls raise before the next one succeeds

    def vector(self, text: str) -> list[float]:
        vector = [0.0] * self.dimensions
        for raw in text.casefold().split():
            word = raw.strip(".,;:!?\"'()")
            for index, members in enumerate(CONCEPTS.values()):
                if word in members:
                    vector[index] += 3.0
                    break
            else:
                digest = hashlib.sha256(word.encode()).digest()
                spare = self.dimensions - len(CONCEPTS)
                vector[len(CONCEPTS) + int.from_bytes(digest[:4], "little") % spare] += 1.0
        if not any(vector):
            vector[-1] = 1.0
        return vector

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        self.calls.append(list(texts))
        if self.fail_next:
            self.fail_next -= 1
            raise ConnectionError("the test embedder is down")
        return [self.vector(text) for text in texts]
