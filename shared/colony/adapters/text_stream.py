"""An answer known whole, handed out as a stream: what the models without a streaming API of
their own (the offline provider, the test fakes, a wrapped model that only answers whole) do
for ``ChatModel.stream``.

The pieces are deterministic: each word with the whitespace after it (leading whitespace is
a piece of its own), so the same answer always streams the same way, and joined they are the
text exactly.
"""

from __future__ import annotations

import re

from colony.ports import ModelResponse, TextSink

_PIECE = re.compile(r"\s+|\S+\s*")


def pieces(text: str) -> list[str]:
    """``text`` as its stream's fragments (joined: ``text``)."""
    return _PIECE.findall(text)


def replay(response: ModelResponse, on_text: TextSink) -> ModelResponse:
    """Hand ``response``'s text to ``on_text`` piece by piece; return the response."""
    for piece in pieces(response.text):
        on_text(piece)
    return response
