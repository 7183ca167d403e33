"""The session event log: every SSE event of every turn, numbered per session.

Appending bumps ``chat_sessions.last_seq`` and inserts the events in one statement, and
``pg_notify`` tells every listening chat instance (``colony.chat.hub``) that the session has
new events; the notification is delivered when the appending transaction commits, so a
follower never hears of an event it cannot read yet. RLS scopes all of it to the org.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from colony.store import fetch_all, fetch_value

CHANNEL = "colony_chat_events"

# One round trip: number the events, insert them, and notify (delivered at commit).
APPEND = """
WITH s AS (
    UPDATE chat_sessions SET last_seq = last_seq + %s WHERE id = %s RETURNING last_seq
), ins AS (
    INSERT INTO chat_events (org_id, session_id, seq, turn_id, type, data)
    SELECT %s, %s, s.last_seq - %s + e.ord, %s, e.type, e.data::jsonb
    FROM s, unnest(%s::text[], %s::text[]) WITH ORDINALITY AS e(type, data, ord)
    RETURNING seq
)
SELECT (SELECT max(seq) FROM ins), pg_notify(%s, %s || ':' || (SELECT max(seq) FROM ins))
"""
AFTER = """
SELECT seq, turn_id, type, data FROM chat_events
WHERE session_id = %s AND seq > %s ORDER BY seq LIMIT %s
"""
LAST_SEQ = "SELECT last_seq FROM chat_sessions WHERE id = %s"


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
    types = [t for t, _ in items]
    datas = [json.dumps({**d, "turn_id": turn_id}, separators=(",", ":")) for _, d in items]
    last = fetch_value(
        cur,
        APPEND,
        (n, session_id, org_id, session_id, n, turn_id, types, datas, CHANNEL, session_id),
    )
    if last is None:  # the session vanished or is another org's: RLS hid the row
        from colony.errors import NotFound

        raise NotFound(f"chat session {session_id!r} does not exist in this org")
    first = int(last) - n + 1
    return [
        Event(first + i, turn_id, t, {**d, "turn_id": turn_id}) for i, (t, d) in enumerate(items)
    ]


def after(cur: Any, session_id: str, seq: int, limit: int = 500) -> list[Event]:
    rows = fetch_all(cur, AFTER, (session_id, seq, limit))
    return [Event(int(r["seq"]), r["turn_id"], r["type"], dict(r["data"])) for r in rows]


def last_seq(cur: Any, session_id: str) -> int | None:
    value = fetch_value(cur, LAST_SEQ, (session_id,))
    return None if value is None else int(value)


def sse_comment(text: str) -> str:
    return f": {text}\n\n"


def parse_last_event_id(values: Iterable[str | None]) -> int:
    """The first usable ``Last-Event-ID`` / ``after`` value (0: from the start)."""
    from colony.errors import ValidationFailed

    for value in values:
        if value is None or value == "":
            continue
        if not value.strip().isdigit() or len(value.strip()) > 18:
            raise ValidationFailed("Last-Event-ID must be a non-negative integer event id")
        return int(value.strip())
    return 0
