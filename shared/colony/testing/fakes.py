"""Fakes for the ports, shared by tests and benchmarks."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from colony.adapters.embedding import OfflineHashEmbedder


class CountingEmbedder:
    """The offline embedder, counting calls and texts so tests can prove what was (re)embedded."""

    def __init__(self, dim: int = 1536, model: str = "offline-hash-v1") -> None:
        self._inner = OfflineHashEmbedder(dim=dim, model=model)
        self.model, self.dim = model, dim
        self.calls: list[list[str]] = []

    @property
    def texts_embedded(self) -> int:
        return sum(len(batch) for batch in self.calls)

    def embed(self, texts: Sequence[str]) -> np.ndarray:
        self.calls.append(list(texts))
        return self._inner.embed(texts)
