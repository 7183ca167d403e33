"""ENT-012, the outbox: approved messages waiting to be sent, one row per approval item.

Queuing is idempotent (``ON CONFLICT (org_id, approval_item_id) DO NOTHING``): applying an approval
twice queues its message once. A message's delivery status moves forward only: ``bounced``
and ``complained`` are final, and a late ``delivered`` does not undo ``replied``. A campaign's
pause blocks, and its resume re-queues, its rows (``colony.store.campaigns.campaigns``).
"""

from __future__ import annotations

from typing import Any, Literal

from colony.store.db import Row, fetch_all, fetch_one

QUEUE = """
INSERT INTO outbox
    (org_id, approval_item_id, campaign_id, contact_id, subject, body, status, sequence_step)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s)
ON CONFLICT (org_id, approval_item_id) DO NOTHING RETURNING id
"""
BY_ITEM = "SELECT id FROM outbox WHERE approval_item_id = %s"
SET_ADDRESS = "UPDATE outbox SET to_address = lower(%s) WHERE id = %s AND to_address IS NULL"
QUEUED_IN_CAMPAIGN = "SELECT id FROM outbox WHERE campaign_id = %s AND status = 'queued'"
MESSAGE = """
SELECT campaign_id, contact_id, status, approval_item_id, sender_address FROM outbox WHERE id = %s
"""
# Forward only: bounced and complained are final; replied is not undone by a late delivered.
SET_STATUS = """
UPDATE outbox SET status = %s, updated_at = now()
WHERE id = %s AND status NOT IN ('bounced', 'complained')
  AND NOT (status = 'replied' AND %s = 'delivered')
RETURNING campaign_id
"""
# Judged: every message that left, ``sent`` included. An SMTP relay reports no ``delivered``
# events, so without it a few replies beside the refusals of the send step read as a bounce
# storm (10 bounces in 1,000 sends plus one reply: 91%) and pause a healthy campaign.
RATES = """
SELECT count(*) FILTER (WHERE o.status IN ('sent', 'delivered', 'bounced', 'complained',
                                           'replied')) AS judged,
       count(*) FILTER (WHERE o.status = 'bounced') AS bounced,
       count(*) FILTER (WHERE o.status = 'complained') AS complained
FROM outbox o JOIN campaigns c ON c.id = o.campaign_id
WHERE o.campaign_id = %s AND (c.resumed_at IS NULL OR o.updated_at >= c.resumed_at)
"""


# Claim a message for sending: queued, or sending with a lapsed lease (a crashed attempt).
# The address is read now (the contact's, or the draft's own for a follow-up) and kept.
CLAIM_SEND = """
UPDATE outbox o SET status = 'sending', updated_at = now(),
    message_id = COALESCE(o.message_id, %s),
    send_lease_until = now() + make_interval(secs => %s),
    to_address = COALESCE(o.to_address, lower(%s), (SELECT lower(c.email) FROM contacts c
                                                   WHERE c.id = o.contact_id))
WHERE o.id = %s AND (o.status = 'queued' OR (o.status = 'sending' AND o.send_lease_until < now()))
RETURNING o.id, o.message_id, o.to_address, o.subject, o.body, o.campaign_id, o.contact_id,
          o.approval_item_id, o.sequence_step
"""
SEND_STATE = (
    "SELECT status, message_id, send_lease_until > now() AS leased FROM outbox WHERE id = %s"
)
FINISH_SEND = """
UPDATE outbox SET status = %s, send_error = %s, send_lease_until = NULL, updated_at = now(),
    sent_at = CASE WHEN %s = 'sent' THEN now() ELSE sent_at END
WHERE id = %s AND status = 'sending'
"""
ADDRESS = """
SELECT COALESCE(o.to_address, lower(c.email)) AS address
FROM outbox o LEFT JOIN contacts c ON c.id = o.contact_id WHERE o.id = %s
"""
# Messages to an address that became suppressed and that have not left yet.
STOP_TO = """
UPDATE outbox o SET status = 'suppressed', updated_at = now()
WHERE o.status IN ('queued', 'blocked')
  AND (lower(o.to_address) = %s OR o.contact_id IN (SELECT c.id FROM contacts c
                                                   WHERE lower(c.email) = %s))
RETURNING o.id
"""


