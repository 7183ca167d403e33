"""What an engagement logged in the CRM is made of, read from where Colony keeps it: a sent
message (``outbox``), a reply (``replies``), a call's summary (``recordings``), each with
our contact and deal it belongs to (``colony.flows.crm.engagements``).

The text read here goes to the org's own CRM and nowhere else (never a log). Every function
takes a cursor from ``Database.transaction(org_id)``: another org's row is not found."""

from __future__ import annotations

from typing import Any

from colony.store.rows import Row, fetch_one

# The contact's deal: its latest one (a sent message and its reply name no deal of their own).
_DEAL_OF_CONTACT = """(SELECT d.id FROM deals d WHERE d.contact_id = {contact}
        ORDER BY d.updated_at DESC, d.id LIMIT 1)"""
EMAIL = f"""
SELECT o.subject, o.body, o.contact_id, o.sent_at AS at,
       {_DEAL_OF_CONTACT.format(contact="o.contact_id")} AS deal_id
FROM outbox o WHERE o.id = %s AND o.sent_at IS NOT NULL
"""
REPLY = f"""
SELECT 'Re: ' || o.subject AS subject, r.body, r.contact_id, r.received_at AS at,
       COALESCE(r.deal_id, {_DEAL_OF_CONTACT.format(contact="r.contact_id")}) AS deal_id
FROM replies r JOIN outbox o ON o.id = r.outbox_id WHERE r.id = %s
"""
CALL = """
SELECT r.title AS subject, r.summary AS body, d.contact_id, r.processed_at AS at, r.deal_id
FROM recordings r LEFT JOIN deals d ON d.id = r.deal_id
WHERE r.id = %s AND r.status = 'processed' AND r.summary IS NOT NULL
"""
_BY_KIND = {"email": EMAIL, "reply": REPLY, "call": CALL}


def engagement_source(cur: Any, kind: str, source_id: str) -> Row | None:
    """``subject, body, contact_id, deal_id, at`` of a sent message (``email``), a reply
    (``reply``) or a processed call (``call``); None: not there (yet), or not sent."""
    return fetch_one(cur, _BY_KIND[kind], (source_id,))
