"""Calls as records (issue 34 item 1): the org's recorded calls, and one call's transcript
with its pass-1 signals marked where they were said, the summary, and the recommendations
that came from it (each with its decision, if made).

The transcript is read from the assets bucket as the recording flow stored it. A signal's
place is found the way AGT-006's quotes were checked (``policy.grounding``: word for word,
whitespace normalised): its first occurrence, as character offsets the page marks. The
transcript and the quotes are the outside world's text: returned as data, shown as text.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from colony.errors import NotFound, ValidationFailed
from colony.flows.deps import FlowDeps
from colony.flows.insights.prospects import plain
from colony.store.insights import calls as repo

PAGE = 50


def listing(deps: FlowDeps, org_id: str, offset: int = 0) -> dict[str, Any]:
    """A page of the org's calls, newest first."""
    if not 0 <= offset <= 10_000_000:
        raise ValidationFailed("offset must be a whole number from 0")
    with deps.db.transaction(org_id) as cur:
        rows = repo.page(cur, PAGE + 1, offset)
    return plain({"calls": rows[:PAGE], "next_offset": offset + PAGE if len(rows) > PAGE else None})


def call(deps: FlowDeps, org_id: str, recording_id: str) -> dict[str, Any]:
    """One call: transcript, signals and where each was said, summary, recommendations."""
    if not recording_id or len(recording_id) > 200:
        raise ValidationFailed("a call id is 1 to 200 characters")
    with deps.db.transaction(org_id) as cur:
        row = repo.call(cur, recording_id)
        recommended = repo.recommendations(cur, recording_id) if row else []
    if row is None:
        raise NotFound(f"there is no call {recording_id!r}")
    transcript = _transcript(deps, row["transcript_uri"])
    signals = list(row["signals"] or [])
    return plain(
        {
            "call": {k: v for k, v in row.items() if k not in ("transcript_uri", "signals")},
            "transcript": transcript,
            "signals": signals,
            "marks": marks(transcript or "", signals),
            "recommendations": recommended,
        }
    )


def marks(text: str, signals: Sequence[Mapping[str, Any]]) -> list[dict[str, int]]:
    """Where each signal's quote was said: ``{"signal", "start", "end"}`` character offsets,
    in order, none overlapping (a later quote inside an earlier one's span is left unmarked)."""
    found: list[dict[str, int]] = []
    for n, signal in enumerate(signals):
        words = str(signal.get("quote") or "").split()
        if not words:
            continue
        hit = re.search(r"\s+".join(re.escape(w) for w in words), text)
        if hit:
            found.append({"signal": n, "start": hit.start(), "end": hit.end()})
    found.sort(key=lambda m: (m["start"], -m["end"]))
    kept: list[dict[str, int]] = []
    for m in found:
        if not kept or m["start"] >= kept[-1]["end"]:
            kept.append(m)
    return kept


def _transcript(deps: FlowDeps, uri: str | None) -> str | None:
    if not uri:
        return None
    try:
        data = deps.blobs.get(str(uri).split("/", 3)[-1])  # gs://bucket/<name>, as stored
    except NotFound:
        return None  # erased, or never stored: the page says so
    return data.decode("utf-8-sig", errors="replace")
