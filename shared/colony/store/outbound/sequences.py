"""Sequence enrollments (issue 18): where each contact of a campaign is in its sequence.

One row per (campaign, contact): the steps its sequence has, the latest one drafted, and
whether it is still ``active``. Every later step's task, draft and send reads it first, so a
stop (reply, bounce, complaint, unsubscribe) holds at once for tasks already scheduled.

What a contact already got is read from two places: the outbox (an email step: what was sent
and how it fared) and the approval queue (a LinkedIn or call step is a ``sequence_task`` item:
its talking points, and whether a person did it or skipped it).
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

ENROLL = """
INSERT INTO sequence_enrollments
    (org_id, campaign_id, contact_id, run_id, angle, tier, sequence_tier, steps)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (org_id, campaign_id, contact_id) DO NOTHING
"""
GET = """
SELECT campaign_id, contact_id, run_id, angle, tier,
       COALESCE(sequence_tier, tier) AS sequence_tier, steps, step, status, stop_reason,
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
SELECT id, kind, payload FROM approval_items
WHERE kind IN ('outbound_message', 'sequence_task') AND status = 'pending' AND run_id = %s
  AND subject_id = %s AND payload->>'campaign_id' = %s
  AND (payload->>'sequence_step')::int = %s
"""
CONTACTS_AT = "SELECT id FROM contacts WHERE lower(email) = %s"
# Steps 1..n-1 as the contact got them: email steps from the outbox, LinkedIn and call steps
# from their task items (done: a person did it; skipped: a person chose not to).
EARLIER_STEPS = """
SELECT id, sequence_step AS step, 'email' AS channel, subject, body AS text, status,
       message_id, sent_at AS at, created_at
FROM outbox WHERE campaign_id = %s AND contact_id = %s AND sequence_step < %s
UNION ALL
SELECT id, (payload->>'sequence_step')::int, payload->>'channel', payload->>'subject',
       payload->>'body',
       CASE status WHEN 'applied' THEN 'done' WHEN 'rejected' THEN 'skipped' ELSE status END,
       NULL, decided_at, created_at
FROM approval_items
WHERE kind = 'sequence_task' AND subject_id = %s AND payload->>'campaign_id' = %s
  AND (payload->>'sequence_step')::int < %s
ORDER BY step, created_at
"""
# The tier an approved message was written in, and the tier decided for its contact: the
# one its sequence was enrolled in (AGT-004's decision when step 1 was drafted), else the
# contact's own (``contacts.icp_tier``, AGT-004's latest).
MESSAGE_TIERS = """
SELECT a.payload->>'tier' AS written, COALESCE(e.tier, c.icp_tier) AS decided
FROM approval_items a
LEFT JOIN sequence_enrollments e
    ON e.campaign_id = a.payload->>'campaign_id' AND e.contact_id = a.subject_id
LEFT JOIN contacts c ON c.id = a.subject_id
WHERE a.id = %s AND a.kind = 'outbound_message'
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
    sequence_tier: str | None = None,
) -> None:
    """Enroll the contact at step 1 (a second enrollment in the campaign changes nothing):
    messages written in ``tier``, the steps of the library's ``angle`` x ``sequence_tier``
    sequence (None: ``tier``'s own)."""
    params = (org_id, campaign_id, contact_id, run_id, angle, tier, sequence_tier, steps)
    cur.execute(ENROLL, params)


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
    """Steps 1..before-1 of the contact's sequence in the campaign, in step order: each with
    its ``channel``, ``subject``, ``text`` (the email's body, a task's talking points),
    ``status`` (an email's delivery status; a task's ``done``, ``skipped`` or ``pending``),
    ``message_id`` (emails) and ``at`` (sent, or decided)."""
    params = (campaign_id, contact_id, before, contact_id, campaign_id, before)
    return fetch_all(cur, EARLIER_STEPS, params)


def message_tiers(cur: Any, approval_item_id: str) -> Row | None:
    """``written`` (the tier an outbound message was drafted in) and ``decided`` (its
    contact's; see ``MESSAGE_TIERS``); None for an item that is not an outbound message."""
    return fetch_one(cur, MESSAGE_TIERS, (approval_item_id,))


def stop_in(cur: Any, campaign_id: str, contact_id: str, reason: str) -> None:
    """Stop the contact's sequence in one campaign (a step a person rejected)."""
    cur.execute(STOP_IN, (reason, campaign_id, contact_id))


def timezone(cur: Any, contact_id: str) -> str | None:
    """The contact's IANA timezone, when known."""
    row = fetch_one(cur, TIMEZONE, (contact_id,))
    return row["timezone"] if row else None


def step_item(cur: Any, run_id: str, campaign_id: str, contact_id: str, step: int) -> Row | None:
    """The pending approval item drafted for this step, a message or a task (None: none
    pending)."""
    return fetch_one(cur, STEP_ITEM, (run_id, contact_id, campaign_id, step))
