"""What every offline answer reports about itself: the model's name and its token estimate.

Below ``model`` (the dispatch) and the answer modules alike: the chat answers build their own
``ModelResponse`` (the turn may answer with tool calls), and ``model`` loads them, so these
cannot live in ``model`` without a circle.
"""

from __future__ import annotations

import math

MODEL_NAME = "offline-deterministic-v1"


def estimate_tokens(text: str) -> int:
    """An estimate, not a tokenizer count: one token per four characters, rounded up."""
    return math.ceil(len(text) / 4)
