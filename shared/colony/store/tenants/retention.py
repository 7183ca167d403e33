"""Retention per data class (``org_retention``), and the statements that enforce it.

Each data class names what expires and how:

- ``transcripts``: a recording's transcript in GCS (the caller deletes the objects
  ``expired_transcripts`` names, then ``forget_transcripts`` clears their URIs; the
  recording's signals and summary stay);
- ``chat_events``: the streamed events of chat turns (replay only needs recent ones);
- ``llm_calls``: the per-call trace metadata;
- ``outbox_bodies``: the text of sent messages (the row, its status and subject stay);
- ``research``: the pages research stored, by when they were downloaded (the caller deletes
  their objects, then their rows: ``colony.store.research.sources.expired`` / ``forget``).

All run inside the org's scope (RLS), with the cutoff computed by the caller's clock.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from colony.store.db import fetch_all

DATA_CLASSES = ("transcripts", "chat_events", "llm_calls", "outbox_bodies", "research")
EXPIRED_BODY = ""

PERIODS = "SELECT data_class, days FROM org_retention"
SET_PERIOD = """
INSERT INTO org_retention (org_id, data_class, days) VALUES (%s, %s, %s)
ON CONFLICT (org_id, data_class) DO UPDATE SET days = EXCLUDED.days, updated_at = now()
"""
EXPIRED_TRANSCRIPTS = """
SELECT id, transcript_uri FROM recordings
WHERE transcript_uri IS NOT NULL AND created_at < %s ORDER BY created_at
"""
FORGET_TRANSCRIPTS = "UPDATE recordings SET transcript_uri = NULL WHERE id = ANY(%s::text[])"
EXPIRE: dict[str, str] = {
    "chat_events": "DELETE FROM chat_events WHERE created_at < %s",
    "llm_calls": "DELETE FROM llm_calls WHERE created_at < %s",
    "outbox_bodies": (
        "UPDATE outbox SET body = '" + EXPIRED_BODY + "', updated_at = now()"
        " WHERE created_at < %s AND body <> ''"
    ),
}


def periods(cur: Any) -> dict[str, int]:
    """The org's own periods (days) by data class; a class it never set is absent."""
    return {str(r["data_class"]): int(r["days"]) for r in fetch_all(cur, PERIODS)}


def set_period(cur: Any, org_id: str, data_class: str, days: int) -> None:
    cur.execute(SET_PERIOD, (org_id, data_class, days))


def expired_transcripts(cur: Any, cutoff: datetime) -> list[tuple[str, str]]:
    """(recording id, ``gs://`` URI) of transcripts stored before ``cutoff``."""
    return [
        (str(r["id"]), str(r["transcript_uri"]))
        for r in fetch_all(cur, EXPIRED_TRANSCRIPTS, (cutoff,))
    ]


def forget_transcripts(cur: Any, recording_ids: list[str]) -> int:
    cur.execute(FORGET_TRANSCRIPTS, (recording_ids,))
    return int(cur.rowcount)


def expire(cur: Any, data_class: str, cutoff: datetime) -> int:
    """Expire one row-held data class older than ``cutoff``; rows affected."""
    cur.execute(EXPIRE[data_class], (cutoff,))
    return int(cur.rowcount)
