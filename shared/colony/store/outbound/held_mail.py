"""Inbound mail events held until the deployment can read their mail (``held_inbound_mail``,
migration 0039; why, in ``colony.flows.outbound.held_mail``).

A row is an event's ids and times, never the message: the provider keeps that until it is
read. No org owns a row, so each function takes the cursor of a transaction opened with no
org (``Database.transaction(None)``).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from colony.store.db import Row, fetch_all, fetch_value

# DO NOTHING, not an error: a redelivery of a held event (Svix retries until it sees a 2xx,
# and may repeat one it saw) is the same event; the row count says which call kept it.
HOLD = """
INSERT INTO held_inbound_mail (event_id, email_id, held_at) VALUES (%s, %s, %s)
ON CONFLICT (event_id) DO NOTHING
"""
STATUS = "SELECT status FROM held_inbound_mail WHERE event_id = %s"
# Oldest first, served by the partial index on what still waits.
WAITING = """
SELECT event_id, email_id, held_at, attempts FROM held_inbound_mail
WHERE status = 'held' ORDER BY held_at, event_id LIMIT %s
"""
COUNT_WAITING = "SELECT count(*) FROM held_inbound_mail WHERE status = 'held'"
# Only a row still held is settled: of two drains that read the same event, the first decides.
SETTLE = """
UPDATE held_inbound_mail SET status = %s, detail = %s, settled_at = %s
WHERE event_id = %s AND status = 'held'
"""
FAILED_FOR_NOW = """
UPDATE held_inbound_mail SET attempts = attempts + 1, detail = %s
WHERE event_id = %s AND status = 'held'
"""
MAX_DETAIL = 500


def hold(cur: Any, event_id: str, email_id: str, at: datetime) -> bool:
    """Keep the event; False if it was kept before (whatever became of it since)."""
    cur.execute(HOLD, (event_id, email_id, at))
    return bool(cur.rowcount == 1)


def status(cur: Any, event_id: str) -> str | None:
    """What became of a held event: ``held`` while it waits, else how it was settled."""
    value = fetch_value(cur, STATUS, (event_id,))
    return None if value is None else str(value)


def waiting(cur: Any, limit: int) -> list[Row]:
    """Up to ``limit`` events still waiting for a reader, the oldest first."""
    return fetch_all(cur, WAITING, (limit,))


def count_waiting(cur: Any) -> int:
    return int(fetch_value(cur, COUNT_WAITING) or 0)


def settle(cur: Any, event_id: str, outcome: str, detail: str, at: datetime) -> bool:
    """Record what became of a held event (``ingested``, ``rejected``, ``missing``,
    ``failed``); False if it was no longer held."""
    cur.execute(SETTLE, (outcome, detail[:MAX_DETAIL], at, event_id))
    return bool(cur.rowcount == 1)


def failed_for_now(cur: Any, event_id: str, detail: str) -> None:
    """Count a read that failed for now; the event stays held for the next drain."""
    cur.execute(FAILED_FOR_NOW, (detail[:MAX_DETAIL], event_id))
