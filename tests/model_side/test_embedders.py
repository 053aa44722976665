"""The shipped embedders: OpenAI's API through the real client against the stand-in server,
and WordLlama offline, from the weights its wheel carries."""

from __future__ import annotations

import numpy as np
import pytest
from openai import AsyncOpenAI

from memstore import EmbeddingError, OpenAIEmbedder, WordLlamaEmbedder
from memstore.core.embedder import check_embedder
from memstore.errors import ModelConfigurationError, ValidationError
from memstore.model_side.embedders import embedder_from_spec
from memstore.model_side.stand_in_server import StandInModel, error_reply, stand_in_vector


async def test_openai_embedder_calls_the_embeddings_endpoint() -> None:
    standin = StandInModel()
    embedder = OpenAIEmbedder(standin.client(), dimensions=64)
    vectors = await embedder.embed(["a blue sedan", "my car"])
    assert vectors == [stand_in_vector("a blue sedan"), stand_in_vector("my car")]
    (request,) = standin.requests
    assert request.path.endswith("/embeddings")
    assert request.body["model"] == "text-embedding-3-small"
    assert request.body["input"] == ["a blue sedan", "my car"]
    assert request.body["dimensions"] == 64
    assert embedder.name == "openai:text-embedding-3-small@64"
    assert check_embedder(embedder) is embedder


async def test_openai_embedder_over_a_real_socket() -> None:
    standin = StandInModel()
    with standin.serve() as base_url:
        client = AsyncOpenAI(api_key="k", base_url=base_url, max_retries=0)
        embedder = OpenAIEmbedder(client, "text-embedding-3-large", dimensions=16)
        (vector,) = await embedder.embed(["hello there"])
        await client.close()
    assert len(vector) == 16
    assert standin.requests[0].authorization == "Bearer k"


def test_a_known_model_needs_no_dimensions_and_keeps_its_plain_name() -> None:
    embedder = OpenAIEmbedder(StandInModel().client())
    assert (embedder.name, embedder.dimensions) == ("openai:text-embedding-3-small", 1536)


@pytest.mark.parametrize("dimensions", [0, -3, True, 2.5])
def test_bad_dimensions_are_refused(dimensions: object) -> None:
    with pytest.raises(ValidationError) as caught:
        OpenAIEmbedder(StandInModel().client(), dimensions=dimensions)  # type: ignore[arg-type]
    assert caught.value.field == "dimensions"


def test_an_unknown_model_needs_its_dimensions() -> None:
    with pytest.raises(ValidationError, match="vector size"):
        OpenAIEmbedder(StandInModel().client(), "my-local-model")


async def test_an_http_error_is_an_embedding_error() -> None:
    standin = StandInModel()
    standin.queue(error_reply(503))
    with pytest.raises(EmbeddingError, match="HTTP 503"):
        await OpenAIEmbedder(standin.client(), dimensions=8).embed(["x"])


async def test_an_unreachable_server_is_an_embedding_error() -> None:
    client = AsyncOpenAI(api_key="k", base_url="http://127.0.0.1:9/v1", max_retries=0)
    with pytest.raises(EmbeddingError, match="APIConnectionError"):
        await OpenAIEmbedder(client, dimensions=8).embed(["x"])
    await client.close()


async def test_wordllama_embeds_offline_and_knows_a_car_from_a_pizza() -> None:
    embedder = WordLlamaEmbedder()
    car, sedan, pizza = np.asarray(await embedder.embed(["my car", "a blue sedan", "pizza"]))
    assert car.shape == (embedder.dimensions,)
    assert np.linalg.norm(car) == pytest.approx(1.0, abs=1e-4)
    assert float(car @ sedan) > float(car @ pizza)
    assert check_embedder(embedder) is embedder


def test_the_spec_offline_is_wordllama() -> None:
    assert isinstance(embedder_from_spec("offline"), WordLlamaEmbedder)


def test_the_spec_openai_reads_the_key_like_chat(monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(ModelConfigurationError, match="OPENAI_API_KEY"):
        embedder_from_spec("openai:text-embedding-3-small")
    monkeypatch.setenv("OPENAI_API_KEY", "k")
    embedder = embedder_from_spec("openai:text-embedding-3-large")
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.dimensions == 3072


@pytest.mark.parametrize("spec", ["", "wordllama", "offline:x", "cohere:embed"])
def test_an_unknown_spec_is_refused_naming_the_option(spec: str) -> None:
    with pytest.raises(ValidationError) as caught:
        embedder_from_spec(spec)
    assert caught.value.field == "embedder"
