"""The ``Counter`` port's conformance suite: the offline tokenizers and Gemini's countTokens.

- ``tiktoken-exact``: ``counter_for("gpt-4o")``, tiktoken's ``o200k_base`` from the bundled
  BPE file (OpenAI's own tokenizer: exact);
- ``tiktoken-estimate``: ``counter_for("gemini-2.5-pro")``, the same encoding with a margin
  standing in for Gemini's tokenizer when no key is configured (labelled an estimate);
- ``gemini``: ``GeminiTokenCounter`` through the official ``google-genai`` SDK, making real
  HTTP requests to ``colony.testing.wire.WireServer``, whose ``countTokens`` answers one
  token per word (Gemini itself needs a key and the network).

The contract (``colony.ports.Counter``, as the assembler and the agent call use it): a
non-empty ``label`` that says "estimate" exactly when the count is one; the empty text is 0
tokens, a text with words at least 1; the same text always counts the same and more text
does not count less; a provider-backed counter's failure is ``ProviderError`` without the
text in its message.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from typing import Any

import pytest
from google import genai
from google.genai import types

from colony.context.tokens import ESTIMATE_MARGIN, GeminiTokenCounter, counter_for
from colony.errors import ProviderError
from colony.ports import Counter
from colony.testing.wire import WireServer
from tests.conformance.exercise import exercised

TEXTS = ["one", "Mercy Ridge runs 40 clinics.", "Ünïcode ✓ and emoji 🚀", "word " * 200]
SECRET = "PROMPT-SECRET-51c0"

pytestmark = pytest.mark.usefixtures("no_ambient_config")


@pytest.fixture(params=["tiktoken-exact", "tiktoken-estimate", "gemini"])
def counter(request: pytest.FixtureRequest) -> Iterator[Any]:
    if request.param == "tiktoken-exact":
        yield counter_for("gpt-4o")
        return
    if request.param == "tiktoken-estimate":
        yield counter_for("gemini-2.5-pro")
        return
    with WireServer() as server:
        client = genai.Client(
            api_key="g-test", http_options=types.HttpOptions(base_url=server.gemini_base_url)
        )
        try:
            yield GeminiTokenCounter(client, "gemini-2.5-pro")
        finally:
            client.close()


def test_it_is_a_counter_with_a_label_that_owns_up_to_estimates(
    counter: Any, request: pytest.FixtureRequest
) -> None:
    estimate = request.node.callspec.params["counter"] == "tiktoken-estimate"
    with exercised(Counter, counter) as it:
        assert isinstance(it.label, str) and it.label
        assert ("estimate" in it.label) is estimate
        # three words: three tokens for o200k and for the stand-in's one-per-word countTokens;
        # an estimate is o200k's with its margin, rounded up (issue 37 item 6)
        three = math.ceil(3 * ESTIMATE_MARGIN) if estimate else 3
        assert it.count("one two three") == three
        assert it.count("") == 0


def test_empty_text_is_no_tokens_and_words_are_some(counter: Any) -> None:
    assert counter.count("") == 0
    for text in TEXTS:
        n = counter.count(text)
        assert type(n) is int and n >= 1


def test_the_same_text_counts_the_same_and_more_text_not_less(counter: Any) -> None:
    first = [counter.count(text) for text in TEXTS]
    assert [counter.count(text) for text in TEXTS] == first
    assert counter.count("word " * 200) > counter.count("word " * 20) > counter.count("word")


def test_a_provider_failure_is_a_provider_error_that_does_not_quote_the_text() -> None:
    with WireServer() as server:
        client = genai.Client(
            api_key="g-test", http_options=types.HttpOptions(base_url=server.gemini_base_url)
        )
        try:
            server.fail(500, retry_after_ms=None)
            with pytest.raises(ProviderError) as caught:
                GeminiTokenCounter(client, "gemini-2.5-pro").count(f"count me {SECRET}")
        finally:
            client.close()
    assert SECRET not in str(caught.value)
