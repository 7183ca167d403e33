"""ENT-012, the outbox: approved messages waiting to be sent, one row per approval item.

Queuing is idempotent (``ON CONFLICT (approval_item_id) DO NOTHING``): applying an approval
twice queues its message once. A message's delivery status moves forward only: ``bounced``
and ``complained`` are final, and a late ``delivered`` does not undo ``replied``. A campaign's
pause blocks, and its resume re-queues, its rows (``colony.store.campaigns``).
"""

from __future__ import annotations

from typing import Any, Literal

from colony.store.db import Row, fetch_one

QUEUE = """
INSERT INTO outbox (org_id, approval_item_id, campaign_id, contact_id, subject, body, status)
VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (approval_item_id) DO NOTHING
"""
MESSAGE = "SELECT campaign_id, status FROM outbox WHERE id = %s"
# Forward only: bounced and complained are final; replied is not undone by a late delivered.
SET_STATUS = """
UPDATE outbox SET status = %s, updated_at = now()
WHERE id = %s AND status NOT IN ('bounced', 'complained')
  AND NOT (status = 'replied' AND %s = 'delivered')
RETURNING campaign_id
"""
RATES = """
SELECT count(*) FILTER (WHERE o.status IN ('delivered', 'bounced', 'complained', 'replied'))
           AS judged,
       count(*) FILTER (WHERE o.status = 'bounced') AS bounced,
       count(*) FILTER (WHERE o.status = 'complained') AS complained
FROM outbox o JOIN campaigns c ON c.id = o.campaign_id
WHERE o.campaign_id = %s AND (c.resumed_at IS NULL OR o.updated_at >= c.resumed_at)
"""


def queue(
    cur: Any,
    org_id: str,
    item_id: str,
    *,
    contact_id: str | None,
    subject: str,
    body: str,
    campaign_id: str | None = None,
    status: Literal["queued", "blocked"] = "queued",
) -> None:
    """The approved message ``item_id`` enters the outbox (``blocked`` while its campaign is
    paused by the circuit breaker)."""
    cur.execute(QUEUE, (org_id, item_id, campaign_id, contact_id, subject, body, status))


def message(cur: Any, outbox_id: str) -> Row | None:
    """The message's campaign and status (None: not in this org)."""
    return fetch_one(cur, MESSAGE, (outbox_id,))


def set_status(cur: Any, outbox_id: str, status: str) -> bool:
    """Move the message to delivery status ``status``, if that is forward; False if it was
    not (the message keeps its status)."""
    return fetch_one(cur, SET_STATUS, (status, outbox_id, status)) is not None


def rates(cur: Any, campaign_id: str) -> Row | None:
    """The campaign's messages with an outcome (``judged``) and of those ``bounced`` and
    ``complained``, counting only messages updated since the campaign's last resume."""
    return fetch_one(cur, RATES, (campaign_id,))
