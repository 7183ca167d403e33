"""An org's notification settings (``notify_settings``): the local time its brief goes out
at and the next instant that is, its Slack workspace and bot token (by secret name), and
whether Slack is paused for it."""

from __future__ import annotations

from datetime import datetime, time
from typing import Any

from colony.store.rows import Row, fetch_all, fetch_one

COLUMNS = (
    "brief_at, brief_next_at, slack_team_id, slack_token_secret, slack_paused_at,"
    " slack_pause_reason"
)
GET = f"SELECT {COLUMNS} FROM notify_settings"
ENSURE = "INSERT INTO notify_settings (org_id) VALUES (%s) ON CONFLICT (org_id) DO NOTHING"
SET_BRIEF = """
UPDATE notify_settings SET brief_at = %s, brief_next_at = %s, updated_at = now()
"""
BRIEF_DUE = """
SELECT brief_at, brief_next_at FROM notify_settings WHERE brief_next_at <= %s FOR UPDATE
"""
NEXT_BRIEF = "UPDATE notify_settings SET brief_next_at = %s, updated_at = now()"
SET_SLACK = """
UPDATE notify_settings
SET slack_team_id = %s, slack_token_secret = %s, slack_paused_at = NULL,
    slack_pause_reason = NULL, updated_at = now()
"""
PAUSE_SLACK = """
UPDATE notify_settings SET slack_paused_at = %s, slack_pause_reason = %s, updated_at = now()
WHERE slack_paused_at IS NULL
"""
BRIEF_TAKERS = """
SELECT count(*) AS n FROM notification_prefs p
JOIN org_members m ON m.org_id = p.org_id AND m.user_id = p.user_id
WHERE p.kind = 'brief' AND p.channel <> 'off' AND m.status = 'active'
"""


def get(cur: Any) -> Row | None:
    return fetch_one(cur, GET)


def ensure(cur: Any, org_id: str) -> Row:
    """The org's settings, made with the defaults the first time."""
    cur.execute(ENSURE, (org_id,))
    row = fetch_one(cur, GET)
    assert row is not None
    return row


def set_brief(cur: Any, brief_at: time, next_at: datetime | None) -> None:
    cur.execute(SET_BRIEF, (brief_at, next_at))


def brief_due(cur: Any, now: datetime) -> Row | None:
    """The brief's settings when it is due by ``now``, locked (None: not due)."""
    return fetch_one(cur, BRIEF_DUE, (now,))


def set_next_brief(cur: Any, next_at: datetime | None) -> None:
    cur.execute(NEXT_BRIEF, (next_at,))


def brief_takers(cur: Any) -> int:
    """How many active people asked for the brief."""
    return int(fetch_all(cur, BRIEF_TAKERS)[0]["n"])


def set_slack(cur: Any, team_id: str | None, token_secret: str | None) -> None:
    """Connect (or, with Nones, disconnect) the org's Slack; un-pauses it."""
    cur.execute(SET_SLACK, (team_id, token_secret))


def pause_slack(cur: Any, now: datetime, reason: str) -> bool:
    """Pause Slack for the org (True: this call paused it)."""
    cur.execute(PAUSE_SLACK, (now, reason[:300]))
    return bool(cur.rowcount)
