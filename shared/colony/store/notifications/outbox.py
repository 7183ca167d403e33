"""What is sent (``notifications``) and which events each carries for whom
(``notification_items``): a Slack message per person and event, an email digest per person
and window (at most one open at a time), the brief per person and day; each claimed, sent
and marked once."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime
from typing import Any

from colony.store.rows import Row, fetch_all, fetch_one

ADD = """
INSERT INTO notifications (org_id, user_id, channel, kind, dedupe_key, due_at)
SELECT %s, u.user_id, %s, %s, u.key, %s
FROM unnest(%s::text[], %s::text[]) AS u(user_id, key)
ON CONFLICT DO NOTHING
"""
# A digest's earliest time: an hour after the person's last digest that left (or is leaving)
# was due or sent; one dropped (nothing left to tell) does not count.
OPEN_DIGESTS = """
INSERT INTO notifications (org_id, user_id, channel, kind, dedupe_key, due_at)
SELECT %s, u, 'email', 'digest', 'digest:' || u || ':' || extract(epoch FROM due)::bigint,
       due
FROM unnest(%s::text[]) AS u
CROSS JOIN LATERAL (
    SELECT greatest(%s::timestamptz,
                    (SELECT max(greatest(n.due_at, coalesce(n.sent_at, n.due_at)))
                     FROM notifications n
                     WHERE n.user_id = u AND n.channel = 'email' AND n.kind = 'digest'
                       AND n.status IN ('sending', 'sent'))
                    + interval '1 hour') AS due
) AS d
WHERE NOT EXISTS (SELECT 1 FROM notifications n WHERE n.user_id = u AND n.channel = 'email'
                  AND n.kind = 'digest' AND n.status = 'pending')
ON CONFLICT DO NOTHING
"""
# Locked so a claim cannot take the digest between this fan-out's items and its commit.
LOCK_DIGESTS = """
SELECT id, user_id FROM notifications
WHERE channel = 'email' AND kind = 'digest' AND status = 'pending' AND user_id = ANY(%s)
FOR UPDATE
"""
ITEMS = """
INSERT INTO notification_items (org_id, notification_id, event_id, user_id, kind)
SELECT n.org_id, n.id, %s, n.user_id, %s FROM notifications n
WHERE n.id = ANY(%s::bigint[])
ON CONFLICT DO NOTHING
"""
BY_KEYS = "SELECT id FROM notifications WHERE dedupe_key = ANY(%s)"
DUE = """
SELECT id FROM notifications
WHERE status IN ('pending', 'sending') AND due_at <= %s
  AND (lease_until IS NULL OR lease_until < %s)
ORDER BY due_at, id
LIMIT %s
"""
CLAIM = """
UPDATE notifications SET status = 'sending', lease_until = %s, attempts = attempts + 1
WHERE id = %s AND status IN ('pending', 'sending') AND due_at <= %s
  AND (lease_until IS NULL OR lease_until < %s)
RETURNING id, user_id, channel, kind, dedupe_key, due_at, attempts
"""
CONTENT = """
SELECT e.id, e.kind, e.subject, e.link, e.item_id, e.occurred_at, e.event_key,
       (e.contact_id IS NOT NULL
        AND NOT EXISTS (SELECT 1 FROM contacts c WHERE c.id = e.contact_id)) AS erased
FROM notification_items i JOIN notification_events e
  ON e.org_id = i.org_id AND e.id = i.event_id
WHERE i.notification_id = %s
ORDER BY e.id
"""
FINISH = """
UPDATE notifications SET status = %s, sent_at = %s, error = left(%s, 500), lease_until = NULL
WHERE id = %s
"""
RETRY = """
UPDATE notifications SET status = 'pending', due_at = %s, error = left(%s, 500),
       lease_until = NULL
