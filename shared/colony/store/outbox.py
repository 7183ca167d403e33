"""ENT-012, the outbox: approved messages waiting to be sent, one row per approval item.

Queuing is idempotent (``ON CONFLICT (approval_item_id) DO NOTHING``): applying an approval
twice queues its message once.
"""

from __future__ import annotations

from typing import Any, Literal

QUEUE = """
INSERT INTO outbox (org_id, approval_item_id, campaign_id, contact_id, subject, body, status)
VALUES (%s, %s, %s, %s, %s, %s, %s) ON CONFLICT (approval_item_id) DO NOTHING
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
