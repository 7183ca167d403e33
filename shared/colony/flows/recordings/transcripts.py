"""Transcripts for AGT-006's two passes (seed §5.3, §7.4): check, split, aggregate. Pure.

- ``decode``: bytes → text, refusing what is not a transcript (empty, binary, not UTF-8,
  past ``MAX_TRANSCRIPT_TOKENS``) with ``TranscriptRejected``, which the flow records on the
  recording row instead of retrying.
- ``split``: contiguous chunks of at most ``max_tokens`` (counted by the target model's
  tokenizer), cut at speaker lines, else sentences, else tokens. Each chunk starts with the
  tail (``overlap`` tokens) of the one before, so a signal whose words straddle a cut is
  read whole by the next chunk. No chunk — hence no pass-1 call — holds the whole transcript
  unless it is shorter than one chunk.
- ``aggregate``: the chunks' signals de-duplicated by (type, normalised quote) — the overlap
  makes the same quote appear twice — keeping the highest confidence and every chunk it was
  seen in (provenance).
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from colony.errors import ValidationFailed

MAX_TRANSCRIPT_TOKENS = 120_000  # ~9 hours of talk; past it the file is not one call
MAX_QUOTE_CHARS = 300  # what pass 2 sees of each quote


class TranscriptRejected(ValidationFailed):
    """The transcript's content cannot be analysed; recorded on the recording, not retried."""

    code = "transcript_rejected"


class Tokens(Protocol):
    def count(self, text: str) -> int: ...

    def truncate(self, text: str, limit: int) -> str: ...


@dataclass(frozen=True, slots=True)
class Chunk:
    index: int
    text: str
    start: int  # character offsets into the transcript
    end: int
    tokens: int


def decode(data: bytes, tokens: Tokens, limit: int = MAX_TRANSCRIPT_TOKENS) -> tuple[str, int]:
    """The transcript text and its token count, or ``TranscriptRejected`` saying why."""
    if not data.strip():
        raise TranscriptRejected("the transcript is empty")
    if b"\x00" in data[:65536]:
        raise TranscriptRejected("the transcript is binary, not text")
    try:
        text = data.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise TranscriptRejected("the transcript is not UTF-8 text") from None
    controls = sum(1 for ch in text[:65536] if ord(ch) < 32 and ch not in "\n\r\t\f")
    if controls > 0.01 * min(len(text), 65536):
        raise TranscriptRejected("the transcript is binary, not text")
    if not text.strip():
        raise TranscriptRejected("the transcript is empty")
    # A cheap bound first: no tokenizer makes fewer tokens than chars / 8.
    if len(text) // 8 > limit:
        raise TranscriptRejected(
            f"the transcript has about {len(text) // 4} tokens; the limit is {limit}"
        )
    count = tokens.count(text)
    if count > limit:
        raise TranscriptRejected(f"the transcript has {count} tokens; the limit is {limit}")
    return text, count


_SENTENCE_END = re.compile(r"(?<=[.!?])\s+")
_SPACE = re.compile(r"\s+")


def _segments(text: str, tokens: Tokens, limit: int, cut: int) -> list[tuple[int, int, int]]:
    """(start, end, tokens) spans covering ``text`` in order, each within ``limit`` tokens:
    lines, else sentences, else pieces of ``cut`` tokens (small enough to be carried over as
    overlap, so a sentence longer than a chunk is still read across its cut)."""
    out: list[tuple[int, int, int]] = []

    def add(start: int, end: int) -> None:
        piece = text[start:end]
        n = tokens.count(piece)
        if n <= limit:
            out.append((start, end, n))
            return
        cuts = [m.end() for m in _SENTENCE_END.finditer(piece) if 0 < m.end() < len(piece)]
        if cuts:
            edges = [0, *cuts, len(piece)]
            for a, b in itertools.pairwise(edges):
                add(start + a, start + b)
            return
        # One sentence longer than a chunk: cut by tokens.
        offset = start
        while offset < end:
            head = tokens.truncate(text[offset:end], cut) or text[offset : offset + 1]
            out.append((offset, offset + len(head), tokens.count(head)))
            offset += len(head)

    line_start = 0
    for line in text.splitlines(keepends=True):
        add(line_start, line_start + len(line))
        line_start += len(line)
    return out


