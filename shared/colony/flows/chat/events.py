"""The session event log as the chat sees it: every SSE event of every turn, numbered per
session (stored by ``colony.store.chat_events``, which also notifies the listening chat
instances, ``colony.chat.hub``, when the appending transaction commits).

The turn appends to it (``turn_io``) and the HTTP edge replays it (``colony.chat.api``), so
it sits in the flow, below both: the edge imports the flow, never the other way round.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from colony.errors import NotFound, ValidationFailed
from colony.store import chat_events


@dataclass(frozen=True, slots=True)
class Event:
    """One stored event: ``seq`` is its SSE ``id:``."""

    seq: int
    turn_id: str
    type: str
    data: dict[str, Any]

    def sse(self) -> str:
        body = json.dumps(self.data, ensure_ascii=False, separators=(",", ":"))
        return f"id: {self.seq}\nevent: {self.type}\ndata: {body}\n\n"


def append(
    cur: Any, org_id: str, session_id: str, turn_id: str, items: Sequence[tuple[str, dict]]
) -> list[Event]:
    """Append ``(type, data)`` items for ``turn_id``; returns them numbered."""
    if not items:
        return []
    n = len(items)
    last = chat_events.append(
        cur, org_id, session_id, turn_id, [(t, {**d, "turn_id": turn_id}) for t, d in items]
    )
    if last is None:  # the session vanished or is another org's: RLS hid the row
        raise NotFound(f"chat session {session_id!r} does not exist in this org")
    first = last - n + 1
    return [
        Event(first + i, turn_id, t, {**d, "turn_id": turn_id}) for i, (t, d) in enumerate(items)
    ]


def append_with_rows(
    cur: Any,
    org_id: str,
    session_id: str,
    turn_id: str,
    items: Sequence[tuple[str, dict]],
    rows: Sequence[tuple[str, str, Any]],
    calls: Sequence[Mapping[str, Any]] = (),
    *,
    call_id: str | None = None,
    gone: Sequence[int] = (),
) -> tuple[list[Event], list[int]]:
    """``append``, with the turn's history ``rows`` and its model ``calls``' records stored
    (and the history rows ``gone`` deleted: what a compaction folded) in the same statement
    (``call_id``: the model call the assistant rows came from); returns the events numbered
    and the rows' ids."""
    data = [(t, {**d, "turn_id": turn_id}) for t, d in items]
    last, ids = chat_events.append_with_turns(
        cur, org_id, session_id, turn_id, rows, data, calls, call_id=call_id, gone=gone
    )
    if last is None:  # the session vanished or is another org's: RLS hid the row
        raise NotFound(f"chat session {session_id!r} does not exist in this org")
    first = last - len(items) + 1
    return [Event(first + i, turn_id, t, d) for i, (t, d) in enumerate(data)], ids


def after(cur: Any, session_id: str, seq: int, limit: int = 500) -> list[Event]:
    rows = chat_events.after(cur, session_id, seq, limit)
    return [Event(int(r["seq"]), r["turn_id"], r["type"], dict(r["data"])) for r in rows]


def sse_comment(text: str) -> str:
    return f": {text}\n\n"


def parse_last_event_id(values: Iterable[str | None]) -> int:
    """The first usable ``Last-Event-ID`` / ``after`` value (0: from the start)."""
    for value in values:
        if value is None or value == "":
            continue
        if not value.strip().isdigit() or len(value.strip()) > 18:
            raise ValidationFailed("Last-Event-ID must be a non-negative integer event id")
        return int(value.strip())
    return 0
