"""The facts worth telling people about (``notification_events``): written by migration
0051's triggers as the flows' own tables record them (a reply, an item waiting, a breaker
trip, an import's end, a budget alert), or here for the brief; fanned out once."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from colony.store.rows import Row, fetch_all, fetch_one

RECORD = """
INSERT INTO notification_events (org_id, kind, event_key, subject, link, contact_id, item_id,
                                 occurred_at)
VALUES (%s, %s, %s, left(%s, 300), %s, %s, %s, %s)
ON CONFLICT (org_id, kind, event_key) DO NOTHING
RETURNING id
"""
WAITING = """
SELECT e.id, e.kind, e.event_key, e.subject, e.link, e.contact_id, e.item_id, e.occurred_at,
       (e.contact_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = e.contact_id)) AS erased
FROM notification_events e
WHERE e.dispatched_at IS NULL
ORDER BY e.id
LIMIT %s
FOR UPDATE OF e SKIP LOCKED
"""
MARK = "UPDATE notification_events SET dispatched_at = %s, outcome = %s WHERE id = %s"


def record(
    cur: Any,
    org_id: str,
    kind: str,
    key: str,
    subject: str,
    link: str,
    *,
    occurred_at: datetime,
    contact_id: str | None = None,
    item_id: str | None = None,
) -> int | None:
    """Record one event (None: it was recorded before)."""
    row = fetch_one(
        cur, RECORD, (org_id, kind, key, subject, link, contact_id, item_id, occurred_at)
    )
    return None if row is None else int(row["id"])


def waiting(cur: Any, limit: int) -> list[Row]:
    """Up to ``limit`` events not fanned out yet, oldest first, locked for this fan-out;
    ``erased``: the prospect it is about is gone."""
    return fetch_all(cur, WAITING, (limit,))


def mark(cur: Any, event_id: int, outcome: str, now: datetime) -> None:
    cur.execute(MARK, (now, outcome, event_id))