# What this org sent today (UTC) and in the last hour to one recipient domain: the send
# step's caps (org settings). Messages counted once they are sent, whatever came after.
SENT_COUNTS = """
SELECT count(*) FILTER (WHERE sent_at >= date_trunc('day', now() AT TIME ZONE 'UTC')
                                          AT TIME ZONE 'UTC') AS today,
       count(*) FILTER (WHERE sent_at >= now() - interval '1 hour'
                          AND split_part(to_address, '@', 2) = %s) AS domain_hour
FROM outbox WHERE sent_at >= now() - interval '1 day'
"""
RELEASE = """
UPDATE outbox SET status = 'queued', send_lease_until = NULL, updated_at = now()
WHERE id = %s AND status = 'sending'
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
    to: str | None = None,
    sequence_step: int = 1,
) -> str:
    """The approved message ``item_id`` enters the outbox (``blocked`` while its campaign is
    paused by the circuit breaker); its outbox id (the existing row's, when it was already
    queued). ``to``: the address, when it is not the contact's."""
    params = (org_id, item_id, campaign_id, contact_id, subject, body, status, sequence_step)
    row = fetch_one(cur, QUEUE, params)
    if row is None:
        row = fetch_one(cur, BY_ITEM, (item_id,))
    assert row is not None  # inserted, or there already
    if to:
        cur.execute(SET_ADDRESS, (to, row["id"]))
    return str(row["id"])


def queued_in_campaign(cur: Any, campaign_id: str) -> list[str]:
    """The campaign's messages waiting to be sent (after a resume unblocked them)."""
    return [str(r["id"]) for r in fetch_all(cur, QUEUED_IN_CAMPAIGN, (campaign_id,))]


def message(cur: Any, outbox_id: str) -> Row | None:
    """The message's campaign, contact, status, approval item and the From address it left
    from (None: not in this org)."""
    return fetch_one(cur, MESSAGE, (outbox_id,))


def set_status(cur: Any, outbox_id: str, status: str) -> bool:
    """Move the message to delivery status ``status``, if that is forward; False if it was
    not (the message keeps its status)."""
    return fetch_one(cur, SET_STATUS, (status, outbox_id, status)) is not None


def rates(cur: Any, campaign_id: str) -> Row | None:
    """The campaign's messages that left (``judged``: sent, with an outcome or not) and of
    those ``bounced`` and ``complained``, counting only messages updated since the campaign's
    last resume."""
    return fetch_one(cur, RATES, (campaign_id,))


def claim_send(
    cur: Any,
    outbox_id: str,
    *,
    message_id: str | None,
    lease_seconds: int,
    to: str | None = None,
) -> Row | None:
    """Take the message for one send attempt (None: it is not queued, or another attempt
    holds it); its Message-ID is fixed by the first attempt and kept by every retry (None:
    fixed later in the claim's transaction, once its mailbox is known)."""
    return fetch_one(cur, CLAIM_SEND, (message_id, lease_seconds, to, outbox_id))


def send_state(cur: Any, outbox_id: str) -> Row | None:
    """``status``, ``message_id`` and whether a send attempt's lease is live (None: no such
    message in this org)."""
    return fetch_one(cur, SEND_STATE, (outbox_id,))


def finish_send(
    cur: Any,
    outbox_id: str,
    status: Literal["sent", "bounced", "suppressed"],
    error: str | None = None,
) -> None:
    cur.execute(FINISH_SEND, (status, error, status, outbox_id))


def address_of(cur: Any, outbox_id: str) -> str | None:
    """The message's recipient, lower-cased (None: no contact with an address)."""
    row = fetch_one(cur, ADDRESS, (outbox_id,))
    return None if row is None else row["address"]


def stop_to(cur: Any, address: str) -> list[str]:
    """Suppress every message to ``address`` that has not left; their ids."""
    return [r["id"] for r in fetch_all(cur, STOP_TO, (address, address))]


def sent_counts(cur: Any, domain: str) -> Row:
    """``today`` (messages sent since midnight UTC) and ``domain_hour`` (sent to ``domain``
    in the last hour), in this org."""
    row = fetch_one(cur, SENT_COUNTS, (domain,))
    assert row is not None  # an aggregate always returns its row
    return row


def release(cur: Any, outbox_id: str) -> None:
    """Give a claimed message back to the queue (deferred by a cap: it is sent later)."""
    cur.execute(RELEASE, (outbox_id,))
