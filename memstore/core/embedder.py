"""What memstore needs of an embedder, and the three ways a search may rank.

An **embedder** turns texts into vectors whose closeness says how alike their meanings are,
so a question about "my car" finds "we bought a blue sedan". Any object with these three
members is one (a structural protocol, as the Agents SDK's ``Session`` is):

* ``name`` (str): identifies the model *and* its vectors. Vectors are stored under it, a
  query only ever compares vectors of one name, and a name keeps its dimension count for
  good: give a new name to a new model or a new vector size.
* ``dimensions`` (int): the length of every vector it returns.
* ``async embed(texts) -> vectors``: one vector per text, in order (a list of float lists,
  or a 2-D numpy array). Called with batches of texts, never on the append path.

memstore normalizes the vectors itself and ranks by cosine similarity. Two embedders ship:
:class:`~memstore.model_side.embedders.OpenAIEmbedder` and the offline
:class:`~memstore.model_side.embedders.WordLlamaEmbedder`.

A search ranks by ``"lexical"`` (full text alone), ``"semantic"`` (vectors alone) or
``"hybrid"`` (both, fused: :mod:`memstore.core.fusion`), which is the default whenever the
store has an embedder; without one, only full text exists.

Pure: storing and scoring vectors is :mod:`memstore.db.vectors`', running the embedder
:mod:`memstore.memory.embedding`'s.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any, Literal, Protocol, runtime_checkable

from memstore.errors import ValidationError

SearchMode = Literal["lexical", "semantic", "hybrid"]
SEARCH_MODES: tuple[SearchMode, ...] = ("lexical", "semantic", "hybrid")
#: An embedder's name is stored with every vector (a column of that width).
MAX_EMBEDDER_NAME = 200
#: Characters of a text that are embedded: API models refuse long inputs (8,191 tokens for
#: OpenAI's), and the opening of a long tool result says what it is about.
MAX_EMBEDDED_CHARS = 8_000


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into vectors (see the module docstring)."""

    name: str
    dimensions: int

    async def embed(self, texts: Sequence[str]) -> Any:
        """One vector of ``dimensions`` floats per text, in order.

        Args:
            texts: A batch of texts (at most a few hundred, each at most
                :data:`MAX_EMBEDDED_CHARS` characters).

        Returns:
            A list of float sequences, or a 2-D array of shape ``(len(texts), dimensions)``.
        """
        ...


def check_embedder(embedder: object) -> Embedder:
    """``embedder`` if it has the protocol's three members, else a :class:`ValidationError`
    naming ``embedder``."""
    name = getattr(embedder, "name", None)
    if not isinstance(name, str) or not name.strip() or len(name) > MAX_EMBEDDER_NAME:
        raise ValidationError("embedder", f"needs a name of 1-{MAX_EMBEDDER_NAME} characters")
    dimensions = getattr(embedder, "dimensions", None)
    if isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1:
        raise ValidationError("embedder", f"{name!r} needs dimensions, a positive integer")
    if not callable(getattr(embedder, "embed", None)):
        raise ValidationError("embedder", f"{name!r} needs an async embed(texts) method")
    return embedder  # type: ignore[return-value]


def resolve_mode(mode: object, has_embedder: bool) -> SearchMode:
    """The mode a search runs in: ``None`` means hybrid with an embedder, else lexical.

    Raises:
        ValidationError: an unknown mode, or one that needs vectors on a store without an
            embedder (``mode``).
    """
    if mode is None:
        return "hybrid" if has_embedder else "lexical"
    if mode not in SEARCH_MODES:
        raise ValidationError("mode", f"must be one of {', '.join(SEARCH_MODES)}, got {mode!r}")
    if mode != "lexical" and not has_embedder:
        raise ValidationError("mode", f"{mode} search needs a store opened with an embedder")
    return mode  # type: ignore[return-value]
