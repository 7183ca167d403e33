"""The I/O seams the logic sees. Adapters implement them; fakes in ``colony.testing``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, runtime_checkable

import numpy as np


@runtime_checkable
class Embedder(Protocol):
    """Turns texts into unit-length vectors of ``dim`` floats, one row per text, in order."""

    model: str
    dim: int

    def embed(self, texts: Sequence[str]) -> np.ndarray: ...
