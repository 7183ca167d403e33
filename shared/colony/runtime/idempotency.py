"""Idempotent delivery: each event id is processed once per handler.

Pub/Sub and Cloud Tasks deliver at least once. A handler checks ``seen`` first (a duplicate
is acknowledged without effect) and calls ``mark`` after its effects are durable; the effects
themselves are keyed by durable steps, so a crash between the two only repeats a no-op.
"""

from __future__ import annotations

from colony.store.db import Database, fetch_one

SEEN = "SELECT outcome FROM processed_events WHERE handler = %s AND event_id = %s"
MARK = """
INSERT INTO processed_events (org_id, handler, event_id, outcome, detail)
VALUES (%s, %s, %s, %s, %s) ON CONFLICT (org_id, handler, event_id) DO NOTHING
"""


def seen(db: Database, org_id: str, handler: str, event_id: str) -> bool:
    with db.transaction(org_id) as cur:
        return fetch_one(cur, SEEN, (handler, event_id)) is not None


def mark(
    db: Database, org_id: str, handler: str, event_id: str, *, detail: str | None = None
) -> bool:
    """Record the event as processed; False if it already was."""
    with db.transaction(org_id) as cur:
        cur.execute(MARK, (org_id, handler, event_id, "done", detail))
        return cur.rowcount == 1
