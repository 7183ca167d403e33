"""CONST-004, grounded output: a quote is kept only where its source says it word for word.

A model proposes signals with quotes; this decides which stand. Used for AGT-006's call
signals (the quote must be in the transcript chunk the call read) and AGT-003's prospect
signals (in the contact's own data), and for anything later that quotes a stored source.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any


def _spaced(text: str) -> str:
    return " ".join(text.split())


def verbatim(signals: Sequence[Mapping[str, Any]], source: str) -> tuple[list[dict[str, Any]], int]:
    """The signals whose quote occurs in ``source`` word for word (whitespace normalised, case
    kept), and how many were dropped: a quote the source does not contain is not one."""
    text = _spaced(source)
    kept = [dict(s) for s in signals if _spaced(str(s.get("quote") or "")) in text]
    kept = [s for s in kept if s.get("quote") and str(s["quote"]).strip()]
    return kept, len(signals) - len(kept)
