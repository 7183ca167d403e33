"""The breaker per sender (``sender_pauses``, migration 0057): a sending mailbox or domain
paused for its bounce or complaint rate, until a person resumes it; and the campaigns the
breaker paused, as /overview lists them for a person to resume.

Every function takes a cursor from ``Database.transaction(org_id)``: RLS scopes it.
"""

from __future__ import annotations

from typing import Any

from colony.store.db import Row, fetch_all, fetch_one

# A trip pauses the sender, or re-pauses one a person resumed; a sender already paused keeps
# its first trip's figures (RETURNING nothing: this call did not pause it).
PAUSE = """
INSERT INTO sender_pauses AS p (org_id, scope, sender, status, reason, judged, bounce_rate,
                                complaint_rate, paused_at)
VALUES (%s, %s, lower(%s), 'paused', %s, %s, %s, %s, now())
ON CONFLICT (org_id, scope, sender) DO UPDATE SET status = 'paused', reason = EXCLUDED.reason,
    judged = EXCLUDED.judged, bounce_rate = EXCLUDED.bounce_rate,
    complaint_rate = EXCLUDED.complaint_rate, paused_at = now(), resumed_at = NULL,
    resumed_by = NULL
WHERE p.status = 'resumed'
RETURNING scope
"""
# The pause that holds a message from ``sender`` (its mailbox's, else its domain's).
PAUSED_FOR = """
SELECT scope, sender, reason FROM sender_pauses
WHERE status = 'paused' AND ((scope = 'mailbox' AND sender = lower(%s))
                          OR (scope = 'domain' AND sender = split_part(lower(%s), '@', 2)))
ORDER BY scope DESC LIMIT 1
"""
PAUSED = """
SELECT scope, sender, reason, judged, bounce_rate, complaint_rate, paused_at
FROM sender_pauses WHERE status = 'paused' ORDER BY paused_at, scope, sender
"""
RESUME = """
UPDATE sender_pauses SET status = 'resumed', resumed_at = now(), resumed_by = %s
WHERE scope = %s AND sender = lower(%s) AND status = 'paused'
RETURNING scope, sender, reason
"""
# Campaigns the breaker paused (a pause with a reason: the only pause there is today).
PAUSED_CAMPAIGNS = """
SELECT id, name, pause_reason, paused_at FROM campaigns
WHERE status = 'paused' ORDER BY paused_at NULLS LAST, id
"""
SET_CAMPAIGN_REASON = "UPDATE campaigns SET pause_reason = %s WHERE id = %s"
RESUMED_BY = "UPDATE campaigns SET resumed_by = %s WHERE id = %s"


def pause(
    cur: Any,
    org_id: str,
    scope: str,
    sender: str,
    reason: str,
    *,
    judged: int,
    bounce_rate: float,
    complaint_rate: float,
) -> bool:
    """Pause ``sender``; False if it was paused already (nothing changes)."""
    params = (org_id, scope, sender, reason[:300], judged, bounce_rate, complaint_rate)
    return fetch_one(cur, PAUSE, params) is not None


def paused_for(cur: Any, address: str) -> Row | None:
    """The pause holding mail from ``address`` (its mailbox's or its domain's), or None."""
    return fetch_one(cur, PAUSED_FOR, (address, address))


def paused(cur: Any) -> list[Row]:
    """Every paused sender of the org, the oldest pause first."""
    return fetch_all(cur, PAUSED)


def resume(cur: Any, scope: str, sender: str, actor: str) -> Row | None:
    """A person resumes a paused sender; None if it was not paused."""
    return fetch_one(cur, RESUME, (actor[:128], scope, sender))


def paused_campaigns(cur: Any) -> list[Row]:
    return fetch_all(cur, PAUSED_CAMPAIGNS)


def set_campaign_reason(cur: Any, campaign_id: str, reason: str) -> None:
    cur.execute(SET_CAMPAIGN_REASON, (reason[:300], campaign_id))


def campaign_resumed_by(cur: Any, campaign_id: str, actor: str) -> None:
    cur.execute(RESUMED_BY, (actor[:128], campaign_id))
