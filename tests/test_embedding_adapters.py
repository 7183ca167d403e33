"""Embedding adapters through the official SDKs, against a local server speaking their protocol.

No SDK is mocked: ``openai`` and ``google-genai`` make real HTTP requests to 127.0.0.1, where
``colony.testing.wire.WireServer`` records them and answers like the real APIs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
import openai
import pytest
from google import genai
from google.genai import errors as genai_errors
from google.genai import types as genai_types

from colony.adapters.embedding import (
    MAX_INPUT_CHARS,
    GeminiEmbedder,
    OfflineHashEmbedder,
    OpenAIEmbedder,
)
from colony.errors import DimensionMismatch, ProviderError, ValidationFailed
from colony.testing.wire import (
    RecordedRequest,
    Reply,
    WireServer,
    WireServerError,
    fake_vector,
    gemini_batch_embed_contents,
    openai_embeddings,
)

DIM = 8
OPENAI_KEY = "sk-test-openai"
GEMINI_KEY = "g-test-gemini"
GEMINI_MODEL = "gemini-embedding-001"
TEXTS = ["alpha particle", "beta decay", "gamma ray", "delta wing", "epsilon greedy"]


def expected_rows(texts: list[str], dim: int = DIM) -> np.ndarray:
    """What the adapters must return for the server's default vectors: each row normalised."""
    raw = np.array([fake_vector(text, dim) for text in texts], dtype=np.float64)
    return raw / np.linalg.norm(raw, axis=1, keepdims=True)


def assert_unit_rows(rows: list[list[float]], n: int, dim: int = DIM) -> None:
    """Plain lists of Python floats (no numpy at run time), already rounded to float32."""
    assert isinstance(rows, list) and all(isinstance(r, list) for r in rows)
    assert all(type(x) is float for r in rows for x in r)
    matrix = np.asarray(rows)
    assert matrix.shape == (n, dim)
    np.testing.assert_array_equal(matrix.astype(np.float32).astype(np.float64), matrix)
    np.testing.assert_allclose(np.linalg.norm(matrix, axis=1), 1.0, rtol=1e-6)


# The local wire-protocol server (`server`) and a clean environment come from conftest.
pytestmark = pytest.mark.usefixtures("no_ambient_config")


@pytest.fixture
def make_openai(server: WireServer) -> Iterator[Callable[..., OpenAIEmbedder]]:
    made: list[OpenAIEmbedder] = []

    def make(**kwargs: Any) -> OpenAIEmbedder:
        options: dict[str, Any] = {
            "api_key": OPENAI_KEY,
            "dim": DIM,
            "base_url": server.openai_base_url,
            **kwargs,
        }
        embedder = OpenAIEmbedder(**options)
        made.append(embedder)
        return embedder

    yield make
    for embedder in made:
        embedder.close()


@pytest.fixture
def make_gemini(server: WireServer) -> Iterator[Callable[..., GeminiEmbedder]]:
    made: list[GeminiEmbedder] = []

    def make(**kwargs: Any) -> GeminiEmbedder:
        options: dict[str, Any] = {
            "api_key": GEMINI_KEY,
            "model": GEMINI_MODEL,
            "dim": DIM,
            "base_url": server.gemini_base_url,
            **kwargs,
        }
        embedder = GeminiEmbedder(**options)
        made.append(embedder)
        return embedder

    yield make
    for embedder in made:
        embedder.close()


def truncating(responder: Callable[[RecordedRequest], Reply], keep: Callable[[int], int]) -> Any:
    """A responder that answers like ``responder`` but cuts row ``i`` to ``keep(i)`` values."""

    def respond(request: RecordedRequest) -> Reply:
        reply = responder(request)
        rows = reply.body["data"] if "data" in reply.body else reply.body["embeddings"]
        for i, row in enumerate(rows):
            key = "embedding" if "embedding" in row else "values"
            row[key] = row[key][: keep(i)]
        return reply

    return respond


# -- OpenAI -------------------------------------------------------------------------------------


