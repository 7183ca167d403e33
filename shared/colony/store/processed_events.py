"""Processed events: which event ids each handler has already handled (``processed_events``).

The idempotency guard of every event handler (``colony.runtime.idempotency``). Each function
takes the cursor of a transaction opened under the event's org; a handler that records the
event in the same transaction as its effects (``flows.outbound.delivery``) passes that cursor.
"""

from __future__ import annotations

from typing import Any

from colony.store.db import fetch_one

SEEN = "SELECT outcome FROM processed_events WHERE handler = %s AND event_id = %s"
# DO NOTHING, not an error: a duplicate delivery racing the first is normal, and the caller
# learns from the row count which of the two recorded it.
MARK = """
INSERT INTO processed_events (org_id, handler, event_id, outcome, detail)
VALUES (%s, %s, %s, %s, %s) ON CONFLICT (org_id, handler, event_id) DO NOTHING
"""


def seen(cur: Any, handler: str, event_id: str) -> bool:
    """Whether ``handler`` has recorded ``event_id`` in this org."""
    return fetch_one(cur, SEEN, (handler, event_id)) is not None


def mark(
    cur: Any,
    org_id: str,
    handler: str,
    event_id: str,
    *,
    outcome: str = "done",
    detail: str | None = None,
) -> bool:
    """Record the event as processed; False if it already was."""
    cur.execute(MARK, (org_id, handler, event_id, outcome, detail))
    return bool(cur.rowcount == 1)