WHERE id = %s
"""
HOLD_SLACK = """
UPDATE notifications SET status = 'held', error = left(%s, 500), lease_until = NULL
WHERE channel = 'slack' AND status IN ('pending', 'sending')
"""
RELEASE_SLACK = """
UPDATE notifications SET status = 'pending', due_at = %s, error = NULL
WHERE channel = 'slack' AND status = 'held'
"""
BUDGET_DELIVERED = """
UPDATE budget_alerts SET delivered_at = %s
WHERE id = ANY(%s::bigint[]) AND delivered_at IS NULL
"""
OPEN_DIGEST_DUE = """
SELECT due_at FROM notifications
WHERE user_id = %s AND channel = 'email' AND kind = 'digest' AND status = 'pending'
"""
NOTICES = """
SELECT id, channel, kind, status, error, due_at, sent_at, attempts FROM notifications
WHERE user_id = %s AND status IN ('failed', 'held')
ORDER BY id DESC LIMIT %s
"""


def add(
    cur: Any,
    org_id: str,
    channel: str,
    kind: str,
    keyed: Sequence[tuple[str, str]],
    due_at: datetime,
) -> list[int]:
    """One notification per (person, dedupe key) that is not there yet; the ids of all of
    them, new or not."""
    if not keyed:
        return []
    users, keys = [u for u, _ in keyed], [k for _, k in keyed]
    cur.execute(ADD, (org_id, channel, kind, due_at, users, keys))
    return [int(r["id"]) for r in fetch_all(cur, BY_KEYS, (keys,))]


def open_digests(cur: Any, org_id: str, users: Sequence[str], now: datetime) -> None:
    """Open an email digest for each of these people who has none open."""
    if users:
        cur.execute(OPEN_DIGESTS, (org_id, list(users), now))


def locked_digests(cur: Any, users: Sequence[str]) -> list[Row]:
    """The open digests of these people (``id, user_id``), locked until the transaction
    ends, so a claim cannot take one between an item's insert and its commit."""
    return fetch_all(cur, LOCK_DIGESTS, (list(users),))


def carry(cur: Any, event_id: int, kind: str, notification_ids: Sequence[int]) -> None:
    """Put the event in each of these notifications (once per person, kind and event)."""
    if notification_ids:
        cur.execute(ITEMS, (event_id, kind, list(notification_ids)))


def due(cur: Any, now: datetime, limit: int) -> list[int]:
    return [int(r["id"]) for r in fetch_all(cur, DUE, (now, now, limit))]


def claim(cur: Any, notification_id: int, now: datetime, lease_until: datetime) -> Row | None:
    """Take a due notification to send it (None: another sender has it, or it is done)."""
    return fetch_one(cur, CLAIM, (lease_until, notification_id, now, now))


def content(cur: Any, notification_id: int) -> list[Row]:
    """The events a notification carries, oldest first (``erased``: its prospect is gone)."""
    return fetch_all(cur, CONTENT, (notification_id,))


def finish(
    cur: Any, notification_id: int, status: str, now: datetime, error: str | None = None
) -> None:
    sent_at = now if status == "sent" else None
    cur.execute(FINISH, (status, sent_at, error, notification_id))


def retry(cur: Any, notification_id: int, at: datetime, error: str) -> None:
    cur.execute(RETRY, (at, error, notification_id))


def hold_slack(cur: Any, reason: str) -> None:
    """Hold the org's Slack notifications while Slack is paused."""
    cur.execute(HOLD_SLACK, (reason,))


def release_slack(cur: Any, now: datetime) -> None:
    cur.execute(RELEASE_SLACK, (now,))


def budget_delivered(cur: Any, alert_ids: Sequence[int], now: datetime) -> None:
    if alert_ids:
        cur.execute(BUDGET_DELIVERED, (now, list(alert_ids)))


def notices(cur: Any, user_id: str, limit: int = 20) -> list[Row]:
    """The person's notifications that could not reach them (failed, or held)."""
    return fetch_all(cur, NOTICES, (user_id, limit))


def open_digest_due(cur: Any, user_id: str) -> datetime | None:
    """When the person's open email digest is due (None: none is open)."""
    row = fetch_one(cur, OPEN_DIGEST_DUE, (user_id,))
    return None if row is None else row["due_at"]