def split(text: str, tokens: Tokens, *, max_tokens: int, overlap: int) -> list[Chunk]:
    """Chunks of ``text`` within ``max_tokens``, each starting with ~``overlap`` tokens of the
    previous chunk's end (see the module docstring)."""
    if max_tokens < 16 or not 0 <= overlap < max_tokens // 2:
        raise ValidationFailed("max_tokens must be ≥ 16 and overlap below half of it")
    # Segments are kept to half a chunk so an overlap plus a segment always fits.
    segments = _segments(text, tokens, max(8, (max_tokens - overlap) // 2), max(4, overlap // 2))
    chunks: list[Chunk] = []
    previous_first = -1
    i = 0
    while i < len(segments):
        first = i
        carried = 0
        # Step back over the previous chunk's tail (never to its own first segment).
        while first - 1 > previous_first and carried + segments[first - 1][2] <= overlap:
            first -= 1
            carried += segments[first][2]
        start = segments[first][0]
        if i > 0 and carried < overlap:
            # The next segment back is too long to carry whole (a speaker turn longer than
            # the overlap): carry its last words, up to the overlap left.
            start = _tail_start(text, tokens, segments[first - 1][:2], overlap - carried)
        j, total = first, tokens.count(text[start : segments[first][0]])
        while j < len(segments) and total + segments[j][2] <= max_tokens:
            total += segments[j][2]
            j += 1
        j = max(j, i + 1)  # always progress
        end = segments[j - 1][1]
        while tokens.count(text[start:end]) > max_tokens and j - 1 > i:  # joins add a token
            j -= 1
            end = segments[j - 1][1]
        body = text[start:end]
        chunks.append(Chunk(len(chunks), body, start, end, tokens.count(body)))
        previous_first, i = first, j
    return chunks


def _tail_start(text: str, tokens: Tokens, span: tuple[int, int], budget: int) -> int:
    """Where the last words of ``text[span]`` holding at most ``budget`` tokens begin (the
    span's end when not even one word fits). Binary search: a suffix never has more tokens
    than a longer one."""
    a, b = span
    lo, hi = a, b
    while lo < hi:
        mid = (lo + hi) // 2
        if tokens.count(text[mid:b]) <= budget:
            hi = mid
        else:
            lo = mid + 1
    if lo > a and not text[lo - 1].isspace():  # mid-word: move to the next word
        space = _SPACE.search(text, lo, b)
        lo = space.end() if space else b
    return lo


def normalise(quote: str) -> str:
    return " ".join(quote.casefold().split())


def aggregate(per_chunk: Sequence[Sequence[Mapping[str, Any]]]) -> list[dict[str, Any]]:
    """Signals of all chunks, de-duplicated, in transcript order, with chunk provenance."""
    merged: dict[tuple[str, str], dict[str, Any]] = {}
    for index, signals in enumerate(per_chunk):
        for signal in signals:
            key = (str(signal["type"]), normalise(str(signal["quote"])))
            found = merged.get(key)
            if found is None:
                found = next(
                    (m for k, m in merged.items() if k[0] == key[0] and _overlaps(k[1], key[1])),
                    None,
                )
            if found is None:
                merged[key] = {
                    "type": signal["type"],
                    "quote": signal["quote"],
                    "confidence": float(signal["confidence"]),
                    "chunks": [index],
                }
                continue
            found["confidence"] = max(found["confidence"], float(signal["confidence"]))
            if len(str(signal["quote"])) > len(found["quote"]):  # the whole of a cut quote
                found["quote"] = signal["quote"]
            if index not in found["chunks"]:
                found["chunks"].append(index)
    return list(merged.values())


def _overlaps(a: str, b: str) -> bool:
    """One quote is the other cut at a chunk edge (a long-enough prefix or suffix of it)."""
    short, long = sorted((a, b), key=len)
    return len(short) >= 24 and (long.startswith(short) or long.endswith(short))


def for_pass2(signals: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """What pass 2 sees: type, quote (clipped) and confidence, strongest first."""
    ranked = sorted(signals, key=lambda s: -float(s["confidence"]))
    return [
        {"type": s["type"], "quote": _clip(str(s["quote"])), "confidence": s["confidence"]}
        for s in ranked
    ]


def _clip(text: str) -> str:
    text = " ".join(text.split())
    return text if len(text) <= MAX_QUOTE_CHARS else text[: MAX_QUOTE_CHARS - 1] + "…"
