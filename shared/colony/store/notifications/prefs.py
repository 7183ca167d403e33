"""A person's notification choices (``notification_prefs``) and their Slack identity
(``slack_users``), and the org's active people with both, as a fan-out reads them."""

from __future__ import annotations

from typing import Any

from colony.store.rows import Row, fetch_all, fetch_one

OF_PERSON = "SELECT kind, channel FROM notification_prefs WHERE user_id = %s ORDER BY kind"
SET = """
INSERT INTO notification_prefs (org_id, user_id, kind, channel) VALUES (%s, %s, %s, %s)
ON CONFLICT (org_id, user_id, kind) DO UPDATE
SET channel = EXCLUDED.channel, updated_at = now()
"""
SLACK_OF = "SELECT slack_user_id, webhook_secret FROM slack_users WHERE user_id = %s"
SET_SLACK = """
INSERT INTO slack_users (org_id, user_id, slack_user_id, webhook_secret)
VALUES (%s, %s, %s, %s)
ON CONFLICT (org_id, user_id) DO UPDATE
SET slack_user_id = EXCLUDED.slack_user_id, webhook_secret = EXCLUDED.webhook_secret,
    updated_at = now()
"""
CLEAR_SLACK = "DELETE FROM slack_users WHERE user_id = %s"
SLACK_HOLDER = "SELECT user_id FROM slack_users WHERE slack_user_id = %s"
BY_SLACK_USER = """
SELECT m.user_id, m.status FROM slack_users s
JOIN org_members m ON m.org_id = s.org_id AND m.user_id = s.user_id
WHERE s.slack_user_id = %s
"""
# Every active person of the org, with their choice for every kind they made one for.
PEOPLE = """
SELECT m.user_id, m.role, m.email, s.slack_user_id, s.webhook_secret,
       coalesce((SELECT jsonb_object_agg(p.kind, p.channel) FROM notification_prefs p
                 WHERE p.org_id = m.org_id AND p.user_id = m.user_id), '{}'::jsonb) AS prefs
FROM org_members m
LEFT JOIN slack_users s ON s.org_id = m.org_id AND s.user_id = m.user_id
WHERE m.status = 'active'
ORDER BY m.user_id
"""


def of_person(cur: Any, user_id: str) -> dict[str, str]:
    """The kinds the person chose a channel for (the others take their default)."""
    return {r["kind"]: r["channel"] for r in fetch_all(cur, OF_PERSON, (user_id,))}


def set_channel(cur: Any, org_id: str, user_id: str, kind: str, channel: str) -> None:
    cur.execute(SET, (org_id, user_id, kind, channel))


def slack_of(cur: Any, user_id: str) -> Row | None:
    """The person's Slack user id and webhook secret name (None: they set neither)."""
    return fetch_one(cur, SLACK_OF, (user_id,))


def set_slack(
    cur: Any, org_id: str, user_id: str, slack_user_id: str | None, webhook_secret: str | None
) -> None:
    if slack_user_id is None and webhook_secret is None:
        cur.execute(CLEAR_SLACK, (user_id,))
    else:
        cur.execute(SET_SLACK, (org_id, user_id, slack_user_id, webhook_secret))


def slack_holder(cur: Any, slack_user_id: str) -> str | None:
    """The person of the org who set ``slack_user_id`` as theirs (None: nobody)."""
    row = fetch_one(cur, SLACK_HOLDER, (slack_user_id,))
    return None if row is None else str(row["user_id"])


def by_slack_user(cur: Any, slack_user_id: str) -> Row | None:
    """The org member who mapped ``slack_user_id`` to themselves, with their status."""
    return fetch_one(cur, BY_SLACK_USER, (slack_user_id,))


def people(cur: Any) -> list[Row]:
    """The org's active people with their address, Slack identity and choices."""
    return fetch_all(cur, PEOPLE)
