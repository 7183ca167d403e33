"""The ``Embedder`` port's conformance suite: the offline fakes and the two SDK adapters.

- ``offline``: ``OfflineHashEmbedder`` (what local runs and most tests use);
- ``counting``: ``colony.testing.fakes.CountingEmbedder`` (the offline embedder, counting);
- ``openai`` / ``gemini``: ``OpenAIEmbedder`` and ``GeminiEmbedder`` through the official
  ``openai`` and ``google-genai`` SDKs, making real HTTP requests to
  ``colony.testing.wire.WireServer`` on 127.0.0.1, which answers in each API's wire format
  (the providers themselves need keys and the network; the SDKs, their request building,
  batching and parsing are real). Batches are set small so every call spans several.

The contract (``colony.ports.Embedder``; the knowledge store relies on it): ``embed`` returns
one row per text, in order, each ``dim`` plain Python floats already rounded to float32 and of
unit length; the same text always gives the same row; no text gives no rows; a blank text,
an over-long text or a bare string (which would embed one row per character) is
``ValidationFailed``, before any request.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from typing import Any

import pytest

from colony.adapters.embedding import (
    MAX_INPUT_CHARS,
    GeminiEmbedder,
    OfflineHashEmbedder,
    OpenAIEmbedder,
)
from colony.errors import ValidationFailed
from colony.ports import Embedder
from colony.testing.fakes import CountingEmbedder
from colony.testing.wire import WireServer
from tests.conformance.exercise import exercised

DIM = 16
TEXTS = [
    "Mercy Ridge runs 40 clinics",
    "CFOs ask for payback inside 12 months",
    "Booked versus occupied exam rooms",
    "Booked versus occupied exam rooms",  # a repeat: same row
    "Ünïcode and emoji ✓ survive",
    "—!?",  # no words at all, still a text
    "Привет, мир",  # no ASCII words either
    "Пока, мир",
    "x",
]

pytestmark = pytest.mark.usefixtures("no_ambient_config")


@pytest.fixture(params=["offline", "counting", "openai", "gemini"])
def embedder(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "offline":
        yield OfflineHashEmbedder(dim=DIM)
        return
    if request.param == "counting":
        yield CountingEmbedder(dim=DIM)
        return
    with WireServer() as server:
        made: Any
        if request.param == "openai":
            made = OpenAIEmbedder(
                api_key="sk-test", dim=DIM, base_url=server.openai_base_url, batch_size=3
            )
        else:
            made = GeminiEmbedder(
                api_key="g-test", dim=DIM, base_url=server.gemini_base_url, batch_size=3
            )
        with made:
            made.server = server  # for the "no request" checks
            yield made


def test_it_is_an_embedder(embedder: Any) -> None:
    """Its size and model named, and texts embedded: one unit row each, a repeat the same."""
    with exercised(Embedder, embedder) as it:
        assert it.dim == DIM and isinstance(it.model, str) and it.model
        first, again, other = it.embed(TEXTS[2:5])
    assert first == again != other
    for row in (first, other):
        assert len(row) == DIM and math.isclose(math.fsum(x * x for x in row), 1.0, rel_tol=1e-5)


def test_one_unit_float32_row_of_dim_floats_per_text(embedder: Any) -> None:
    rows = embedder.embed(TEXTS)
    assert isinstance(rows, list) and len(rows) == len(TEXTS)
    for row in rows:
        assert isinstance(row, list) and len(row) == DIM
        assert all(type(x) is float and math.isfinite(x) for x in row)
        assert array("f", row).tolist() == row  # already float32-rounded
        assert math.isclose(math.fsum(x * x for x in row), 1.0, rel_tol=1e-5)


def test_rows_come_back_in_input_order(embedder: Any) -> None:
    together = embedder.embed(TEXTS)
    alone = [embedder.embed([text])[0] for text in TEXTS]
    assert together == alone
    assert embedder.embed(list(reversed(TEXTS))) == list(reversed(together))


def test_the_same_text_gives_the_same_row_and_different_texts_different_rows(
    embedder: Any,
) -> None:
    rows = embedder.embed(TEXTS)
    assert rows[2] == rows[3]
    assert embedder.embed([TEXTS[2]]) == [rows[2]]  # across calls too
    distinct = {tuple(row) for row in rows}
    assert len(distinct) == len(set(TEXTS))


def test_no_texts_give_no_rows_without_a_request(embedder: Any) -> None:
    assert embedder.embed([]) == []
    server = getattr(embedder, "server", None)
    if server is not None:
        assert server.requests == []


@pytest.mark.parametrize(
    "texts",
    [["fine", ""], ["   "], ["\n\t"], "a bare string", ["x" * (MAX_INPUT_CHARS + 1)]],
    ids=["empty", "spaces", "whitespace", "bare-string", "too-long"],
)
def test_unusable_input_is_refused_before_any_request(embedder: Any, texts: Any) -> None:
    server = getattr(embedder, "server", None)
    with pytest.raises(ValidationFailed):
        embedder.embed(texts)
    if server is not None:
        assert server.requests == []


def test_the_longest_allowed_text_is_embedded(embedder: Any) -> None:
    [row] = embedder.embed(["word " * (MAX_INPUT_CHARS // 5)])
    assert len(row) == DIM
