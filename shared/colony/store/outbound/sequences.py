"""Sequence enrollments (issue 18): where each contact of a campaign is in its sequence.

One row per (campaign, contact): the steps its sequence has, the latest one drafted, and
whether it is still ``active``. Every later step's task, draft and send reads it first, so a
stop (reply, bounce, complaint, unsubscribe) holds at once for tasks already scheduled.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

ENROLL = """
INSERT INTO sequence_enrollments (org_id, campaign_id, contact_id, run_id, angle, tier, steps)
VALUES (%s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (org_id, campaign_id, contact_id) DO NOTHING
"""
GET = """
SELECT campaign_id, contact_id, run_id, angle, tier, steps, step, status, stop_reason,
       approved_by, next_due_at
FROM sequence_enrollments WHERE campaign_id = %s AND contact_id = %s
"""
FOR_SHARE = GET + " FOR SHARE"
DUE = """
UPDATE sequence_enrollments SET next_due_at = %s, updated_at = now()
WHERE campaign_id = %s AND contact_id = %s AND status = 'active'
"""
ADVANCE = """
UPDATE sequence_enrollments SET step = %s, next_due_at = NULL, updated_at = now()
WHERE campaign_id = %s AND contact_id = %s AND status = 'active' AND step = %s - 1
RETURNING step
"""
COMPLETE = """
UPDATE sequence_enrollments SET status = 'completed', next_due_at = NULL, updated_at = now()
WHERE campaign_id = %s AND contact_id = %s AND status = 'active' AND step = steps
"""
APPROVED_BY = """
UPDATE sequence_enrollments SET approved_by = %s, updated_at = now()
WHERE campaign_id = %s AND contact_id = %s AND approved_by IS NULL
"""
STOP = """
UPDATE sequence_enrollments SET status = 'stopped', stop_reason = %s, next_due_at = NULL,
       updated_at = now()
WHERE contact_id = ANY(%s::text[]) AND status = 'active'
RETURNING campaign_id, contact_id
"""
STOP_IN = """
UPDATE sequence_enrollments SET status = 'stopped', stop_reason = %s, next_due_at = NULL,
       updated_at = now()
WHERE campaign_id = %s AND contact_id = %s AND status = 'active'
"""
TIMEZONE = "SELECT timezone FROM contacts WHERE id = %s"
STEP_ITEM = """
SELECT id, payload FROM approval_items
WHERE kind = 'outbound_message' AND status = 'pending' AND run_id = %s AND subject_id = %s
  AND payload->>'campaign_id' = %s AND (payload->>'sequence_step')::int = %s
"""
CONTACTS_AT = "SELECT id FROM contacts WHERE lower(email) = %s"
SENT_STEPS = """
SELECT sequence_step AS step, subject, status, message_id, sent_at FROM outbox
WHERE campaign_id = %s AND contact_id = %s AND sequence_step < %s
ORDER BY sequence_step, created_at
"""


def enroll(
    cur: Any,
    org_id: str,
    campaign_id: str,
    contact_id: str,
    *,
    run_id: str,
    angle: str,
    tier: str,
    steps: int,
) -> None:
    """Enroll the contact at step 1 (a second enrollment in the campaign changes nothing)."""
    cur.execute(ENROLL, (org_id, campaign_id, contact_id, run_id, angle, tier, steps))


def get(cur: Any, campaign_id: str, contact_id: str, *, share: bool = False) -> Row | None:
    """The enrollment (None: the contact has no sequence in this campaign). ``share`` locks it
    against a concurrent stop until the transaction ends."""
    return fetch_one(cur, FOR_SHARE if share else GET, (campaign_id, contact_id))


def set_due(cur: Any, campaign_id: str, contact_id: str, due: datetime) -> None:
    cur.execute(DUE, (due, campaign_id, contact_id))


def advance(cur: Any, campaign_id: str, contact_id: str, step: int) -> bool:
    """Record ``step`` as drafted, if it is the next one of an active enrollment."""
    return fetch_one(cur, ADVANCE, (step, campaign_id, contact_id, step)) is not None


def complete_if_last(cur: Any, campaign_id: str, contact_id: str) -> None:
    cur.execute(COMPLETE, (campaign_id, contact_id))


def approved_by(cur: Any, campaign_id: str, contact_id: str, user_id: str) -> None:
    """Record the person whose approval of step 1 covers the rest (kept once set)."""
    cur.execute(APPROVED_BY, (user_id, campaign_id, contact_id))


def stop(cur: Any, contact_ids: list[str], reason: str) -> list[Row]:
    """Stop every active enrollment of these contacts; the (campaign, contact) pairs stopped."""
    return fetch_all(cur, STOP, (reason, contact_ids)) if contact_ids else []


def contacts_at(cur: Any, address: str) -> list[str]:
    """The org's contacts with this address (case-insensitive)."""
    return [str(r["id"]) for r in fetch_all(cur, CONTACTS_AT, (address.lower(),))]


def earlier_steps(cur: Any, campaign_id: str, contact_id: str, before: int) -> list[Row]:
    """The contact's messages of steps 1..before-1 in the campaign (what was sent, and how
    it fared), in step order."""
    return fetch_all(cur, SENT_STEPS, (campaign_id, contact_id, before))


def stop_in(cur: Any, campaign_id: str, contact_id: str, reason: str) -> None:
    """Stop the contact's sequence in one campaign (a step a person rejected)."""
    cur.execute(STOP_IN, (reason, campaign_id, contact_id))


def timezone(cur: Any, contact_id: str) -> str | None:
    """The contact's IANA timezone, when known."""
    row = fetch_one(cur, TIMEZONE, (contact_id,))
    return row["timezone"] if row else None


def step_item(cur: Any, run_id: str, campaign_id: str, contact_id: str, step: int) -> Row | None:
    """The pending approval item drafted for this step (None: none pending)."""
    return fetch_one(cur, STEP_ITEM, (run_id, contact_id, campaign_id, step))
