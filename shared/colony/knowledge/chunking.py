"""Split a document into retrieval-sized chunks on paragraph, then sentence, boundaries."""

from __future__ import annotations

import re

_SENTENCE = re.compile(r"(?<=[.!?])\s+")


def chunk_text(text: str, *, max_words: int = 180) -> list[str]:
    """Greedy packing of paragraphs into chunks of at most ``max_words`` words.

    A paragraph longer than the limit is split by sentences, and a sentence longer than the
    limit by words, so no chunk exceeds ``max_words`` and nothing is dropped.
    """
    pieces: list[str] = []
    for paragraph in re.split(r"\n\s*\n", text.strip()):
        paragraph = " ".join(paragraph.split())
        if not paragraph:
            continue
        if len(paragraph.split()) <= max_words:
            pieces.append(paragraph)
            continue
        for sentence in _SENTENCE.split(paragraph):
            words = sentence.split()
            pieces += [" ".join(words[i : i + max_words]) for i in range(0, len(words), max_words)]
    chunks: list[str] = []
    current: list[str] = []
    count = 0
    for piece in pieces:
        n = len(piece.split())
        if current and count + n > max_words:
            chunks.append("\n\n".join(current))
            current, count = [], 0
        current.append(piece)
        count += n
    if current:
        chunks.append("\n\n".join(current))
    return chunks