def test_openai_sends_the_documented_request_and_returns_unit_rows_in_order(
    server: WireServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    texts = TEXTS[:3]
    out = make_openai(model="text-embedding-3-small").embed(texts)

    [request] = server.requests
    assert (request.method, request.path, request.route) == (
        "POST",
        "/v1/embeddings",
        "openai.embeddings",
    )
    assert request.header("Authorization") == f"Bearer {OPENAI_KEY}"
    assert request.body == {
        "model": "text-embedding-3-small",
        "input": texts,
        "dimensions": DIM,
        "encoding_format": "float",
    }
    assert_unit_rows(out, 3)
    # The server's vectors are far from unit length, so this also proves the normalisation.
    assert all(abs(np.linalg.norm(fake_vector(t, DIM)) - 1.0) > 0.5 for t in texts)
    np.testing.assert_allclose(out, expected_rows(texts), rtol=1e-6, atol=1e-7)


def test_openai_restores_input_order_when_the_server_shuffles_data(
    server: WireServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    shuffled: list[list[int]] = []

    def out_of_order(request: RecordedRequest) -> Reply:
        reply = openai_embeddings(request)
        reply.body["data"] = [reply.body["data"][i] for i in (2, 0, 3, 1)]
        shuffled.append([item["index"] for item in reply.body["data"]])
        return reply

    server.script(out_of_order)
    out = make_openai().embed(TEXTS[:4])

    assert shuffled == [[2, 0, 3, 1]]
    np.testing.assert_allclose(out, expected_rows(TEXTS[:4]), rtol=1e-6, atol=1e-7)


def test_openai_splits_inputs_into_batches(
    server: WireServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    out = make_openai(batch_size=2).embed(TEXTS)

    assert [r.body["input"] for r in server.requests] == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:5]]
    assert_unit_rows(out, 5)
    np.testing.assert_allclose(out, expected_rows(TEXTS), rtol=1e-6, atol=1e-7)


def test_openai_sdk_retries_a_429_and_succeeds(
    server: WireServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    server.fail(429, retry_after_ms=1)
    out = make_openai().embed(TEXTS[:2])

    assert len(server.requests) == 2
    assert [r.header("x-stainless-retry-count") for r in server.requests] == ["0", "1"]
    assert server.requests[0].body == server.requests[1].body
    assert server.pending == 0
    np.testing.assert_allclose(out, expected_rows(TEXTS[:2]), rtol=1e-6, atol=1e-7)


def test_openai_persistent_500_becomes_provider_error_after_three_retries(
    server: WireServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    server.fail(500, times=4)  # the first attempt plus max_retries=3
    with pytest.raises(ProviderError, match="InternalServerError") as caught:
        make_openai().embed(TEXTS[:2])

    assert isinstance(caught.value.__cause__, openai.InternalServerError)
    assert len(server.requests) == 4
    assert server.pending == 0


@pytest.mark.parametrize("blank", ["", "   ", "\n\t"])
def test_openai_rejects_empty_text_without_a_request(
    server: WireServer, make_openai: Callable[..., OpenAIEmbedder], blank: str
) -> None:
    with pytest.raises(ValidationFailed, match="#1"):
        make_openai().embed(["fine", blank])
    assert server.requests == []


def test_openai_rejects_a_bare_string_without_a_request(
    server: WireServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    with pytest.raises(ValidationFailed, match="not one string"):
        make_openai().embed("one text, not a list of texts")
    assert server.requests == []


def test_openai_empty_input_list_gives_no_rows_without_a_request(
    server: WireServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    out = make_openai().embed([])
    assert out == []
    assert server.requests == []


@pytest.mark.parametrize(
    "keep",
    [lambda i: DIM - 1, lambda i: DIM - 1 if i == 1 else DIM],
    ids=["every-row-short", "one-ragged-row"],
)
def test_openai_wrong_dimension_from_the_server_is_a_dimension_mismatch(
    server: WireServer, make_openai: Callable[..., OpenAIEmbedder], keep: Callable[[int], int]
) -> None:
    server.script(truncating(openai_embeddings, keep))
    with pytest.raises(DimensionMismatch):
        make_openai().embed(TEXTS[:3])
    assert len(server.requests) == 1


def test_openai_missing_embedding_in_response_is_a_provider_error(
    server: WireServer, make_openai: Callable[..., OpenAIEmbedder]
) -> None:
    def drop_last(request: RecordedRequest) -> Reply:
        reply = openai_embeddings(request)
        reply.body["data"].pop()
        return reply

    server.script(drop_last)
    with pytest.raises(ProviderError, match="for 3 inputs"):
        make_openai().embed(TEXTS[:3])


# -- Gemini -------------------------------------------------------------------------------------


def test_gemini_sends_batch_embed_contents_and_returns_normalised_rows(
    server: WireServer, make_gemini: Callable[..., GeminiEmbedder]
) -> None:
    texts = TEXTS[:3]
    out = make_gemini().embed(texts)

    [request] = server.requests
    assert request.method == "POST"
    assert request.route == "gemini.batchEmbedContents"
    assert request.path == f"/{request.params['version']}/models/{GEMINI_MODEL}:batchEmbedContents"
    assert request.params["model"] == GEMINI_MODEL
    assert request.header("x-goog-api-key") == GEMINI_KEY
    assert request.header("Authorization") is None
    items = request.body["requests"]
    assert [item["model"] for item in items] == [f"models/{GEMINI_MODEL}"] * 3
    assert [item["outputDimensionality"] for item in items] == [DIM] * 3
    assert [[p["text"] for p in item["content"]["parts"]] for item in items] == [[t] for t in texts]
    assert_unit_rows(out, 3)
    np.testing.assert_allclose(out, expected_rows(texts), rtol=1e-6, atol=1e-7)


def test_gemini_splits_inputs_into_batches(
    server: WireServer, make_gemini: Callable[..., GeminiEmbedder]
) -> None:
    out = make_gemini(batch_size=2).embed(TEXTS)

    sent = [
        [item["content"]["parts"][0]["text"] for item in r.body["requests"]]
        for r in server.requests
    ]
    assert sent == [TEXTS[0:2], TEXTS[2:4], TEXTS[4:5]]
    assert_unit_rows(out, 5)
    np.testing.assert_allclose(out, expected_rows(TEXTS), rtol=1e-6, atol=1e-7)


def test_gemini_client_error_is_a_provider_error_and_not_retried(
    server: WireServer, make_gemini: Callable[..., GeminiEmbedder]
) -> None:
    server.fail(400, message="API key not valid", retry_after_ms=None)
    with pytest.raises(ProviderError, match="ClientError") as caught:
        make_gemini().embed(TEXTS[:2])

    assert isinstance(caught.value.__cause__, genai_errors.ClientError)
    assert caught.value.__cause__.code == 400
    assert len(server.requests) == 1


def test_gemini_adapter_retries_a_429_and_succeeds(
    server: WireServer, make_gemini: Callable[..., GeminiEmbedder]
) -> None:
    # The adapter's own retry policy (google-genai retries nothing by default); the SDK's
    # first back-off is about 1-2 s and it does not read Retry-After.
    server.fail(429)
    out = make_gemini().embed(TEXTS[:2])

    assert len(server.requests) == 2
    assert server.requests[0].body == server.requests[1].body
    np.testing.assert_allclose(out, expected_rows(TEXTS[:2]), rtol=1e-6, atol=1e-7)


def test_gemini_persistent_500_becomes_provider_error(server: WireServer) -> None:
    fast_retries = genai_types.HttpRetryOptions(attempts=3, initial_delay=0, max_delay=0, jitter=0)
    client = genai.Client(
        api_key=GEMINI_KEY,
        http_options=genai_types.HttpOptions(
            base_url=server.gemini_base_url, retry_options=fast_retries
        ),
    )
    try:
        embedder = GeminiEmbedder(api_key=GEMINI_KEY, model=GEMINI_MODEL, dim=DIM, client=client)
        server.fail(500, times=3)
        with pytest.raises(ProviderError, match="ServerError") as caught:
            embedder.embed(TEXTS[:2])
    finally:
        client.close()

    assert isinstance(caught.value.__cause__, genai_errors.ServerError)
    assert len(server.requests) == 3
    assert server.pending == 0


def test_gemini_wrong_dimension_from_the_server_is_a_dimension_mismatch(
    server: WireServer, make_gemini: Callable[..., GeminiEmbedder]
) -> None:
    server.script(truncating(gemini_batch_embed_contents, lambda i: DIM if i == 0 else DIM - 2))
    with pytest.raises(DimensionMismatch):
        make_gemini().embed(TEXTS[:2])


def test_gemini_missing_embedding_in_response_is_a_provider_error(
    server: WireServer, make_gemini: Callable[..., GeminiEmbedder]
) -> None:
    def drop_last(request: RecordedRequest) -> Reply:
        reply = gemini_batch_embed_contents(request)
        reply.body["embeddings"].pop()
        return reply

    server.script(drop_last)
    with pytest.raises(ProviderError, match="1 embeddings for 2"):
        make_gemini().embed(TEXTS[:2])


def test_gemini_rejects_empty_text_without_a_request(
    server: WireServer, make_gemini: Callable[..., GeminiEmbedder]
) -> None:
    with pytest.raises(ValidationFailed):
        make_gemini().embed(["ok", " "])
    assert server.requests == []


# -- the wire server itself ---------------------------------------------------------------------


def test_wire_server_surfaces_a_raising_responder_on_exit() -> None:
    def broken(request: RecordedRequest) -> Reply:
        raise KeyError("oops")

    with pytest.raises(WireServerError, match="KeyError") as caught, WireServer() as wire:
        wire.script(broken)
        embedder = OpenAIEmbedder(api_key=OPENAI_KEY, dim=DIM, base_url=wire.openai_base_url)
        try:
            embedder.embed(["x"])  # the 500 is retried; the default route then answers
        finally:
            embedder.close()
        assert len(wire.requests) == 2
    assert isinstance(caught.value.__cause__, KeyError)


# -- offline ------------------------------------------------------------------------------------


def test_offline_is_deterministic_across_instances() -> None:
    first = OfflineHashEmbedder(dim=64).embed(TEXTS)
    second = OfflineHashEmbedder(dim=64).embed(TEXTS)
    np.testing.assert_array_equal(first, second)
    assert not np.allclose(first[0], first[1])


@pytest.mark.parametrize("dim", [16, 1536])
def test_offline_returns_unit_rows_of_the_requested_dimension(dim: int) -> None:
    assert_unit_rows(OfflineHashEmbedder(dim=dim).embed(TEXTS), len(TEXTS), dim)


def test_offline_puts_similar_texts_closer_than_unrelated_ones() -> None:
    a, b, c = np.asarray(
        OfflineHashEmbedder(dim=256).embed(
            [
                "the quick brown fox jumps over the lazy dog",
                "a quick brown fox jumped over the lazy dogs",
                "quarterly revenue forecast for enterprise accounts",
            ]
        )
    )
    # Rows are unit length, so the dot product is the cosine.
    assert float(a @ b) > 0.5
    assert float(a @ b) > float(a @ c) + 0.3


@pytest.mark.parametrize("blank", ["", "   "])
def test_offline_rejects_empty_text(blank: str) -> None:
    with pytest.raises(ValidationFailed, match="empty"):
        OfflineHashEmbedder(dim=16).embed([blank])


def test_offline_rejects_oversized_text_but_accepts_the_limit() -> None:
    embedder = OfflineHashEmbedder(dim=16)
    assert np.asarray(embedder.embed(["a" * MAX_INPUT_CHARS])).shape == (1, 16)
    with pytest.raises(ValidationFailed, match="limit"):
        embedder.embed(["a" * (MAX_INPUT_CHARS + 1)])
    assert MAX_INPUT_CHARS == 30_000
