"""Replies to our messages (issue 18 item 5): matched to their outbox row, stored once per
inbound Message-ID. The body is the reply's own text (quoted history stripped): untrusted,
shown to people and models only as data."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from colony.store.db import Database, Row, fetch_all, fetch_one

# Which org sent the message with this exact Message-ID: seen through the ``message_lookup``
# policy (migration 0021) in a transaction with no org, so it reads that one row or none.
LOOKUP = "SELECT set_config('app.message_lookup', %s, true)"
ORG_OF_MESSAGE = "SELECT org_id FROM outbox WHERE message_id = %s"
# The message a reply answers, in the org's scope, with what the reply is stored against.
ANSWERED = """
SELECT o.id, o.contact_id, o.status, c.angle,
       (SELECT d.id FROM deals d WHERE d.contact_id = o.contact_id
        ORDER BY d.updated_at DESC LIMIT 1) AS deal_id
FROM outbox o LEFT JOIN campaigns c ON c.id = o.campaign_id
WHERE o.message_id = ANY(%s::text[])
ORDER BY array_position(%s::text[], o.message_id) LIMIT 1
"""
INSERT = """
INSERT INTO replies (org_id, outbox_id, contact_id, deal_id, message_id, angle, body,
                     sentiment, received_at)
VALUES (%s, %s, %s, %s, %s, %s, %s, %s, COALESCE(%s, now()))
ON CONFLICT (org_id, message_id) DO NOTHING RETURNING id
"""
RECENT = """
SELECT r.id, r.outbox_id, r.contact_id, r.deal_id, r.angle, r.sentiment, r.received_at,
       r.body, c.name,
       o.subject
FROM replies r JOIN outbox o ON o.id = r.outbox_id LEFT JOIN contacts c ON c.id = r.contact_id
WHERE r.received_at >= %s ORDER BY r.received_at DESC, r.id LIMIT %s
"""
COUNTS = """
SELECT count(*) AS replies,
       count(*) FILTER (WHERE sentiment = 'positive') AS positive,
       count(*) FILTER (WHERE sentiment = 'negative') AS negative
FROM replies WHERE received_at >= %s AND received_at < %s
"""


def org_of_message(db: Database, message_ids: list[str]) -> str | None:
    """The org that sent the first of ``message_ids`` we know (None: none is ours)."""
    for message_id in message_ids:
        with db.transaction(None) as cur:
            cur.execute(LOOKUP, (message_id,))
            row = fetch_one(cur, ORG_OF_MESSAGE, (message_id,))
        if row is not None:
            return str(row["org_id"])
    return None


def answered(cur: Any, message_ids: list[str]) -> Row | None:
    """The org's outbox message a reply answers: the first of ``message_ids`` (In-Reply-To,
    then References from the newest) that is one of ours."""
    return fetch_one(cur, ANSWERED, (message_ids, message_ids))


def store(
    cur: Any,
    org_id: str,
    message: Row,
    *,
    message_id: str,
    body: str,
    sentiment: str,
    received_at: datetime | None,
) -> str | None:
    """Store a reply to ``message`` (from ``answered``); None when it was stored before."""
    row = fetch_one(
        cur,
        INSERT,
        (
            org_id,
            message["id"],
            message["contact_id"],
            message["deal_id"],
            message_id,
            message["angle"],
            body,
            sentiment,
            received_at,
        ),
    )
    return str(row["id"]) if row else None


def recent(cur: Any, since: datetime, limit: int = 10) -> list[Row]:
    """The org's replies received since ``since``, newest first."""
    return fetch_all(cur, RECENT, (since, limit))


def counts(cur: Any, start: datetime, end: datetime) -> Row:
    row = fetch_one(cur, COUNTS, (start, end))
    assert row is not None
    return row
