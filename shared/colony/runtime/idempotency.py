"""Idempotent delivery: each event id is processed once per handler.

Pub/Sub and Cloud Tasks deliver at least once. A handler checks ``seen`` first (a duplicate
is acknowledged without effect) and calls ``mark`` after its effects are durable; the effects
themselves are keyed by durable steps, so a crash between the two only repeats a no-op.
The statements are ``colony.store.processed_events``'s; a handler that records the event in
the transaction of its own effects calls ``processed_events.mark`` with that cursor.
"""

from __future__ import annotations

from colony.store import processed_events
from colony.store.db import Database


def seen(db: Database, org_id: str, handler: str, event_id: str) -> bool:
    with db.transaction(org_id) as cur:
        return processed_events.seen(cur, handler, event_id)


def mark(
    db: Database, org_id: str, handler: str, event_id: str, *, detail: str | None = None
) -> bool:
    """Record the event as processed; False if it already was."""
    with db.transaction(org_id) as cur:
        return processed_events.mark(cur, org_id, handler, event_id, detail=detail)
