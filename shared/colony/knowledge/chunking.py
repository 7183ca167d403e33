"""Split a document into retrieval-sized chunks.

Two ways in, for two kinds of source:

- ``chunk_blocks(blocks)``, for documents edited in place (Notion pages): chunks follow the
  document's own structure. A chunk is one block: a paragraph (quote, callout, code), or a
  list (its consecutive items), with the headings right above it carried onto it. An edit
  then changes the text of the chunk of the block it touches and of no other, so the content
  hashes in ``KnowledgeStore.sync_source`` re-embed that one chunk. Only a block past the
  budget is split, at sentence (for a list, item) boundaries chosen by the content itself: a
  piece ends after a unit whose digest is the largest of the ``_REACH`` units on either side
  (so pieces run about ``2 * _REACH`` units), and is cut by count only at the budget. Whether
  a boundary falls after a unit depends on its neighbours alone, not on where the block
  starts, so an edit moves at most the boundaries next to it (it changes one or two pieces),
  where cutting every ``max_words`` words would shift every later one.
- ``chunk_text(text)`` packs paragraphs and sentences greedily up to the budget: for whole
  documents loaded at once and never edited by pieces (the demo's KC seed documents), where
  fewer, fuller chunks are what matters.

Blocks come as text, written the way ``colony.adapters.notion.block_text`` writes them:
``# `` .. ``###### `` opens a heading; ``- ``, ``* ``, ``+ ``, ``1. `` or ``1) `` a list item
(a to-do is ``- [ ] ``); anything else is a paragraph.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Literal

MAX_WORDS = 180
_SENTENCE = re.compile(r"(?<=[.!?])\s+")
_HEADING = re.compile(r"#{1,6} ")
_ITEM = re.compile(r"(?:[-*+]|\d+[.)]) ")
_REACH = 3  # a piece ends after a unit whose digest beats the _REACH units on either side

Kind = Literal["heading", "item", "paragraph"]


def block_kind(text: str) -> Kind:
    """What a block's text is, from how it is written (see the module docstring)."""
    if _HEADING.match(text):
        return "heading"
    if _ITEM.match(text):
        return "item"
    return "paragraph"


@dataclass(frozen=True, slots=True)
class _Unit:
    """The smallest piece a block is split into: a heading, a list item or a sentence."""

    text: str
    glue: str  # what joins it to the unit before it, in one chunk
    heading: bool = False  # a heading never ends a piece: it belongs to what follows it

    @property
    def words(self) -> int:
        return len(self.text.split())


def chunk_blocks(blocks: Iterable[str], *, max_words: int = MAX_WORDS) -> list[str]:
    """A document's blocks (in reading order) as chunks of at most ``max_words`` words.

    Headings are carried onto the block after them (a heading with nothing after it is a
    chunk of its own); consecutive list items are one list; nothing is dropped, and only a
    block past ``max_words`` is split.
    """
    chunks: list[str] = []
    headings: list[_Unit] = []
    items: list[str] = []

    def emit(units: list[_Unit]) -> None:
        chunks.extend(_join(piece) for piece in _pieces([*headings, *units], max_words))
        headings.clear()

    for raw in blocks:
        text = raw.strip()
        if not text:
            continue
        kind = block_kind(text)
        if kind == "item":
            items.append(text)
            continue
        if items:
            emit(_list_units(items, max_words))
            items = []
        if kind == "heading":
            headings += [
                _Unit(u.text, u.glue, heading=True)
                for u in _sentences(" ".join(text.split()), "\n", max_words)
            ]
        else:
            emit(_sentences(" ".join(text.split()), "\n", max_words))
    if items:
        emit(_list_units(items, max_words))
    if headings:
        emit([])
    return chunks


def _list_units(items: list[str], max_words: int) -> list[_Unit]:
    """A list's items, one unit each; an item past the budget by its sentences."""
    units: list[_Unit] = []
    for item in items:
        flat = " ".join(item.split())
        if len(flat.split()) <= max_words:
            units.append(_Unit(flat, "\n"))
        else:
            units += _sentences(flat, "\n", max_words)
    return units


def _sentences(text: str, glue: str, max_words: int) -> list[_Unit]:
    """A block's sentences (a sentence past the budget in runs of ``max_words`` words); the
    first is joined to what comes before it by ``glue``, the others by a space."""
    units: list[_Unit] = []
    for sentence in _SENTENCE.split(text):
        words = sentence.split()
        for i in range(0, len(words), max_words):
            units.append(_Unit(" ".join(words[i : i + max_words]), glue if not units else " "))
    return units


def _pieces(units: list[_Unit], max_words: int) -> list[list[_Unit]]:
    """One piece if the units fit the budget; otherwise content-defined pieces (see the
    module docstring) of at most ``max_words`` words."""
    if sum(u.words for u in units) <= max_words:
        return [units] if units else []
    digests = [_digest(u.text) for u in units]
    pieces: list[list[_Unit]] = []
    current: list[_Unit] = []
    count = 0
    for j, unit in enumerate(units):
        if current and count + unit.words > max_words:
            pieces.append(current)
            current, count = [], 0
        current.append(unit)
        count += unit.words
        if not unit.heading and _anchor(digests, j):
            pieces.append(current)
            current, count = [], 0
    if current:
        pieces.append(current)
    return pieces


def _anchor(digests: list[int], j: int) -> bool:
    """Whether a piece ends after unit ``j``: its digest is the largest of the ``_REACH``
    units on either side (the first of equals wins), and it is not the last unit."""
    left = digests[max(0, j - _REACH) : j]
    right = digests[j + 1 : j + 1 + _REACH]
    return bool(right) and all(d < digests[j] for d in left) and all(d <= digests[j] for d in right)


def _digest(text: str) -> int:
    """A stable digest (not ``hash()``, which changes between processes): the same text
    always decides the same cut."""
    return int.from_bytes(hashlib.blake2b(text.encode(), digest_size=8).digest(), "big")


def _join(units: list[_Unit]) -> str:
    return units[0].text + "".join(u.glue + u.text for u in units[1:])


def chunk_text(text: str, *, max_words: int = MAX_WORDS) -> list[str]:
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
