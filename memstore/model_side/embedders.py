"""The embedders memstore ships: OpenAI's embeddings API, and WordLlama offline.

Both satisfy :class:`memstore.Embedder` (``name``, ``dimensions``, ``async embed(texts)``);
so does any object of yours with those three members.

* :class:`OpenAIEmbedder` calls ``client.embeddings.create`` on the ``openai`` client you
  give it (OpenAI, Azure, or any compatible server: the stand-in server answers it offline).
  Strong vectors: a question finds answers that share no word with it.
* :class:`WordLlamaEmbedder` runs `WordLlama <https://github.com/dleemiller/WordLlama>`_, a
  static word-embedding model whose weights ship in its wheel (``pip install
  'memstore-agents[wordllama]'``): no network, no GPU, tens of thousands of texts a second on two
  cores. Its vector of a text is the average of its words' vectors, with no sense of word
  order or context: good at synonyms and related words (``car`` near ``sedan``), weak at
  paraphrases that share no related word (docs/recall.md gives the figures).

:func:`embedder_from_spec` builds one from the command line's ``--embedder`` value.
"""

from __future__ import annotations

import asyncio
import importlib.util
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memstore.errors import EmbeddingError, ModelConfigurationError, ValidationError

if TYPE_CHECKING:
    from openai import AsyncOpenAI

#: The vector size of OpenAI's embedding models (another model needs ``dimensions=``).
OPENAI_DIMENSIONS = {
    "text-embedding-3-small": 1536,
    "text-embedding-3-large": 3072,
    "text-embedding-ada-002": 1536,
}
DEFAULT_OPENAI_MODEL = "text-embedding-3-small"
#: The WordLlama model its wheel carries (256 dimensions).
WORDLLAMA_CONFIG = "l2_supercat"
WORDLLAMA_DIMENSIONS = 256
#: Texts per step of WordLlama's own batching: it pads a step's texts to the longest, so
#: small steps pay less padding; on chat turns 16 embedded ~7,600 texts/s, 64 ~5,700 and
#: 256 ~3,700 (one thread, this project's machine).
WORDLLAMA_BATCH = 16
INSTALL_HINT = "the offline embedder needs WordLlama: pip install 'memstore-agents[wordllama]'"


class OpenAIEmbedder:
    """Embeddings from ``client.embeddings.create``.

    Args:
        client: An ``openai.AsyncOpenAI`` (its key, base URL, retries and timeout are yours).
        model: The embedding model.
        dimensions: Shorter vectors (the text-embedding-3 models accept it); required for a
            model memstore does not know.

    Its ``name`` is ``openai:MODEL`` (``openai:MODEL@DIMENSIONS`` when shortened): vectors of
    another model or size are stored apart and never compared.

    Raises:
        ValidationError: an unknown model without ``dimensions``, or bad ``dimensions``.
    """

    def __init__(
        self,
        client: AsyncOpenAI,
        model: str = DEFAULT_OPENAI_MODEL,
        *,
        dimensions: int | None = None,
    ) -> None:
        if dimensions is not None and (
            isinstance(dimensions, bool) or not isinstance(dimensions, int) or dimensions < 1
        ):
            raise ValidationError("dimensions", f"must be a positive integer, got {dimensions!r}")
        known = OPENAI_DIMENSIONS.get(model)
        if dimensions is None and known is None:
            raise ValidationError("dimensions", f"give the vector size of model {model!r}")
        self.client = client
        self.model = model
        self._shortened = dimensions is not None and dimensions != known
        self.dimensions: int = dimensions or known or 0
        self.name = f"openai:{model}" + (f"@{self.dimensions}" if self._shortened else "")

    async def embed(self, texts: Sequence[str]) -> list[list[float]]:
        """One vector per text, in order (one API request).

        Raises:
            EmbeddingError: the API failed (status, timeout, connection) or answered
                something else than one embedding per text.
        """
        import openai

        options: dict[str, Any] = {"model": self.model, "input": list(texts)}
        if self._shortened:
            options["dimensions"] = self.dimensions
        try:
            reply = await self.client.embeddings.create(encoding_format="float", **options)
        except openai.APIStatusError as error:
            raise EmbeddingError(f"{self.name}: HTTP {error.status_code}") from error
        except openai.APIError as error:  # timeouts, connection failures, bad bodies
            raise EmbeddingError(f"{self.name}: {type(error).__name__}") from error
        data = sorted(reply.data, key=lambda item: item.index)
        if len(data) != len(texts):
            raise EmbeddingError(f"{self.name}: {len(data)} embedding(s) for {len(texts)} texts")
        return [list(item.embedding) for item in data]


class WordLlamaEmbedder:
    """WordLlama's 256-dimension static embeddings, offline (the ``wordllama`` extra).

    The model loads on first use, in a thread (about 0.2 s), from the weights and tokenizer
    in its own package: it never reaches the network (its default ``load()`` would fetch a
    tokenizer from a hub). Each batch is embedded in a thread, off the event loop.

    Raises:
        ModelConfigurationError: WordLlama is not installed (``wordllama``).
    """

    name = f"wordllama:{WORDLLAMA_CONFIG}_{WORDLLAMA_DIMENSIONS}"
    dimensions = WORDLLAMA_DIMENSIONS

    def __init__(self) -> None:
        if importlib.util.find_spec("wordllama") is None:
            raise ModelConfigurationError("wordllama", INSTALL_HINT)
        self._model: Any = None
        self._loading = threading.Lock()

    def _load(self) -> Any:
        with self._loading:
            if self._model is None:
                import wordllama
                from wordllama import WordLlama

                here = Path(wordllama.__file__).parent
                self._model = WordLlama.load(
                    config=WORDLLAMA_CONFIG,
                    cache_dir=here,
                    dim=WORDLLAMA_DIMENSIONS,
                    disable_download=True,
                )
            return self._model

    def _embed_now(self, texts: list[str]) -> Any:
        return self._load().embed(texts, norm=True, batch_size=WORDLLAMA_BATCH)

    async def embed(self, texts: Sequence[str]) -> Any:
        """One unit vector per text, in order (a 2-D numpy array), computed in a thread."""
        return await asyncio.to_thread(self._embed_now, list(texts))


def embedder_from_spec(spec: str) -> OpenAIEmbedder | WordLlamaEmbedder:
    """The embedder a ``--embedder`` value names: ``offline`` (WordLlama) or
    ``openai:MODEL`` (``OPENAI_API_KEY`` and ``OPENAI_BASE_URL`` as for ``memstore chat``).

    Raises:
        ValidationError: another value (``embedder``).
        ModelConfigurationError: WordLlama is not installed, or ``OPENAI_API_KEY`` unset.
    """
    kind, _, model = spec.strip().partition(":")
    if kind == "offline" and not model:
        return WordLlamaEmbedder()
    if kind == "openai":
        from openai import AsyncOpenAI

        from memstore.config import ModelSettings

        settings = ModelSettings.from_env()
        client = AsyncOpenAI(api_key=settings.api_key, base_url=settings.base_url)
        return OpenAIEmbedder(client, model.strip() or DEFAULT_OPENAI_MODEL)
    raise ValidationError("embedder", f"must be 'offline' or 'openai:MODEL', got {spec!r}")
