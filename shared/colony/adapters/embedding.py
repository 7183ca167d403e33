"""Embedder adapters: offline (deterministic, not semantic), OpenAI and Gemini.

``embedder_from_settings`` is the one place that picks an adapter.
"""

from __future__ import annotations

import hashlib
import math
import re
from collections.abc import Sequence
from itertools import pairwise
from typing import Any

from colony.adapters.client import OwnsClient
from colony.errors import DimensionMismatch, ProviderError, ValidationFailed
from colony.settings import Settings
from colony.vectors import Vector, unit_rows

_WORD = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")
MAX_INPUT_CHARS = 30_000  # ~8k tokens: above every provider's per-input limit


def _check_inputs(texts: Sequence[str]) -> list[str]:
    if isinstance(texts, str):  # a str is a Sequence[str]: it would embed one row per character
        raise ValidationFailed("texts to embed must be a sequence of strings, not one string")
    items = list(texts)
    for i, text in enumerate(items):
        if not isinstance(text, str) or not text.strip():
            raise ValidationFailed(f"text #{i} to embed is empty")
        if len(text) > MAX_INPUT_CHARS:
            raise ValidationFailed(
                f"text #{i} to embed has {len(text)} characters; the limit is {MAX_INPUT_CHARS}"
            )
    return items


def _provider_rows(rows: list[list[float]], dim: int, provider: str) -> list[Vector]:
    """A provider's rows scaled to unit length, every row's length and values checked."""
    for i, row in enumerate(rows):
        if len(row) != dim:
            raise DimensionMismatch(f"{provider} returned a {len(row)}-d embedding for text #{i}")
        if not all(math.isfinite(x) for x in row):
            raise ProviderError(f"{provider} returned an embedding with NaN or infinite values")
    return unit_rows(rows, dim)


class OfflineHashEmbedder:
    """Deterministic feature-hashing embedder: words, word pairs and character trigrams.

    NOT semantic: texts sharing words and spellings land near each other, synonyms do not.
    It exists so everything runs with no key and no download; results are reproducible.
    """

    def __init__(self, dim: int = 1536, model: str = "offline-hash-v1") -> None:
        self.dim = dim
        self.model = model

    def _features(self, text: str) -> list[tuple[str, float]]:
        words = _WORD.findall(text.lower())
        features = [(w, 1.0) for w in words]
        features += [(f"{a} {b}", 0.5) for a, b in pairwise(words)]
        for word in words:
            padded = f"#{word}#"
            features += [(padded[i : i + 3], 0.25) for i in range(len(padded) - 2)]
        if not features:
            # No ASCII words (punctuation, symbols, other scripts): the characters' trigrams,
            # so the row is still a unit vector of its own, never the zero vector.
            padded = f"#{''.join(text.lower().split())}#"
            features = [(padded[i : i + 3], 0.25) for i in range(len(padded) - 2)]
        return features

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        items = _check_inputs(texts)
        out = []
        for text in items:
            row = [0.0] * self.dim
            for feature, weight in self._features(text):
                digest = hashlib.blake2b(feature.encode(), digest_size=8).digest()
                value = int.from_bytes(digest, "little")
                row[(value >> 1) % self.dim] += weight if value & 1 else -weight
            out.append(row)
        return unit_rows(out, self.dim)


class OpenAIEmbedder(OwnsClient):
    """OpenAI embeddings (``text-embedding-3-small``, 1536 dims) in batched requests."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str = "text-embedding-3-small",
        dim: int = 1536,
        base_url: str | None = None,
        batch_size: int = 256,
        client: Any = None,
    ) -> None:
        self.model, self.dim, self.batch_size = model, dim, batch_size
        owns_client = client is None
        if client is None:
            # lazy: openai SDK, loaded when the client is first built
            import openai

            client = openai.OpenAI(api_key=api_key, base_url=base_url, max_retries=3)
        self._client = client
        self._owns_client = owns_client

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        items = _check_inputs(texts)
        rows: list[list[float]] = []
        for start in range(0, len(items), self.batch_size):
            batch = items[start : start + self.batch_size]
            try:
                response = self._client.embeddings.create(
                    model=self.model, input=batch, dimensions=self.dim, encoding_format="float"
                )
            except Exception as error:  # the SDK's own error tree; re-raised as ours
                raise ProviderError(f"OpenAI embeddings failed: {type(error).__name__}") from error
            ordered = sorted(response.data, key=lambda item: item.index)
            if [item.index for item in ordered] != list(range(len(batch))):
                raise ProviderError(
                    f"OpenAI returned embeddings {[item.index for item in ordered]}"
                    f" for {len(batch)} inputs"
                )
            rows += [list(item.embedding) for item in ordered]
        return _provider_rows(rows, self.dim, "OpenAI")


class GeminiEmbedder(OwnsClient):
    """Gemini embeddings through ``google-genai`` with ``output_dimensionality``."""

    def __init__(
        self,
        *,
        api_key: str,
        model: str = "gemini-embedding-001",
        dim: int = 1536,
        base_url: str | None = None,
        batch_size: int = 100,
        client: Any = None,
    ) -> None:
        self.model, self.dim, self.batch_size = model, dim, batch_size
        owns_client = client is None
        if client is None:
            # lazy: google-genai SDK, loaded on first use
            from google import genai
            from google.genai import types

            # google-genai never retries unless told to; 4 attempts matches OpenAI's 3 retries
            # (exponential back-off from 1 s on 408/429/5xx and connection errors).
            http_options = types.HttpOptions(
                base_url=base_url, retry_options=types.HttpRetryOptions(attempts=4)
            )
            client = genai.Client(api_key=api_key, http_options=http_options)
        self._client = client
        self._owns_client = owns_client

    def embed(self, texts: Sequence[str]) -> list[Vector]:
        # lazy: google-genai SDK, loaded on first use
        from google.genai import types

        items = _check_inputs(texts)
        rows: list[list[float]] = []
        config = types.EmbedContentConfig(output_dimensionality=self.dim)
        for start in range(0, len(items), self.batch_size):
            batch = items[start : start + self.batch_size]
            try:
                response = self._client.models.embed_content(
                    model=self.model, contents=batch, config=config
                )
            except Exception as error:  # the SDK's own error tree; re-raised as ours
                raise ProviderError(f"Gemini embeddings failed: {type(error).__name__}") from error
            embeddings = response.embeddings or []
            if len(embeddings) != len(batch):
                raise ProviderError(
                    f"Gemini returned {len(embeddings)} embeddings for {len(batch)}"
                )
            rows += [list(e.values or []) for e in embeddings]
        # Gemini only normalises its full 3072-d output; truncated ones must be normalised here.
        return _provider_rows(rows, self.dim, "Gemini")


def embedder_from_settings(
    settings: Settings,
) -> OfflineHashEmbedder | OpenAIEmbedder | GeminiEmbedder:
    if settings.embedding_provider == "openai":
        return OpenAIEmbedder(
            api_key=settings.api_key("openai", "COLONY_EMBEDDING_PROVIDER"),
            model=settings.embedding_model,
            dim=settings.embedding_dim,
            base_url=settings.openai_base_url,
        )
    if settings.embedding_provider == "gemini":
        return GeminiEmbedder(
            api_key=settings.api_key("gemini", "COLONY_EMBEDDING_PROVIDER"),
            model=settings.embedding_model,
            dim=settings.embedding_dim,
            base_url=settings.gemini_base_url,
        )
    return OfflineHashEmbedder(dim=settings.embedding_dim, model=settings.embedding_model)
